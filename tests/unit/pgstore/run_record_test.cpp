// RunRecord (oe_runs, the scope's lock) and PgCache against a real PostgreSQL server.
#include "oe/pgstore/run_record.hpp"

#include <gtest/gtest.h>

#include "oe/cache/cache_store.hpp"
#include "oe/pgstore/pg_cache.hpp"
#include "support/pg_test_db.hpp"

namespace oe::pgstore {
namespace {

RunInfo infoOf(const std::string& run_id, const std::string& scope) {
  RunInfo info;
  info.run_id = run_id;
  info.scope = scope;
  info.experience = "/x/experience.yaml";
  info.chain_id = run_id;
  return info;
}

TEST(RunRecordTest, ASecondCoordinatorOnTheSameScopeIsRefusedUntilTheFirstEnds) {
  test::PgTestDb db;
  auto first = RunRecord::begin(db.url(), infoOf("run-a", "exp"), std::chrono::seconds(5));
  ASSERT_TRUE(first) << first.error().message;
  auto second = RunRecord::begin(db.url(), infoOf("run-b", "exp"), std::chrono::seconds(5));
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message.find("in use by run run-a"), std::string::npos)
      << second.error().message;
  EXPECT_NE(second.error().message.find(coordinatorName()), std::string::npos);
  // Another scope is another lock.
  auto other = RunRecord::begin(db.url(), infoOf("run-c", "other"), std::chrono::seconds(5));
  ASSERT_TRUE(other) << other.error().message;
  ASSERT_TRUE((*first)->finish("success"));
  first->reset();  // its session ends: the lock goes
  auto third = RunRecord::begin(db.url(), infoOf("run-d", "exp"), std::chrono::seconds(5));
  ASSERT_TRUE(third) << third.error().message;
}

TEST(RunRecordTest, RunsAreFoundByPrefixAndListedPerScope) {
  test::PgTestDb db;
  {
    auto a = RunRecord::begin(db.url(), infoOf("aaaa-1", "exp"), std::chrono::seconds(5));
    ASSERT_TRUE(a);
    ASSERT_TRUE((*a)->setPin(Json{{"experience", "sha"}}));
    ASSERT_TRUE((*a)->finish("partial"));
  }
  {
    auto b = RunRecord::begin(db.url(), infoOf("aaab-2", "exp"), std::chrono::seconds(5));
    ASSERT_TRUE(b);
  }
  auto conn = pg::Connection::open(db.url());
  ASSERT_TRUE(conn);
  auto found = findRun(**conn, "aaaa", "");
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->run_id, "aaaa-1");
  EXPECT_EQ(found->status, "partial");
  EXPECT_FALSE(found->finished_at.empty());
  ASSERT_TRUE(found->pin);
  EXPECT_EQ((*found->pin)["experience"], "sha");
  auto ambiguous = findRun(**conn, "aaa", "");
  ASSERT_FALSE(ambiguous);
  EXPECT_NE(ambiguous.error().message.find("several"), std::string::npos);
  EXPECT_FALSE(findRun(**conn, "zzz", ""));
  ASSERT_TRUE((*conn)->exec(
      "INSERT INTO oe_events (run_id, line) VALUES ('aaaa-1', '{\"type\":\"node.finished\"}'), "
      "('aaaa-1', '{\"type\":\"node.finished\",\"cached\":true}'), "
      "('aaaa-1', '{\"type\":\"node.failed\"}')"));
  auto runs = listRuns(**conn, "exp");
  ASSERT_TRUE(runs) << runs.error().message;
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].run_id, "aaaa-1");
  EXPECT_EQ((*runs)[0].ran, 1u);
  EXPECT_EQ((*runs)[0].cached, 1u);
  EXPECT_EQ((*runs)[0].failed, 1u);
  EXPECT_EQ((*runs)[1].status, "running");  // its coordinator never finished
  EXPECT_TRUE(listRuns(**conn, "nothing")->empty());
}

TEST(PgCacheTest, EntriesAreSharedByEveryStoreOnTheDatabase) {
  test::PgTestDb db;
  auto open = [&db] {
    auto remote = PgCache::open(db.url(), std::chrono::seconds(5));
    EXPECT_TRUE(remote) << (remote ? "" : remote.error().message);
    return cache::CacheStore::open(std::move(remote).value());
  };
  auto one = open();
  auto two = open();
  EXPECT_EQ(one->get("k1"), std::nullopt);
  ASSERT_TRUE(one->put("k1", "node", "run-1", Json{{"out", "it's \"quoted\""}}));
  EXPECT_EQ(two->get("k1"), (Json{{"out", "it's \"quoted\""}}));
  ASSERT_TRUE(two->put("k1", "node", "run-2", Json{{"out", 2}}));
  EXPECT_EQ(one->get("k1"), (Json{{"out", 2}}));
  ASSERT_TRUE(one->touch({"k1", "missing", "with \"quote\""}, "run-3"));
  auto conn = pg::Connection::open(db.url());
  auto rows = (*conn)->exec("SELECT last_used_run FROM oe_cache WHERE key = 'k1'");
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->text(0, 0), "run-3");
  EXPECT_FALSE(one->prune({}, true));  // not supported yet: said, not silently nothing
}

}  // namespace
}  // namespace oe::pgstore

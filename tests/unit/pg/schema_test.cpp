// oe's migrations against a real PostgreSQL server.
#include "oe/pg/schema.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "support/pg_test_db.hpp"

namespace oe::pg {
namespace {

TEST(PgSchemaTest, MigratesAnEmptyDatabaseOnceAndThenIsUpToDate) {
  test::PgTestDb db;
  auto conn = Connection::open(db.url());
  ASSERT_TRUE(conn);
  auto first = migrate(**conn);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->from, 0);
  EXPECT_EQ(first->to, latestVersion());
  auto second = migrate(**conn);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->from, latestVersion());
  EXPECT_EQ(second->to, latestVersion());
  auto tables = (*conn)->exec(
      "SELECT count(*) FROM information_schema.tables WHERE table_name IN "
      "('oe_runs','oe_events','oe_state_snapshot','oe_state_history','oe_cache','oe_attempts')");
  ASSERT_TRUE(tables);
  EXPECT_EQ(tables->int64(0, 0), 6);
}

// A database an earlier oe created (version 1: before attempts carried usage and events) is
// brought up to date, keeping its rows.
TEST(PgSchemaTest, ADatabaseAtVersionOneIsMigratedForwardKeepingItsRows) {
  test::PgTestDb db;
  auto conn = Connection::open(db.url());
  ASSERT_TRUE(conn);
  ASSERT_TRUE(migrate(**conn, 1));
  ASSERT_TRUE((*conn)->exec(
      "INSERT INTO oe_attempts (run_id, node_id, call_key, attempt, kind, config, request) "
      "VALUES ('r', 'n', 'n', 1, 'tool', '{}', '{}')"));
  auto report = migrate(**conn);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->from, 1);
  EXPECT_EQ(report->to, latestVersion());
  auto row = (*conn)->exec("SELECT node_id, llm_usage IS NULL FROM oe_attempts");
  ASSERT_TRUE(row) << row.error().message;
  ASSERT_EQ(row->size(), 1);
  EXPECT_EQ(row->text(0, 0), "n");
  EXPECT_TRUE(row->boolean(0, 1));
}

// A store an oe at schema version 2 wrote: its rows stay, and each state write it recorded is
// claimed (oe_state_writes), so that the same write sent again lands no second time.
TEST(PgSchemaTest, AVersionTwoStoreMigratesForwardKeepingItsRowsAndClaimingItsWrites) {
  test::PgTestDb db;
  auto conn = Connection::open(db.url());
  ASSERT_TRUE(conn);
  auto at_two = migrate(**conn, 2);
  ASSERT_TRUE(at_two) << at_two.error().message;
  EXPECT_EQ(at_two->to, 2);
  ASSERT_TRUE((*conn)->exec(
      "INSERT INTO oe_state_history (scope, field, value_old, value_new, node_id, run_id, ts, "
      "write_id) VALUES ('exp', 'items', NULL, '[1]', 'a', 'r1', 't', 'r1:1'), "
      "('exp', 'last', NULL, '\"a\"', 'a', 'r1', 't', 'r1:1'), "
      "('exp', 'items', '{}', '[2]', 'b', 'r1', 't', 'r1:2'), "
      "('other', 'items', NULL, '[9]', 'a', 'r2', 't', 'r2:1')"));
  ASSERT_TRUE((*conn)->exec(
      "INSERT INTO oe_state_snapshot (scope, field, value, updated_at, node_id, run_id) VALUES "
      "('exp', 'items', '[1,2]', 't', 'b', 'r1')"));
  ASSERT_TRUE((*conn)->exec(
      "INSERT INTO oe_events (run_id, line) VALUES ('r1', '{\"type\":\"run.started\"}'), "
      "('r1', '{\"type\":\"run.finished\"}')"));
  ASSERT_TRUE((*conn)->exec(
      "INSERT INTO oe_attempts (run_id, node_id, call_key, attempt, kind, config, request, "
      "status, submit_seq) VALUES ('r1', 'n', 'n', 1, 'tool', '{}', '{}', 'cancelled', 1)"));
  auto report = migrate(**conn);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->from, 2);
  EXPECT_EQ(report->to, latestVersion());
  auto kept = (*conn)->exec(
      "SELECT (SELECT count(*) FROM oe_state_history), (SELECT value FROM oe_state_snapshot), "
      "(SELECT count(*) FROM oe_events WHERE seq IS NULL), (SELECT count(*) FROM oe_attempts)");
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->int64(0, 0), 4);
  EXPECT_EQ(kept->text(0, 1), "[1,2]");
  EXPECT_EQ(kept->int64(0, 2), 2);
  EXPECT_EQ(kept->int64(0, 3), 1);
  auto claims = (*conn)->exec(
      "SELECT scope || '/' || write_id || '/' || run_id FROM oe_state_writes ORDER BY 1");
  ASSERT_TRUE(claims) << claims.error().message;
  ASSERT_EQ(claims->size(), 3);
  EXPECT_EQ(claims->text(0, 0), "exp/r1:1/r1");
  EXPECT_EQ(claims->text(1, 0), "exp/r1:2/r1");
  EXPECT_EQ(claims->text(2, 0), "other/r2:1/r2");
  // The write r1:2 sent again claims nothing.
  auto again = (*conn)->exec(
      "INSERT INTO oe_state_writes (scope, write_id, run_id) VALUES ('exp', 'r1:2', 'r1') "
      "ON CONFLICT DO NOTHING");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->affected(), 0);
}

TEST(PgSchemaTest, TwoProcessesMigratingAtOnceBothSucceed) {
  test::PgTestDb db;
  Result<MigrateReport> a = makeError("not run");
  Result<MigrateReport> b = makeError("not run");
  std::thread other([&] {
    auto conn = Connection::open(db.url());
    if (conn) {
      b = migrate(**conn);
    }
  });
  auto conn = Connection::open(db.url());
  ASSERT_TRUE(conn);
  a = migrate(**conn);
  other.join();
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(a->to, latestVersion());
  EXPECT_EQ(b->to, latestVersion());
  EXPECT_TRUE(a->from == 0 || b->from == 0);  // exactly one of them did the work
  EXPECT_FALSE(a->from == 0 && b->from == 0);
}

TEST(PgSchemaTest, ADatabaseNewerThanThisOeIsRefusedWithWhatToDo) {
  test::PgTestDb db;
  auto conn = Connection::open(db.url());
  ASSERT_TRUE(conn);
  ASSERT_TRUE(migrate(**conn));
  ASSERT_TRUE((*conn)->exec("INSERT INTO oe_schema_migrations (version, description) "
                            "VALUES (9999, 'from the future')"));
  auto refused = migrate(**conn);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("upgrade oe"), std::string::npos);
}

}  // namespace
}  // namespace oe::pg

// EventSink and readRunEvents against a real PostgreSQL server.
#include "oe/pgstore/event_sink.hpp"

#include "oe/pg/schema.hpp"

#include <gtest/gtest.h>

#include "support/pg_test_db.hpp"
#include "support/temp_dir.hpp"

namespace oe::pgstore {
namespace {

TEST(EventSinkTest, CloseWritesEveryLineOfTheLogInOrder) {
  test::PgTestDb db;
  test::TempDir tmp;
  auto log = events::EventLog::open(tmp.path() / "r1.jsonl", "r1");
  ASSERT_TRUE(log);
  auto sink = EventSink::open(db.url(), "r1", std::chrono::seconds(10));
  ASSERT_TRUE(sink) << sink.error().message;
  (*sink)->attach(**log);
  (*log)->runStarted(Json{{"who", "x"}});
  for (int i = 0; i < 2500; ++i) {  // more than one batch
    (*log)->nodeStarted("n" + std::to_string(i), std::nullopt);
  }
  (*log)->runFinished("success");
  EXPECT_EQ((*sink)->close(), std::nullopt);
  auto conn = pg::Connection::open(db.url());
  ASSERT_TRUE(conn);
  auto read = readRunEvents(**conn, "r1");
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_EQ(read->events.size(), 2502u);
  EXPECT_EQ(read->events.front()["type"], "run.started");
  EXPECT_EQ(read->events.front()["args"]["who"], "x");
  EXPECT_EQ(read->events[1]["node_id"], "n0");
  EXPECT_EQ(read->events[2500]["node_id"], "n2499");
  EXPECT_EQ(read->events.back()["type"], "run.finished");
  // The same lines as the local file.
  auto local = events::readEventLog(tmp.path() / "r1.jsonl");
  ASSERT_TRUE(local);
  EXPECT_EQ(local->events, read->events);
}

TEST(EventSinkTest, ReadingAnUnknownRunGivesNoEventsAndATornLineAWarning) {
  test::PgTestDb db;
  auto conn = pg::Connection::open(db.url());
  ASSERT_TRUE(conn);
  ASSERT_TRUE(pg::migrate(**conn));
  auto none = readRunEvents(**conn, "nope");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->events.empty());
  ASSERT_TRUE(
      (*conn)->exec("INSERT INTO oe_events (run_id, line) VALUES ('r', '{\"type\":\"a\"}'), "
                    "('r', '{\"type\":')"));
  auto torn = readRunEvents(**conn, "r");
  ASSERT_TRUE(torn);
  EXPECT_EQ(torn->events.size(), 1u);
  ASSERT_EQ(torn->warnings.size(), 1u);
  EXPECT_NE(torn->warnings[0].find("torn"), std::string::npos);
}

}  // namespace
}  // namespace oe::pgstore

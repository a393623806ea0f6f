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
  ASSERT_TRUE(migrate(**conn));
  ASSERT_TRUE((*conn)->exec("ALTER TABLE oe_attempts DROP COLUMN llm_usage, DROP COLUMN events, "
                            "DROP COLUMN submit_seq"));
  ASSERT_TRUE((*conn)->exec("DELETE FROM oe_schema_migrations WHERE version > 1"));
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

// The libpq layer against a real PostgreSQL server (tests/support/pg_test_db.hpp).
#include "oe/pg/connection.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "support/pg_test_db.hpp"
#include "support/temp_dir.hpp"

namespace oe::pg {
namespace {

TEST(PgUrlTest, TellsPostgresUrlsFromPaths) {
  EXPECT_TRUE(isUrl("postgresql://u@h/db"));
  EXPECT_TRUE(isUrl("postgres:///db?host=/tmp"));
  EXPECT_FALSE(isUrl("state.sqlite"));
  EXPECT_FALSE(isUrl("/var/postgresql://x"));
}

TEST(PgUrlTest, RedactsThePassword) {
  EXPECT_EQ(redact("postgresql://oe:s3cret@db.example/oe"), "postgresql://oe:***@db.example/oe");
  EXPECT_EQ(redact("postgresql://oe@db.example/oe"), "postgresql://oe@db.example/oe");
  EXPECT_EQ(redact("postgresql:///oe?host=/tmp"), "postgresql:///oe?host=/tmp");
}

TEST(PgArrayTest, QuotesEveryElementAndWritesNullsBare) {
  EXPECT_EQ(arrayLiteral(std::vector<std::string>{}), "{}");
  EXPECT_EQ(arrayLiteral(std::vector<std::string>{"a", "b\"c", "d\\e", ""}),
            R"({"a","b\"c","d\\e",""})");
  EXPECT_EQ(arrayLiteral(std::vector<std::optional<std::string_view>>{"x", std::nullopt}),
            R"({"x",NULL})");
}

TEST(PgConnectionTest, AnArrayLiteralRoundTripsThroughTheServer) {
  test::PgTestDb db;
  auto conn = Connection::open(db.url());
  ASSERT_TRUE(conn);
  const std::vector<std::optional<std::string_view>> items = {"a,b", "q\"uote", "{}", std::nullopt};
  auto rows = (*conn)->exec("SELECT x FROM unnest($1::text[]) WITH ORDINALITY AS t(x, n) ORDER BY n",
                            {arrayLiteral(items)});
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 4);
  EXPECT_EQ(rows->text(0, 0), "a,b");
  EXPECT_EQ(rows->text(1, 0), "q\"uote");
  EXPECT_EQ(rows->text(2, 0), "{}");
  EXPECT_TRUE(rows->isNull(3, 0));
}

TEST(PgConnectionTest, BindsParametersAndReadsRows) {
  test::PgTestDb db;
  auto conn = Connection::open(db.url());
  ASSERT_TRUE(conn) << conn.error().message;
  auto rows = (*conn)->exec("SELECT $1::text, $2::bigint, $3::float8, $4::text IS NULL, $5::bool",
                            {"it's", int64_t{1} << 40, 0.25, nullptr, true});
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 1);
  EXPECT_EQ(rows->text(0, 0), "it's");
  EXPECT_EQ(rows->int64(0, 1), int64_t{1} << 40);
  EXPECT_DOUBLE_EQ(rows->real(0, 2), 0.25);
  EXPECT_TRUE(rows->boolean(0, 3));
  EXPECT_TRUE(rows->boolean(0, 4));
}

TEST(PgConnectionTest, AStatementErrorIsAValueAndNotAConnectionLoss) {
  test::PgTestDb db;
  auto conn = Connection::open(db.url());
  ASSERT_TRUE(conn);
  auto bad = (*conn)->exec("SELECT * FROM no_such_table");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("no_such_table"), std::string::npos);
  EXPECT_EQ((*conn)->lastFailure(), Failure::kStatement);
  EXPECT_TRUE((*conn)->healthy());
}

TEST(PgConnectionTest, AFailedTransactionLeavesNothing) {
  test::PgTestDb db;
  auto conn = Connection::open(db.url());
  ASSERT_TRUE(conn);
  ASSERT_TRUE((*conn)->exec("CREATE TABLE t (v int PRIMARY KEY)"));
  auto failed = (*conn)->transaction([](Connection& tx) -> Result<void> {
    if (auto ok = tx.exec("INSERT INTO t VALUES (1)"); !ok) {
      return ok.error();
    }
    auto dup = tx.exec("INSERT INTO t VALUES (1)");
    if (!dup) {
      return dup.error();
    }
    return {};
  });
  EXPECT_FALSE(failed);
  auto count = (*conn)->exec("SELECT count(*) FROM t");
  ASSERT_TRUE(count) << count.error().message;
  EXPECT_EQ(count->int64(0, 0), 0);
}

TEST(PgConnectionTest, ATransactionOverALostConnectionReconnectsAndRunsAgain) {
  test::PgTestDb db;
  auto conn = Connection::open(db.url(), {.retry_for = std::chrono::seconds(20)});
  ASSERT_TRUE(conn);
  ASSERT_TRUE((*conn)->exec("CREATE TABLE t (v int)"));
  auto admin = Connection::open(db.url());
  ASSERT_TRUE(admin);
  int runs = 0;
  auto done = (*conn)->transaction([&](Connection& tx) -> Result<void> {
    if (++runs == 1) {
      // The server ends this session, as a restart or a failover would.
      (void)(*admin)->exec("SELECT pg_terminate_backend($1)", {tx.backendPid()});
    }
    auto inserted = tx.exec("INSERT INTO t VALUES (7)");
    if (!inserted) {
      return inserted.error();
    }
    return {};
  });
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(runs, 2);
  auto rows = (*conn)->exec("SELECT count(*) FROM t");
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->int64(0, 0), 1);
}

TEST(PgConnectionTest, ReconnectsAcrossAServerRestart) {
  test::TempDir dir;
  auto cluster = test::PgCluster::privateIn(dir / "pg");
  auto conn = Connection::open(cluster->url(), {.retry_for = std::chrono::seconds(60)});
  ASSERT_TRUE(conn) << conn.error().message;
  ASSERT_TRUE((*conn)->listen("oe_wake"));
  cluster->stopNow();
  EXPECT_FALSE((*conn)->exec("SELECT 1"));
  EXPECT_EQ((*conn)->lastFailure(), Failure::kConnection);
  std::thread restart([&cluster] { cluster->start(); });
  auto again = (*conn)->reconnect();  // retries with backoff while the server comes back
  restart.join();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE((*conn)->exec("SELECT 1"));
  // The LISTEN survived the reconnect.
  auto other = Connection::open(cluster->url());
  ASSERT_TRUE(other);
  ASSERT_TRUE((*other)->exec("NOTIFY oe_wake"));
  EXPECT_TRUE((*conn)->waitForNotify(std::chrono::seconds(30)));
}

TEST(PgConnectionTest, AnUnreachableServerIsAClearError) {
  test::TempDir dir;
  auto conn = Connection::open("postgresql:///x?host=" + dir.path().string() + "&port=5432");
  ASSERT_FALSE(conn);
  EXPECT_NE(conn.error().message.find("cannot connect to PostgreSQL"), std::string::npos);
  EXPECT_NE(conn.error().message.find("is the server running"), std::string::npos);
}

}  // namespace
}  // namespace oe::pg

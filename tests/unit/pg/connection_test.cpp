// The libpq layer against a real PostgreSQL server (tests/support/pg_test_db.hpp).
#include "oe/pg/connection.hpp"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "support/pg_test_db.hpp"
#include "support/tcp_proxy.hpp"
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
  auto conn = Connection::open(db.url(), retrying(std::chrono::seconds(20)));
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
  auto conn = Connection::open(cluster->url(), retrying(std::chrono::seconds(60)));
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

// A network that swallows the server's answers: the statement ends at its reply timeout as a
// lost connection (not never), and the next session works.
TEST(PgConnectionTest, AReplyThatNeverComesEndsTheStatementAtItsReplyTimeout) {
  test::PgTestDb db;
  auto proxy = test::TcpProxy::toPostgres(db.cluster().dir());
  ConnectOptions options = retrying(std::chrono::seconds(10));
  options.reply_timeout = std::chrono::milliseconds(300);
  auto conn = Connection::open(proxy->pgUrl(db.name()), options);
  ASSERT_TRUE(conn) << conn.error().message;
  proxy->swallowReplies(true);
  auto lost = (*conn)->exec("SELECT 1");
  ASSERT_FALSE(lost);
  EXPECT_EQ((*conn)->lastFailure(), Failure::kConnection);
  EXPECT_NE(lost.error().message.find("no reply from PostgreSQL"), std::string::npos)
      << lost.error().message;
  EXPECT_FALSE((*conn)->healthy());
  proxy->swallowReplies(false);
  ASSERT_TRUE((*conn)->reconnect());
  EXPECT_TRUE((*conn)->exec("SELECT 1"));
}

// A connection told to wait for the database for ever, while the server stays away: it says so
// every report period, and interrupting its Patience ends the wait at once.
TEST(PgConnectionTest, AnEndlessReconnectSaysSoAndEndsWhenInterrupted) {
  test::PgTestDb db;
  auto proxy = test::TcpProxy::toPostgres(db.cluster().dir());
  std::mutex mutex;
  std::condition_variable said_cv;
  std::vector<std::string> said;
  auto patience = std::make_shared<Patience>(
      [&](const std::string& message) {
        std::lock_guard lock(mutex);
        said.push_back(message);
        said_cv.notify_all();
      },
      std::chrono::milliseconds(100));
  ConnectOptions options = retrying(std::chrono::seconds(10), "oe test");
  options.reconnect_for = kForever;
  options.patience = patience;
  auto conn = Connection::open(proxy->pgUrl(db.name()), options);
  ASSERT_TRUE(conn) << conn.error().message;
  proxy->refuse(true);
  proxy->cutAll();
  Result<void> back;
  std::thread waiter([&] { back = (*conn)->reconnect(); });
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(said_cv.wait_for(lock, std::chrono::seconds(60), [&] { return said.size() >= 2; }));
    EXPECT_NE(said[0].find("oe test: the database has been out of reach for"), std::string::npos)
        << said[0];
  }
  patience->interrupt();
  waiter.join();
  ASSERT_FALSE(back);
  EXPECT_NE(back.error().message.find("stopping"), std::string::npos) << back.error().message;
  // Interrupted, a statement on a lost connection fails at once rather than reconnect.
  EXPECT_FALSE((*conn)->exec("SELECT 1"));
  EXPECT_FALSE((*conn)->reconnect());
}

// A statement waiting for an answer that will not come, when the process is stopping: it waits
// the short grace, not the reply timeout (none here).
TEST(PgConnectionTest, AnInterruptEndsAStatementsWaitAfterAShortGrace) {
  test::PgTestDb db;
  auto proxy = test::TcpProxy::toPostgres(db.cluster().dir());
  auto patience = std::make_shared<Patience>();
  ConnectOptions options = retrying(std::chrono::seconds(10));
  options.patience = patience;
  auto conn = Connection::open(proxy->pgUrl(db.name()), options);
  ASSERT_TRUE(conn) << conn.error().message;
  proxy->swallowReplies(true);
  const int64_t seen = proxy->counters().statements;
  Result<Rows> answer = makeError("not run");
  std::thread client([&] { answer = (*conn)->exec("SELECT 1"); });
  ASSERT_TRUE(proxy->waitUntil(
      [seen](const test::TcpProxy::Counters& c) { return c.statements > seen; }));
  patience->interrupt();
  client.join();
  ASSERT_FALSE(answer);
  EXPECT_EQ((*conn)->lastFailure(), Failure::kConnection);
  EXPECT_NE(answer.error().message.find("while stopping"), std::string::npos)
      << answer.error().message;
}

// A coordinator whose host vanishes must not keep the scope's lock for the OS's two hours: the
// client's TCP socket has keepalives (and a user timeout), and the session asks the server for
// its side of them and to check for a client that went away during a statement.
TEST(PgConnectionTest, SessionsAskForKeepalivesOnBothSides) {
  test::PgTestDb db;
  auto proxy = test::TcpProxy::toPostgres(db.cluster().dir());
  auto conn = Connection::open(proxy->pgUrl(db.name()));
  ASSERT_TRUE(conn) << conn.error().message;
  const int fd = (*conn)->socket();
  ASSERT_GE(fd, 0);
  int value = 0;
  socklen_t size = sizeof value;
  ASSERT_EQ(getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &value, &size), 0);
  EXPECT_EQ(value, 1);
  ASSERT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &value, &size), 0);
  EXPECT_EQ(value, 15);
  ASSERT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &value, &size), 0);
  EXPECT_EQ(value, 45000);
  // The server side: the keepalive settings read 0 on the cluster's Unix socket (the proxy
  // talks to it through one), the client check does not.
  auto check = (*conn)->exec("SHOW client_connection_check_interval");
  ASSERT_TRUE(check) << check.error().message;
  EXPECT_EQ(check->text(0, 0), "2s");
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

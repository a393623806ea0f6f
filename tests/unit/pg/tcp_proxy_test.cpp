// The fault-injecting TCP proxy of the tests (tests/support/tcp_proxy.hpp), in front of the
// real test cluster and of a small echo server: what it forwards, and each way it breaks the
// path, observed from both ends.
#include "support/tcp_proxy.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "oe/pg/connection.hpp"
#include "support/pg_test_db.hpp"

namespace oe::test {
namespace {

using std::chrono::milliseconds;

// Echoes what one connection sends until it closes (for Protocol::kRaw).
class EchoServer {
 public:
  EchoServer() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (::bind(listener_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_, 4) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
      throw std::runtime_error("echo server: cannot listen");
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] {
      const int fd = ::accept(listener_, nullptr, nullptr);
      char buffer[4096];
      for (ssize_t n; fd >= 0 && (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) {
        (void)::send(fd, buffer, static_cast<size_t>(n), MSG_NOSIGNAL);
      }
      if (fd >= 0) {
        ::close(fd);
      }
    });
  }
  ~EchoServer() {
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }
  [[nodiscard]] uint16_t port() const { return port_; }

 private:
  int listener_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

int connectTo(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string receive(int fd, size_t size) {
  std::string out;
  char buffer[256];
  while (out.size() < size) {
    const ssize_t n = ::recv(fd, buffer, std::min(sizeof buffer, size - out.size()), 0);
    if (n <= 0) {
      break;
    }
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

class TcpProxyTest : public ::testing::Test {
 protected:
  std::unique_ptr<pg::Connection> viaProxy() {
    auto conn = pg::Connection::open(proxy_->pgUrl(db_.name()));
    EXPECT_TRUE(conn) << (conn ? "" : conn.error().message);
    return conn ? std::move(conn).value() : nullptr;
  }
  // The test's own connection, straight to the server's socket.
  pg::Connection& direct() {
    if (!direct_) {
      auto conn = pg::Connection::open(db_.url());
      EXPECT_TRUE(conn) << (conn ? "" : conn.error().message);
      direct_ = std::move(conn).value();
    }
    return *direct_;
  }
  int64_t rowsOfT() {
    auto rows = direct().exec("SELECT count(*) FROM t");
    EXPECT_TRUE(rows) << (rows ? "" : rows.error().message);
    return rows ? rows->int64(0, 0) : -1;
  }

  PgTestDb db_;
  std::unique_ptr<TcpProxy> proxy_ = TcpProxy::toPostgres(db_.cluster().dir());
  std::unique_ptr<pg::Connection> direct_;
};

TEST_F(TcpProxyTest, ForwardsPostgresConnectionsAndCountsThem) {
  {
    auto conn = viaProxy();
    ASSERT_TRUE(conn);
    auto rows = conn->exec("SELECT $1::text || 'b'", {"a"});
    ASSERT_TRUE(rows) << rows.error().message;
    EXPECT_EQ(rows->text(0, 0), "ab");
    const auto seen = proxy_->counters();
    EXPECT_EQ(seen.accepted, 1);
    EXPECT_EQ(seen.open, 1);
    EXPECT_GE(seen.statements, 1);
    EXPECT_GT(seen.to_server, 0);
    EXPECT_GT(seen.to_client, 0);
    EXPECT_EQ(seen.cut, 0);
  }
  // The client's goodbye closes the server's side too.
  EXPECT_TRUE(proxy_->waitUntil([](const TcpProxy::Counters& c) { return c.open == 0; }));
}

TEST_F(TcpProxyTest, CutAllDropsEveryConnectionAndTheNextOnesGetThrough) {
  auto one = viaProxy();
  auto two = viaProxy();
  ASSERT_TRUE(one && two);
  proxy_->cutAll();
  EXPECT_EQ(proxy_->counters().cut, 2);
  EXPECT_EQ(proxy_->counters().open, 0);
  for (pg::Connection* conn : {one.get(), two.get()}) {
    EXPECT_FALSE(conn->exec("SELECT 1"));
    EXPECT_EQ(conn->lastFailure(), pg::Failure::kConnection);
    ASSERT_TRUE(conn->reconnect());
    EXPECT_TRUE(conn->exec("SELECT 1"));
  }
  EXPECT_EQ(proxy_->counters().accepted, 4);
}

TEST_F(TcpProxyTest, RefusedConnectionsFailUntilTheProxyTakesThemAgain) {
  proxy_->refuse(true);
  auto refused = pg::Connection::open(proxy_->pgUrl(db_.name()));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("cannot connect"), std::string::npos);
  EXPECT_GE(proxy_->counters().refused, 1);
  EXPECT_EQ(proxy_->counters().accepted, 0);
  proxy_->refuse(false);
  EXPECT_TRUE(viaProxy());
}

TEST_F(TcpProxyTest, ACutStatementNeverRuns) {
  ASSERT_TRUE(direct().exec("CREATE TABLE t (v int)"));
  auto conn = viaProxy();
  ASSERT_TRUE(conn);
  proxy_->on("INSERT INTO t", TcpProxy::Action::kCut);
  EXPECT_FALSE(conn->exec("INSERT INTO t VALUES ($1)", {1}));
  EXPECT_EQ(conn->lastFailure(), pg::Failure::kConnection);
  EXPECT_EQ(proxy_->counters().fired, 1);
  EXPECT_EQ(rowsOfT(), 0);
  // Spent: the statement goes through on a new connection.
  ASSERT_TRUE(conn->reconnect());
  ASSERT_TRUE(conn->exec("INSERT INTO t VALUES ($1)", {1}));
  EXPECT_EQ(rowsOfT(), 1);
}

TEST_F(TcpProxyTest, ALostReplyBelongsToAStatementThatRan) {
  ASSERT_TRUE(direct().exec("CREATE TABLE t (v int)"));
  auto conn = viaProxy();
  ASSERT_TRUE(conn);
  proxy_->on("INSERT INTO t", TcpProxy::Action::kLoseReply);
  ASSERT_TRUE(conn->exec("SELECT 1"));  // not matched
  EXPECT_FALSE(conn->exec("INSERT INTO t VALUES (1)"));
  EXPECT_EQ(conn->lastFailure(), pg::Failure::kConnection);
  EXPECT_EQ(rowsOfT(), 1);  // committed: the client only lost the answer
  const auto seen = proxy_->counters();
  EXPECT_EQ(seen.fired, 1);
  EXPECT_EQ(seen.cut, 1);
  EXPECT_GT(seen.dropped, 0);
}

TEST_F(TcpProxyTest, AnOrphanedStatementRunsOnWhileItsClientIsCutOff) {
  ASSERT_TRUE(direct().exec("CREATE TABLE t (v int)"));
  ASSERT_TRUE(direct().exec("BEGIN"));
  ASSERT_TRUE(direct().exec("LOCK TABLE t IN ACCESS EXCLUSIVE MODE"));
  auto conn = viaProxy();
  ASSERT_TRUE(conn);
  proxy_->on("INSERT INTO t", TcpProxy::Action::kOrphan);
  EXPECT_FALSE(conn->exec("INSERT INTO t VALUES (1)"));  // the client is cut off at once
  EXPECT_EQ(conn->lastFailure(), pg::Failure::kConnection);
  EXPECT_TRUE(proxy_->waitUntil([](const TcpProxy::Counters& c) { return c.orphans == 1; }));
  // The server still runs it, waiting for the test's lock.
  auto observer = pg::Connection::open(db_.url());
  ASSERT_TRUE(observer);
  bool waiting = false;
  for (int i = 0; i < 6000 && !waiting; ++i) {
    auto rows = (*observer)->exec(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
        "wait_event_type = 'Lock' AND query LIKE 'INSERT INTO t%'");
    ASSERT_TRUE(rows) << rows.error().message;
    waiting = rows->int64(0, 0) == 1;
    if (!waiting) {
      std::this_thread::sleep_for(milliseconds(10));  // polling the server's view, not a wait
    }
  }
  ASSERT_TRUE(waiting);
  ASSERT_TRUE(direct().exec("COMMIT"));
  int64_t rows = 0;
  for (int i = 0; i < 6000 && rows == 0; ++i) {
    rows = rowsOfT();
    if (rows == 0) {
      std::this_thread::sleep_for(milliseconds(10));
    }
  }
  EXPECT_EQ(rows, 1);  // it ran to its end
  proxy_->cutAll();
  EXPECT_EQ(proxy_->counters().orphans, 0);
}

TEST_F(TcpProxyTest, HeldTrafficWaitsUntilReleased) {
  ASSERT_TRUE(direct().exec("CREATE TABLE t (v int)"));
  auto conn = viaProxy();
  ASSERT_TRUE(conn);
  const int64_t before = proxy_->counters().statements;
  proxy_->hold(true);
  Result<pg::Rows> inserted = makeError("not run");
  std::thread client([&] { inserted = conn->exec("INSERT INTO t VALUES (1)"); });
  // The proxy has read the statement and holds it: the server has not seen it.
  ASSERT_TRUE(proxy_->waitUntil(
      [before](const TcpProxy::Counters& c) { return c.statements > before; }));
  EXPECT_EQ(rowsOfT(), 0);
  proxy_->hold(false);
  client.join();
  ASSERT_TRUE(inserted) << inserted.error().message;
  EXPECT_EQ(rowsOfT(), 1);
}

TEST(TcpProxyRawTest, SwallowedRepliesNeverReachTheClient) {
  EchoServer echo;
  auto proxy = TcpProxy::toTcp("127.0.0.1", echo.port());
  const int fd = connectTo(proxy->port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::send(fd, "one", 3, MSG_NOSIGNAL), 3);
  EXPECT_EQ(receive(fd, 3), "one");
  proxy->swallowReplies(true);
  ASSERT_EQ(::send(fd, "two", 3, MSG_NOSIGNAL), 3);
  ASSERT_TRUE(proxy->waitUntil([](const TcpProxy::Counters& c) { return c.dropped == 3; }));
  proxy->swallowReplies(false);
  proxy->delay(milliseconds(5));  // later chunks wait a little; they still all arrive
  ASSERT_EQ(::send(fd, "three", 5, MSG_NOSIGNAL), 5);
  EXPECT_EQ(receive(fd, 5), "three");
  // Counted once the proxy's send returned, which may be after the client read the bytes.
  EXPECT_TRUE(proxy->waitUntil([](const TcpProxy::Counters& c) { return c.to_client == 8; }))
      << proxy->counters().to_client;
  ::close(fd);
}

TEST(TcpProxyRawTest, AnUnreachableTargetIsARefusal) {
  int port = 0;
  {
    EchoServer gone;  // a port nobody listens on once it is destroyed
    port = gone.port();
    const int fd = connectTo(static_cast<uint16_t>(port));
    ::close(fd);
  }
  auto proxy = TcpProxy::toTcp("127.0.0.1", static_cast<uint16_t>(port));
  const int fd = connectTo(proxy->port());
  ASSERT_GE(fd, 0);
  char byte = 0;
  EXPECT_LE(::recv(fd, &byte, 1, 0), 0);  // closed at once
  EXPECT_TRUE(proxy->waitUntil([](const TcpProxy::Counters& c) { return c.refused == 1; }));
  ::close(fd);
}

// Controls from several threads while clients come and go: every call returns, and the proxy
// forwards afterwards.
TEST_F(TcpProxyTest, ControlsFromManyThreadsWhileClientsComeAndGo) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&] {
      while (!stop) {
        auto conn = pg::Connection::open(proxy_->pgUrl(db_.name()));
        if (conn) {
          (void)(*conn)->exec("SELECT 1");
        }
      }
    });
  }
  for (int i = 0; i < 20; ++i) {
    proxy_->cutAll();
    proxy_->hold(i % 2 == 0);
    proxy_->swallowReplies(false);
    (void)proxy_->counters();
  }
  proxy_->hold(false);
  stop = true;
  proxy_->cutAll();  // a client waiting on a held or cut reply gives up
  for (auto& client : clients) {
    client.join();
  }
  auto conn = viaProxy();
  ASSERT_TRUE(conn);
  EXPECT_TRUE(conn->exec("SELECT 1"));
}

}  // namespace
}  // namespace oe::test

// A TCP proxy for fault tests (docs/testing.md, "Faults between oe and PostgreSQL"): it listens
// on 127.0.0.1 (an ephemeral port) and forwards each connection to a Unix socket (the test
// clusters have no TCP port) or a TCP address, and lets a test break the path on purpose: cut
// every connection, drop the server's replies, hold or delay the traffic, refuse new connections
// as a server that is away would, or act on one statement the client sends (cut it in half, run
// it and lose its reply, or run it on while the client is cut off).
//
// One thread owns every socket (poll); the controls run on that thread and return once they
// took effect, so a test never sleeps to let the proxy catch up. Buffers are bounded: a side
// that does not drain stops being read. Statements are recognised in the PostgreSQL protocol
// (the client's Query and Parse messages); Protocol::kRaw forwards bytes without looking.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace oe::test {

class TcpProxy {
 public:
  enum class Protocol { kPostgres, kRaw };

  // What a trigger does to the statement it matched (and to its connection).
  enum class Action {
    // Forwards the first half of the statement's message and closes both sides: the server
    // reads a torn message and never runs it; the client loses its connection mid-statement.
    kCut,
    // Forwards the statement, reads and drops what the server answers up to its ReadyForQuery,
    // then closes both sides: the statement ran to its end (committed, outside a transaction)
    // and the client never hears of it.
    kLoseReply,
    // kLoseReply, then refuse(true): the server committed and went away; it is back when the
    // test says so (refuse(false)).
    kLoseReplyAndRefuse,
    // Forwards the statement (up to its Sync), then closes the client's side only: the server's
    // session runs on, its replies read and dropped, until cutAll() or the proxy ends (a client
    // whose network went away while its statement was running).
    kOrphan,
  };

  struct Counters {
    int64_t accepted = 0;     // connections forwarded to the target
    int64_t refused = 0;      // connections closed at once: refuse(), or the target unreachable
    int64_t open = 0;         // connections whose client side is open now
    int64_t orphans = 0;      // server sides kept open by kOrphan, now
    int64_t cut = 0;          // connections closed by cutAll() or a trigger
    int64_t fired = 0;        // trigger firings, all triggers together
    int64_t statements = 0;   // Query/Parse messages seen from clients
    int64_t to_server = 0;    // bytes forwarded
    int64_t to_client = 0;
    int64_t dropped = 0;      // server bytes read and not forwarded (swallowed, lost, orphaned)
    int64_t waiting = 0;      // bytes read and not forwarded yet, either way (held, delayed)
  };

  // Forwards to the Unix socket `path` (a PostgreSQL cluster's: <dir>/.s.PGSQL.5432).
  static std::unique_ptr<TcpProxy> toUnixSocket(std::filesystem::path path,
                                                Protocol protocol = Protocol::kPostgres);
  // Forwards to host:port (an IPv4 address).
  static std::unique_ptr<TcpProxy> toTcp(std::string host, uint16_t port,
                                         Protocol protocol = Protocol::kRaw);
  // The socket of the test cluster in `cluster_dir` (pg_test_db.hpp's PgCluster::dir()).
  static std::unique_ptr<TcpProxy> toPostgres(const std::filesystem::path& cluster_dir,
                                              int port = 5432);

  ~TcpProxy();  // closes every connection and stops the thread
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  [[nodiscard]] uint16_t port() const { return port_; }
  // postgresql://<user>@127.0.0.1:<port>/<database>, for a PostgreSQL target.
  [[nodiscard]] std::string pgUrl(const std::string& database,
                                  const std::string& user = "postgres") const;

  // The controls: any thread; each returns once the proxy applied it.
  // Closes every open connection, both sides, now (orphaned server sessions too).
  void cutAll();
  // While on, what servers send is read and dropped (every connection, new ones too).
  void swallowReplies(bool on);
  // While on, nothing is forwarded either way; what arrives waits (bounded) until hold(false).
  void hold(bool on);
  // Each chunk read from now on is forwarded no sooner than `delay` after it arrived (0: none).
  void delay(std::chrono::milliseconds delay);
  // While on, a new connection is accepted and closed at once, as by a server that is away.
  void refuse(bool on);
  // Arms a trigger: after letting `skip` matching statements through, the next `times` client
  // statements whose SQL contains `needle` get `action`. Triggers are tried in the order armed;
  // a spent one is dropped.
  void on(std::string needle, Action action, int times = 1, int skip = 0);
  void disarm();  // drops every trigger

  [[nodiscard]] Counters counters() const;
  // Waits until `ready(counters())` holds; false when `timeout` passed first.
  bool waitUntil(const std::function<bool(const Counters&)>& ready,
                 std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;
  // Waits until triggers fired `n` times in all.
  bool waitFired(int64_t n, std::chrono::milliseconds timeout = std::chrono::seconds(60)) const {
    return waitUntil([n](const Counters& c) { return c.fired >= n; }, timeout);
  }

 private:
  struct Target {
    std::filesystem::path unix_path;
    std::string host;
    uint16_t port = 0;
  };
  class Loop;

  TcpProxy(Target target, Protocol protocol);
  // Runs `command` on the proxy's thread and waits for it.
  void apply(std::function<void(Loop&)> command);

  Target target_;
  Protocol protocol_;
  int listener_ = -1;
  uint16_t port_ = 0;
  int wake_[2] = {-1, -1};  // a pipe: the controls wake the thread with a byte

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::vector<std::function<void(Loop&)>> commands_;
  uint64_t queued_ = 0;   // commands handed in
  uint64_t applied_ = 0;  // commands the thread ran
  bool stopping_ = false;
  Counters counters_;

  std::unique_ptr<Loop> loop_;
  std::thread thread_;  // last: started when the rest is in place
};

}  // namespace oe::test

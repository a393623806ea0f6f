// A thin RAII layer over libpq for oe's PostgreSQL store and work queue (docs/scale-out.md): one
// connection, text parameters, results by row and column, transactions, LISTEN/NOTIFY, and a
// reconnect with backoff when the server goes away (a restart, a failover).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/result.hpp"

struct pg_conn;
struct pg_result;

namespace oe::pg {

// `--store`, OE_STORE and runtime.store take a PostgreSQL URL (postgresql://… or postgres://…);
// anything else is a SQLite path.
[[nodiscard]] bool isUrl(std::string_view store);

// The URL with its password replaced by "***", for messages and logs.
[[nodiscard]] std::string redact(std::string_view url);

// One bound parameter, sent as text (PostgreSQL casts it to the column's type). nullopt = NULL.
class Param {
 public:
  Param(std::nullptr_t) {}                                              // NOLINT: NULL
  Param(std::string_view text) : text_(std::string(text)) {}            // NOLINT
  Param(const std::string& text) : text_(text) {}                       // NOLINT
  Param(const char* text) : text_(std::string(text)) {}                 // NOLINT
  Param(std::optional<std::string> text) : text_(std::move(text)) {}    // NOLINT
  Param(int64_t value) : text_(std::to_string(value)) {}                // NOLINT
  Param(int value) : text_(std::to_string(value)) {}                    // NOLINT
  Param(double value);                                                  // NOLINT
  Param(bool value) : text_(value ? "true" : "false") {}                // NOLINT
  [[nodiscard]] const char* data() const { return text_ ? text_->c_str() : nullptr; }

 private:
  std::optional<std::string> text_;
};

// A query's result (owned PGresult). Columns are read as text, as libpq returns them.
class Rows {
 public:
  Rows() = default;
  explicit Rows(pg_result* result);
  Rows(Rows&&) noexcept;
  Rows& operator=(Rows&&) noexcept;
  ~Rows();

  [[nodiscard]] int size() const;
  [[nodiscard]] bool empty() const { return size() == 0; }
  [[nodiscard]] bool isNull(int row, int column) const;
  // The text of a value ("" for NULL); valid while this Rows lives.
  [[nodiscard]] std::string_view text(int row, int column) const;
  [[nodiscard]] std::optional<std::string> optText(int row, int column) const;
  [[nodiscard]] int64_t int64(int row, int column) const;  // 0 for NULL or not a number
  [[nodiscard]] double real(int row, int column) const;
  [[nodiscard]] bool boolean(int row, int column) const;  // PostgreSQL's 't'
  // Rows changed by an INSERT/UPDATE/DELETE.
  [[nodiscard]] int64_t affected() const;

 private:
  pg_result* result_ = nullptr;
};

// Why a statement failed: a lost connection is worth a reconnect and a retry of the whole
// transaction; anything else (a constraint, bad SQL) is not.
enum class Failure { kNone, kConnection, kSerialization, kStatement };

// A retry budget without an end: the connection waits for the database until its Patience is
// interrupted.
inline constexpr std::chrono::milliseconds kForever = std::chrono::milliseconds::max();

// How the connections of one process (or one component of it) wait for a database that went
// away, and how that wait ends: shared through their ConnectOptions. While they cannot reach the
// server they say so, at most once per `report_every` for all of them together; interrupt()
// (SIGINT, SIGTERM, a stop) ends their waiting at once. Thread-safe.
class Patience {
 public:
  // How much longer a statement already sent waits for its reply once interrupted: a healthy
  // server answers well within it, so a stop does not lose a write in flight; a server that went
  // away does not hold the stop up.
  static constexpr std::chrono::milliseconds kStopGrace{2000};

  // `say` gets each message (default: stderr, prefixed "oe: ").
  explicit Patience(std::function<void(const std::string&)> say = {},
                    std::chrono::milliseconds report_every = std::chrono::seconds(30));
  ~Patience();
  Patience(const Patience&) = delete;
  Patience& operator=(const Patience&) = delete;

  // From now on the connections sharing it stop waiting for the database: a lost connection is
  // not opened again, a connection attempt ends, and a statement waiting for its reply waits at
  // most kStopGrace more. It stays interrupted.
  void interrupt();
  [[nodiscard]] bool interrupted() const { return interrupted_.load(); }
  // Readable once interrupted (for poll).
  [[nodiscard]] int fd() const { return fd_; }
  // Sleeps `duration`, less when interrupted meanwhile; true when interrupted.
  bool sleepFor(std::chrono::milliseconds duration) const;
  // A connection that has not reached the server for `down_for` (the first failure that many
  // milliseconds ago) reports it: said once `report_every` has passed, then every report_every.
  void outage(std::chrono::milliseconds down_for, const std::string& who, const std::string& why);

 private:
  std::function<void(const std::string&)> say_;
  std::chrono::milliseconds report_every_;
  std::atomic<bool> interrupted_{false};
  int fd_ = -1;  // an eventfd, written once by interrupt()
  std::mutex mutex_;
  std::chrono::steady_clock::time_point last_said_{};
};

struct ConnectOptions {
  // How long open() keeps trying (with backoff from 50 ms to 2 s) while the server refuses or is
  // not there. Zero: one try; kForever: until `patience` is interrupted.
  std::chrono::milliseconds retry_for{0};
  // application_name, seen in pg_stat_activity: which oe process holds a connection.
  std::string application_name = "oe";
  // How long reconnect() and transaction() keep trying after the connection was lost; unset:
  // retry_for. A component that was connected once usually waits for as long as it takes
  // (kForever), where a first connection to a URL that may be wrong gives up (retry_for).
  std::optional<std::chrono::milliseconds> reconnect_for{};
  // Shared by the connections that stop together, and says when they cannot reach the server.
  std::shared_ptr<Patience> patience{};
  // The longest a statement waits for its reply before the connection counts as lost
  // (Failure::kConnection: a network that swallows the answers, a server that froze). Zero:
  // no limit (statements that may legitimately run long: migrations, oe gc).
  std::chrono::milliseconds reply_timeout{0};
};

// The options of a connection that tries for `retry_for` to connect and reconnect, and says
// who it is in pg_stat_activity; the others keep their defaults.
[[nodiscard]] inline ConnectOptions retrying(std::chrono::milliseconds retry_for,
                                             std::string application_name = "oe") {
  ConnectOptions options;
  options.retry_for = retry_for;
  options.application_name = std::move(application_name);
  return options;
}

// The reply_timeout of the connections a run and a worker keep: no statement of theirs runs
// anywhere near it, and a reply lost on the way is given up in bounded time.
inline constexpr std::chrono::milliseconds kReplyTimeout{120'000};

// One connection, used by one thread at a time (libpq connections are not thread-safe); each
// component that needs the database from its own thread opens its own. Every method that talks
// to the server returns an error naming the statement's purpose when it fails, and lastFailure()
// says whether the connection was lost (then reconnect() and retry).
class Connection {
 public:
  static Result<std::unique_ptr<Connection>> open(std::string url, ConnectOptions options = {});

  Connection(pg_conn* conn, std::string url, ConnectOptions options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // One statement with parameters ($1, $2, ...), in the current transaction if one is open.
  Result<Rows> exec(std::string_view sql, std::initializer_list<Param> params = {});
  Result<Rows> exec(std::string_view sql, const std::vector<Param>& params);
  // Several statements without parameters (a migration), as one simple query.
  Result<void> script(std::string_view sql);

  // Runs `work` between BEGIN and COMMIT; a failure of `work` or of the COMMIT rolls back. A lost
  // connection or a serialization failure (40001, 40P01) reconnects and runs `work` again from the
  // start, until the ConnectOptions::retry_for deadline: `work` must not have effects outside the
  // transaction that a second run would repeat. A connection lost during the COMMIT leaves its
  // outcome unknown, and the retry may find the first run's effects in place: guard the work with
  // a check it can see (a fencing token, a primary key). Never hold a transaction open across a node's
  // work: `work` is a few statements.
  Result<void> transaction(const std::function<Result<void>(Connection&)>& work);

  // LISTEN on `channel` (an identifier oe chooses; quoted here).
  Result<void> listen(std::string_view channel);
  // Waits up to `timeout` for a notification on a listened channel; true when one came (all the
  // ones pending are consumed). False on timeout, a lost connection (see lastFailure()), an
  // interrupted Patience, or `wake` (an fd another thread makes readable, -1: none) readable.
  bool waitForNotify(std::chrono::milliseconds timeout, int wake = -1);

  // Re-opens the connection (with backoff for ConnectOptions::reconnect_for) after a failure;
  // LISTENs again. Refused at once when its Patience was interrupted.
  Result<void> reconnect();
  // The same with its own budget (zero: one try), for a caller that looks again later.
  Result<void> reconnect(std::chrono::milliseconds budget);
  [[nodiscard]] bool healthy() const;
  [[nodiscard]] Failure lastFailure() const { return last_failure_; }
  [[nodiscard]] const std::string& url() const { return url_; }
  [[nodiscard]] const ConnectOptions& options() const { return options_; }
  // Changes the reply timeout of the statements sent from now on (0: none).
  void setReplyTimeout(std::chrono::milliseconds timeout) { options_.reply_timeout = timeout; }
  // The server's process id for this session (pg_terminate_backend in the tests).
  [[nodiscard]] int backendPid() const;
  // The connection's socket, -1 when lost (the tests check its keepalives).
  [[nodiscard]] int socket() const;

 private:
  Result<Rows> run(std::string_view sql, const std::vector<Param>* params);
  // Waits until the socket is ready for `events`; false (the connection dropped, the failure
  // set) at `deadline`, or kStopGrace after an interrupt.
  bool waitSocket(short events, std::chrono::steady_clock::time_point deadline,
                  std::optional<std::chrono::steady_clock::time_point>& grace);
  // Drops a connection whose state is unknown (a reply never came): the next statement fails
  // as lost, and reconnect() opens a new one.
  void drop(std::string why);
  // Session settings sent after each connect (keepalives, notices).
  void prepareSession();

  pg_conn* conn_;
  std::string url_;
  ConnectOptions options_;
  std::vector<std::string> channels_;
  Failure last_failure_ = Failure::kNone;
  std::string dropped_;  // why the connection was dropped, for the next statement's error
};

// A text[] parameter's literal ({"a","b",NULL}), for statements that take many rows at once
// (unnest of parallel arrays): one round trip instead of one per row.
[[nodiscard]] std::string arrayLiteral(const std::vector<std::optional<std::string_view>>& items);
[[nodiscard]] std::string arrayLiteral(const std::vector<std::string>& items);

// SQL string literal / identifier quoting for the few statements that cannot take parameters
// (LISTEN, CREATE DATABASE).
[[nodiscard]] std::string quoteIdentifier(std::string_view name);

}  // namespace oe::pg

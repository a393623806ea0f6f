// A thin RAII layer over libpq for oe's PostgreSQL store and work queue (docs/scale-out.md): one
// connection, text parameters, results by row and column, transactions, LISTEN/NOTIFY, and a
// reconnect with backoff when the server goes away (a restart, a failover).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
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

struct ConnectOptions {
  // How long open() and reconnect() keep trying (with backoff from 50 ms to 2 s) while the server
  // refuses or is not there. Zero: one try.
  std::chrono::milliseconds retry_for{0};
  // application_name, seen in pg_stat_activity: which oe process holds a connection.
  std::string application_name = "oe";
};

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
  // ones pending are consumed). False on timeout or a lost connection (see lastFailure()).
  bool waitForNotify(std::chrono::milliseconds timeout);

  // Re-opens the connection (with backoff until retry_for) after a failure; LISTENs again.
  Result<void> reconnect();
  [[nodiscard]] bool healthy() const;
  [[nodiscard]] Failure lastFailure() const { return last_failure_; }
  [[nodiscard]] const std::string& url() const { return url_; }
  // The server's process id for this session (pg_terminate_backend in the tests).
  [[nodiscard]] int backendPid() const;

 private:
  Result<Rows> run(std::string_view sql, const std::vector<Param>* params);

  pg_conn* conn_;
  std::string url_;
  ConnectOptions options_;
  std::vector<std::string> channels_;
  Failure last_failure_ = Failure::kNone;
};

// A text[] parameter's literal ({"a","b",NULL}), for statements that take many rows at once
// (unnest of parallel arrays): one round trip instead of one per row.
[[nodiscard]] std::string arrayLiteral(const std::vector<std::optional<std::string_view>>& items);
[[nodiscard]] std::string arrayLiteral(const std::vector<std::string>& items);

// SQL string literal / identifier quoting for the few statements that cannot take parameters
// (LISTEN, CREATE DATABASE).
[[nodiscard]] std::string quoteIdentifier(std::string_view name);

}  // namespace oe::pg

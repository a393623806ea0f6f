// libpq behind oe's types (connection.hpp).
#include "oe/pg/connection.hpp"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace oe::pg {

namespace {

using Clock = std::chrono::steady_clock;

std::string trimmed(const char* text) {
  std::string out = text != nullptr ? text : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) {
    out.pop_back();
  }
  return out;
}

pg_conn* connectOnce(const std::string& url, const ConnectOptions& options) {
  const char* keys[] = {"dbname", "application_name", "connect_timeout", nullptr};
  const char* values[] = {url.c_str(), options.application_name.c_str(), "10", nullptr};
  return PQconnectdbParams(keys, values, /*expand_dbname=*/1);
}

// Connects, retrying with backoff (50 ms doubling to 2 s) until `options.retry_for` has passed.
Result<pg_conn*> connectWithRetry(const std::string& url, const ConnectOptions& options) {
  const auto deadline = Clock::now() + options.retry_for;
  auto delay = std::chrono::milliseconds(50);
  for (;;) {
    pg_conn* conn = connectOnce(url, options);
    if (conn != nullptr && PQstatus(conn) == CONNECTION_OK) {
      return conn;
    }
    std::string why = conn != nullptr ? trimmed(PQerrorMessage(conn)) : "out of memory";
    PQfinish(conn);
    if (Clock::now() + delay > deadline) {
      return makeError("cannot connect to PostgreSQL at " + redact(url) + ": " + why +
                       " (is the server running, and is the URL right?)");
    }
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::milliseconds(2000));
  }
}

// The server's notices (a shutdown warning, "already exists, skipping") are not oe's output;
// what matters reaches oe as an error.
void ignoreNotice(void* /*arg*/, const char* /*message*/) {}

}  // namespace

bool isUrl(std::string_view store) {
  return store.starts_with("postgresql://") || store.starts_with("postgres://");
}

std::string redact(std::string_view url) {
  // scheme://user:password@host/... -> scheme://user:***@host/...
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) {
    return std::string(url);
  }
  const size_t at = url.find('@', scheme + 3);
  const size_t slash = url.find('/', scheme + 3);
  if (at == std::string_view::npos || (slash != std::string_view::npos && slash < at)) {
    return std::string(url);
  }
  const size_t colon = url.find(':', scheme + 3);
  if (colon == std::string_view::npos || colon > at) {
    return std::string(url);
  }
  return std::string(url.substr(0, colon + 1)) + "***" + std::string(url.substr(at));
}

std::string quoteIdentifier(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') {
      out += '"';
    }
    out += c;
  }
  out += '"';
  return out;
}

std::string arrayLiteral(const std::vector<std::optional<std::string_view>>& items) {
  size_t size = 2;
  for (const auto& item : items) {
    size += (item ? item->size() : 0) + 4;
  }
  std::string out;
  out.reserve(size);
  out += '{';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    if (!items[i]) {
      out += "NULL";
      continue;
    }
    out += '"';
    for (char c : *items[i]) {
      if (c == '"' || c == '\\') {
        out += '\\';
      }
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

std::string arrayLiteral(const std::vector<std::string>& items) {
  return arrayLiteral(std::vector<std::optional<std::string_view>>(items.begin(), items.end()));
}

Param::Param(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  text_ = buffer;
}

Rows::Rows(pg_result* result) : result_(result) {}
Rows::Rows(Rows&& other) noexcept : result_(std::exchange(other.result_, nullptr)) {}
Rows& Rows::operator=(Rows&& other) noexcept {
  if (this != &other) {
    PQclear(result_);
    result_ = std::exchange(other.result_, nullptr);
  }
  return *this;
}
Rows::~Rows() { PQclear(result_); }

int Rows::size() const { return result_ != nullptr ? PQntuples(result_) : 0; }

bool Rows::isNull(int row, int column) const {
  return result_ == nullptr || PQgetisnull(result_, row, column) != 0;
}

std::string_view Rows::text(int row, int column) const {
  if (isNull(row, column)) {
    return {};
  }
  return {PQgetvalue(result_, row, column),
          static_cast<size_t>(PQgetlength(result_, row, column))};
}

std::optional<std::string> Rows::optText(int row, int column) const {
  if (isNull(row, column)) {
    return std::nullopt;
  }
  return std::string(text(row, column));
}

int64_t Rows::int64(int row, int column) const {
  if (isNull(row, column)) {
    return 0;
  }
  return std::strtoll(PQgetvalue(result_, row, column), nullptr, 10);
}

double Rows::real(int row, int column) const {
  if (isNull(row, column)) {
    return 0;
  }
  return std::strtod(PQgetvalue(result_, row, column), nullptr);
}

bool Rows::boolean(int row, int column) const { return text(row, column) == "t"; }

int64_t Rows::affected() const {
  const char* count = result_ != nullptr ? PQcmdTuples(result_) : "";
  return *count != '\0' ? std::strtoll(count, nullptr, 10) : 0;
}

Result<std::unique_ptr<Connection>> Connection::open(std::string url, ConnectOptions options) {
  auto conn = connectWithRetry(url, options);
  if (!conn) {
    return conn.error();
  }
  PQsetNoticeProcessor(*conn, ignoreNotice, nullptr);
  auto made = std::make_unique<Connection>(*conn, std::move(url), std::move(options));
  // Keep the server's notices (CREATE TABLE IF NOT EXISTS "already exists, skipping") off
  // oe's stderr.
  (void)made->exec("SET client_min_messages = warning");
  return made;
}

Connection::Connection(pg_conn* conn, std::string url, ConnectOptions options)
    : conn_(conn), url_(std::move(url)), options_(std::move(options)) {}

Connection::~Connection() { PQfinish(conn_); }

bool Connection::healthy() const { return conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK; }

int Connection::backendPid() const { return conn_ != nullptr ? PQbackendPID(conn_) : 0; }

Result<Rows> Connection::exec(std::string_view sql, std::initializer_list<Param> params) {
  const std::vector<Param> list(params);
  return run(sql, &list);
}

Result<Rows> Connection::exec(std::string_view sql, const std::vector<Param>& params) {
  return run(sql, &params);
}

Result<void> Connection::script(std::string_view sql) {
  auto done = run(sql, nullptr);
  if (!done) {
    return done.error();
  }
  return {};
}

Result<Rows> Connection::run(std::string_view sql, const std::vector<Param>* params) {
  last_failure_ = Failure::kNone;
  if (!healthy()) {
    last_failure_ = Failure::kConnection;
    return makeError("the connection to PostgreSQL at " + redact(url_) + " is lost");
  }
  const std::string text(sql);
  pg_result* raw = nullptr;
  if (params == nullptr) {
    raw = PQexec(conn_, text.c_str());
  } else {
    std::vector<const char*> values;
    values.reserve(params->size());
    for (const Param& param : *params) {
      values.push_back(param.data());
    }
    raw = PQexecParams(conn_, text.c_str(), static_cast<int>(values.size()), nullptr,
                       values.data(), nullptr, nullptr, 0);
  }
  Rows rows(raw);
  const ExecStatusType status = raw != nullptr ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
    return rows;
  }
  const char* state = raw != nullptr ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : nullptr;
  const std::string_view code = state != nullptr ? state : "";
  // No SQLSTATE: libpq's own error (the server closed the socket, which PQstatus may not show
  // until the next call), so the connection is in doubt.
  if (!healthy() || code.empty() || code.starts_with("08") || code == "57P01" || code == "57P02" ||
      code == "57P03") {
    last_failure_ = Failure::kConnection;
  } else if (code == "40001" || code == "40P01") {
    last_failure_ = Failure::kSerialization;
  } else {
    last_failure_ = Failure::kStatement;
  }
  std::string message = raw != nullptr ? trimmed(PQresultErrorMessage(raw)) : "";
  if (message.empty()) {
    message = trimmed(PQerrorMessage(conn_));
  }
  return makeError("PostgreSQL: " + message);
}

Result<void> Connection::transaction(const std::function<Result<void>(Connection&)>& work) {
  const auto deadline = Clock::now() + options_.retry_for;
  for (;;) {
    Result<void> outcome;
    if (auto begun = exec("BEGIN"); !begun) {
      outcome = begun.error();
    } else {
      outcome = work(*this);
      if (outcome) {
        if (auto committed = exec("COMMIT"); !committed) {
          outcome = committed.error();
        }
      }
      if (!outcome && healthy()) {
        const Failure why = last_failure_;
        (void)exec("ROLLBACK");
        last_failure_ = why;
      }
    }
    if (outcome) {
      return outcome;
    }
    const Failure why = last_failure_;
    if ((why != Failure::kConnection && why != Failure::kSerialization) ||
        Clock::now() >= deadline) {
      return outcome;
    }
    if (why == Failure::kConnection) {
      if (auto again = reconnect(); !again) {
        return again;
      }
    }
  }
}

Result<void> Connection::listen(std::string_view channel) {
  if (auto done = exec("LISTEN " + quoteIdentifier(channel)); !done) {
    return done.error();
  }
  if (std::find(channels_.begin(), channels_.end(), channel) == channels_.end()) {
    channels_.emplace_back(channel);
  }
  return {};
}

bool Connection::waitForNotify(std::chrono::milliseconds timeout) {
  auto drain = [this] {
    bool any = false;
    while (pgNotify* note = PQnotifies(conn_)) {
      PQfreemem(note);
      any = true;
    }
    return any;
  };
  if (!healthy()) {
    last_failure_ = Failure::kConnection;
    return false;
  }
  if (PQconsumeInput(conn_) == 0) {
    last_failure_ = Failure::kConnection;
    return false;
  }
  if (drain()) {
    return true;
  }
  pollfd fd{PQsocket(conn_), POLLIN, 0};
  if (::poll(&fd, 1, static_cast<int>(timeout.count())) <= 0) {
    return false;
  }
  if (PQconsumeInput(conn_) == 0) {
    last_failure_ = Failure::kConnection;
    return false;
  }
  return drain();
}

Result<void> Connection::reconnect() {
  PQfinish(conn_);
  conn_ = nullptr;
  auto conn = connectWithRetry(url_, options_);
  if (!conn) {
    last_failure_ = Failure::kConnection;
    return conn.error();
  }
  conn_ = *conn;
  PQsetNoticeProcessor(conn_, ignoreNotice, nullptr);
  last_failure_ = Failure::kNone;
  (void)exec("SET client_min_messages = warning");
  const std::vector<std::string> channels = channels_;
  for (const std::string& channel : channels) {
    if (auto done = listen(channel); !done) {
      return done;
    }
  }
  return {};
}

}  // namespace oe::pg

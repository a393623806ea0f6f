// libpq behind oe's types (connection.hpp).
#include "oe/pg/connection.hpp"

#include <libpq-fe.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

namespace oe::pg {

namespace {

using Clock = std::chrono::steady_clock;

// How long one connection attempt may take (libpq's connect_timeout is only enforced by its
// blocking connect; oe connects asynchronously to stay interruptible).
constexpr auto kConnectTimeout = std::chrono::seconds(10);

std::string trimmed(const char* text) {
  std::string out = text != nullptr ? text : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) {
    out.pop_back();
  }
  return out;
}

std::string seconds(Clock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + " s";
}

// Waits for `events` on `fd` or for `patience` to be interrupted, until `deadline`. 1: ready,
// 0: the deadline passed, -1: interrupted.
int pollUntil(int fd, short events, Clock::time_point deadline, const Patience* patience) {
  for (;;) {
    pollfd fds[2] = {{fd, events, 0}, {patience != nullptr ? patience->fd() : -1, POLLIN, 0}};
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return 0;
    }
    const int n = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 60'000)));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return 1;  // let libpq find out what is wrong with the socket
    }
    if (fds[1].revents != 0) {
      return -1;
    }
    if (fds[0].revents != 0) {
      return 1;
    }
  }
}

// One connection attempt, asynchronous so that an interrupt or kConnectTimeout ends it. TCP
// keepalives (client side) find a dead server host within a minute; a URL's own settings win
// (parameters before dbname are overridden by the expanded URL).
pg_conn* connectOnce(const std::string& url, const ConnectOptions& options, std::string& why) {
  const char* keys[] = {"keepalives",          "keepalives_idle", "keepalives_interval",
                        "keepalives_count",    "tcp_user_timeout", "connect_timeout",
                        "dbname",              "application_name", nullptr};
  const char* values[] = {"1", "15", "5", "4", "45000", "10", url.c_str(),
                          options.application_name.c_str(), nullptr};
  pg_conn* conn = PQconnectStartParams(keys, values, /*expand_dbname=*/1);
  if (conn == nullptr) {
    why = "out of memory";
    return nullptr;
  }
  const auto deadline = Clock::now() + kConnectTimeout;
  PostgresPollingStatusType state = PGRES_POLLING_WRITING;
  while (PQstatus(conn) != CONNECTION_BAD) {
    if (state == PGRES_POLLING_OK) {
      return conn;
    }
    if (state == PGRES_POLLING_FAILED) {
      break;
    }
    const int ready = pollUntil(PQsocket(conn), state == PGRES_POLLING_READING ? POLLIN : POLLOUT,
                                deadline, options.patience.get());
    if (ready <= 0) {
      why = ready < 0 ? "the process is stopping" : "no answer within " + seconds(kConnectTimeout);
      PQfinish(conn);
      return nullptr;
    }
    state = PQconnectPoll(conn);
  }
  why = trimmed(PQerrorMessage(conn));
  PQfinish(conn);
  return nullptr;
}

// Connects, retrying with backoff (50 ms doubling to 2 s) for `budget` (kForever: until the
// Patience is interrupted), reporting a long outage through the Patience.
Result<pg_conn*> connectWithRetry(const std::string& url, const ConnectOptions& options,
                                  std::chrono::milliseconds budget) {
  const auto start = Clock::now();
  const bool forever = budget == kForever;
  const auto deadline = forever ? Clock::time_point::max() : start + budget;
  auto delay = std::chrono::milliseconds(50);
  for (;;) {
    std::string why;
    if (options.patience && options.patience->interrupted()) {
      why = "the process is stopping";
    } else if (pg_conn* conn = connectOnce(url, options, why)) {
      return conn;
    }
    const bool stopping = options.patience && options.patience->interrupted();
    if (stopping || (!forever && Clock::now() + delay > deadline)) {
      return makeError("cannot connect to PostgreSQL at " + redact(url) + ": " + why +
                       (stopping ? "" : " (is the server running, and is the URL right?)"));
    }
    if (options.patience) {
      options.patience->outage(
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start),
          options.application_name, why);
      if (options.patience->sleepFor(delay)) {
        continue;  // interrupted: the loop's first test ends it
      }
    } else {
      std::this_thread::sleep_for(delay);
    }
    delay = std::min(delay * 2, std::chrono::milliseconds(2000));
  }
}

// The server's notices (a shutdown warning, "already exists, skipping") are not oe's output;
// what matters reaches oe as an error.
void ignoreNotice(void* /*arg*/, const char* /*message*/) {}

}  // namespace

Patience::Patience(std::function<void(const std::string&)> say,
                   std::chrono::milliseconds report_every)
    : say_(std::move(say)),
      report_every_(report_every),
      fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!say_) {
    say_ = [](const std::string& message) { std::cerr << "oe: " << message << '\n'; };
  }
}

Patience::~Patience() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

void Patience::interrupt() {
  if (interrupted_.exchange(true)) {
    return;
  }
  const uint64_t one = 1;
  (void)::write(fd_, &one, sizeof one);
}

bool Patience::sleepFor(std::chrono::milliseconds duration) const {
  pollfd fd{fd_, POLLIN, 0};
  const auto deadline = Clock::now() + duration;
  while (!interrupted()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return false;
    }
    (void)::poll(&fd, 1, static_cast<int>(std::min<int64_t>(left.count(), 60'000)));
  }
  return true;
}

void Patience::outage(std::chrono::milliseconds down_for, const std::string& who,
                      const std::string& why) {
  if (down_for < report_every_) {
    return;
  }
  {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    if (last_said_ != Clock::time_point{} && now - last_said_ < report_every_) {
      return;
    }
    last_said_ = now;
  }
  say_(who + ": the database has been out of reach for " + seconds(down_for) + " (" + why +
       "); still trying, with backoff (SIGINT or SIGTERM stops)");
}

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
  auto conn = connectWithRetry(url, options, options.retry_for);
  if (!conn) {
    return conn.error();
  }
  auto made = std::make_unique<Connection>(*conn, std::move(url), std::move(options));
  made->prepareSession();
  return made;
}

void Connection::prepareSession() {
  PQsetNoticeProcessor(conn_, ignoreNotice, nullptr);
  // Keep the server's notices (CREATE TABLE IF NOT EXISTS "already exists, skipping") off
  // oe's stderr. The server's side of the keepalives: a session whose client host vanished
  // (with the scope's lock) ends within a minute rather than the OS's two hours; and a
  // statement whose client is gone stops at the next check instead of running to its end.
  // Ignored on a Unix socket; a server older than 14 lacks the last setting, hence two steps.
  (void)exec("SET client_min_messages = warning");
  (void)script(
      "SET tcp_keepalives_idle = 15; SET tcp_keepalives_interval = 5; "
      "SET tcp_keepalives_count = 4; SET tcp_user_timeout = 45000; "
      "SET client_connection_check_interval = 2000");
}

Connection::Connection(pg_conn* conn, std::string url, ConnectOptions options)
    : conn_(conn), url_(std::move(url)), options_(std::move(options)) {}

Connection::~Connection() { PQfinish(conn_); }

bool Connection::healthy() const { return conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK; }

int Connection::backendPid() const { return conn_ != nullptr ? PQbackendPID(conn_) : 0; }

int Connection::socket() const { return conn_ != nullptr ? PQsocket(conn_) : -1; }

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

void Connection::drop(std::string why) {
  PQfinish(conn_);
  conn_ = nullptr;
  dropped_ = std::move(why);
  last_failure_ = Failure::kConnection;
}

bool Connection::waitSocket(short events, Clock::time_point deadline,
                            std::optional<Clock::time_point>& grace) {
  for (;;) {
    const Patience* patience = grace ? nullptr : options_.patience.get();
    const auto until = grace ? std::min(deadline, *grace) : deadline;
    const int ready = pollUntil(PQsocket(conn_), events, until, patience);
    if (ready > 0) {
      return true;
    }
    if (ready < 0) {
      grace = Clock::now() + Patience::kStopGrace;  // interrupted: a last short wait
      continue;
    }
    drop(grace && Clock::now() >= *grace
             ? "no reply from PostgreSQL at " + redact(url_) + " while stopping"
             : "no reply from PostgreSQL at " + redact(url_) + " within " +
                   seconds(options_.reply_timeout) + " (a lost network or a stuck server?)");
    return false;
  }
}

Result<Rows> Connection::run(std::string_view sql, const std::vector<Param>* params) {
  last_failure_ = Failure::kNone;
  if (!healthy()) {
    last_failure_ = Failure::kConnection;
    return makeError(dropped_.empty() ? "the connection to PostgreSQL at " + redact(url_) +
                                            " is lost"
                                      : dropped_);
  }
  const std::string text(sql);
  int sent = 0;
  if (params == nullptr) {
    sent = PQsendQuery(conn_, text.c_str());
  } else {
    std::vector<const char*> values;
    values.reserve(params->size());
    for (const Param& param : *params) {
      values.push_back(param.data());
    }
    sent = PQsendQueryParams(conn_, text.c_str(), static_cast<int>(values.size()), nullptr,
                             values.data(), nullptr, nullptr, 0);
  }
  if (sent == 0) {
    std::string message = "PostgreSQL: " + trimmed(PQerrorMessage(conn_));
    last_failure_ = Failure::kConnection;
    return makeError(message);
  }
  // Sent and answered asynchronously, so that a reply that never comes (reply_timeout) or a
  // stop (the Patience) ends the wait; PQexec would block for as long as the socket lives.
  const auto deadline = options_.reply_timeout.count() > 0
                            ? Clock::now() + options_.reply_timeout
                            : Clock::time_point::max();
  std::optional<Clock::time_point> grace;
  if (options_.patience && options_.patience->interrupted()) {
    grace = Clock::now() + Patience::kStopGrace;
  }
  for (;;) {
    const int flushed = PQflush(conn_);
    if (flushed == 0) {
      break;
    }
    if (flushed < 0 || !waitSocket(POLLOUT, deadline, grace)) {
      if (healthy()) {
        drop("the connection to PostgreSQL at " + redact(url_) + " is lost");
      }
      return makeError(dropped_);
    }
  }
  pg_result* raw = nullptr;
  bool answered = false;
  while (!answered) {
    // Not busy also once libpq saw the server go: PQgetResult then says how.
    while (PQisBusy(conn_) == 0) {
      pg_result* next = PQgetResult(conn_);
      if (next == nullptr) {
        answered = true;
        break;
      }
      PQclear(raw);
      raw = next;  // the last result, as PQexec keeps (an error ends the statements)
    }
    if (answered) {
      break;
    }
    if (!waitSocket(POLLIN, deadline, grace)) {
      PQclear(raw);
      return makeError(dropped_);
    }
    (void)PQconsumeInput(conn_);  // a failure shows in the results
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
  if (message.empty() && conn_ != nullptr) {
    message = trimmed(PQerrorMessage(conn_));
  }
  return makeError("PostgreSQL: " + message);
}

Result<void> Connection::transaction(const std::function<Result<void>(Connection&)>& work) {
  const auto budget = options_.reconnect_for.value_or(options_.retry_for);
  const auto deadline =
      budget == kForever ? Clock::time_point::max() : Clock::now() + budget;
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

bool Connection::waitForNotify(std::chrono::milliseconds timeout, int wake) {
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
  const int stop = options_.patience ? options_.patience->fd() : -1;
  pollfd fds[3] = {{PQsocket(conn_), POLLIN, 0}, {stop, POLLIN, 0}, {wake, POLLIN, 0}};
  if (::poll(fds, 3, static_cast<int>(timeout.count())) <= 0 || fds[0].revents == 0) {
    return false;
  }
  if (PQconsumeInput(conn_) == 0) {
    last_failure_ = Failure::kConnection;
    return false;
  }
  return drain();
}

Result<void> Connection::reconnect() {
  return reconnect(options_.reconnect_for.value_or(options_.retry_for));
}

Result<void> Connection::reconnect(std::chrono::milliseconds budget) {
  PQfinish(conn_);
  conn_ = nullptr;
  auto conn = connectWithRetry(url_, options_, budget);
  if (!conn) {
    last_failure_ = Failure::kConnection;
    dropped_ = conn.error().message;
    return conn.error();
  }
  conn_ = *conn;
  dropped_.clear();
  last_failure_ = Failure::kNone;
  prepareSession();
  const std::vector<std::string> channels = channels_;
  for (const std::string& channel : channels) {
    if (auto done = listen(channel); !done) {
      return done;
    }
  }
  return {};
}

}  // namespace oe::pg

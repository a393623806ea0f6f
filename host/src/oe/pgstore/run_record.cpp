// RunRecord: oe_runs rows and the per-scope coordinator lock.
#include "oe/pgstore/run_record.hpp"

#include <unistd.h>

#include <climits>

#include "oe/pgstore/store_connection.hpp"

namespace oe::pgstore {

namespace {

// Namespaced so that another advisory lock of oe (the migrations') never meets a scope's.
std::string lockKey(const std::string& scope) { return "oe-scope:" + scope; }

constexpr std::string_view kColumns =
    "run_id, scope, experience, chain_id, coalesce(resumed_from, ''), status, "
    "coalesce(coordinator, ''), to_char(started_at AT TIME ZONE 'UTC', "
    "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), coalesce(to_char(finished_at AT TIME ZONE 'UTC', "
    "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), ''), pin";

RunInfo infoOf(const pg::Rows& rows, int i) {
  RunInfo info;
  info.run_id = rows.text(i, 0);
  info.scope = rows.text(i, 1);
  info.experience = rows.text(i, 2);
  info.chain_id = rows.text(i, 3);
  info.resumed_from = rows.text(i, 4);
  info.status = rows.text(i, 5);
  info.coordinator = rows.text(i, 6);
  info.started_at = rows.text(i, 7);
  info.finished_at = rows.text(i, 8);
  if (!rows.isNull(i, 9)) {
    Json pin = Json::parse(rows.text(i, 9), nullptr, false);
    if (!pin.is_discarded()) {
      info.pin = std::move(pin);
    }
  }
  return info;
}

}  // namespace

std::string coordinatorName() {
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof host) != 0) {
    host[0] = '\0';
  }
  return std::string(host) + ":" + std::to_string(getpid());
}

Result<bool> tryHoldScope(pg::Connection& conn, const std::string& scope) {
  auto locked = conn.exec("SELECT pg_try_advisory_lock(hashtextextended($1, 0))", {lockKey(scope)});
  if (!locked) {
    return makeError("cannot lock scope \"" + scope + "\" in " + pg::redact(conn.url()) + ": " +
                     locked.error().message);
  }
  return locked->boolean(0, 0);
}

std::string scopeHolder(pg::Connection& conn, const std::string& scope) {
  auto holder = conn.exec(
      "SELECT run_id, coalesce(coordinator, '?'), to_char(started_at AT TIME ZONE 'UTC', "
      "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM oe_runs WHERE scope = $1 AND status = 'running' "
      "ORDER BY started_at DESC LIMIT 1",
      {scope});
  if (holder && !holder->empty()) {
    return "run " + std::string(holder->text(0, 0)) + " (coordinator " +
           std::string(holder->text(0, 1)) + ", started " + std::string(holder->text(0, 2)) + ")";
  }
  return "another run";
}

namespace {

// True when this session holds the scope's lock (pg_locks shows a 64-bit advisory key as
// classid, its high half, and objid, its low half, objsubid 1).
constexpr std::string_view kSessionHolds =
    "EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND granted AND "
    "pid = pg_backend_pid() AND ((classid::bigint << 32) | objid::bigint) = "
    "hashtextextended($1, 0))";

std::string poolerMessage(const pg::Connection& conn, const std::string& scope) {
  return "the connection to " + pg::redact(conn.url()) +
         " does not keep its server session: the lock of scope \"" + scope +
         "\" taken on it is not held by the session it now talks to. A pooler in transaction "
         "mode (PgBouncer's pool_mode = transaction) between oe and PostgreSQL breaks session "
         "locks; connect oe to PostgreSQL directly, or through a pool in session mode "
         "(docs/scale-out.md)";
}

}  // namespace

Result<void> checkSessionHoldsScope(pg::Connection& conn, const std::string& scope) {
  auto holds = conn.exec("SELECT " + std::string(kSessionHolds), {lockKey(scope)});
  if (!holds) {
    return makeError("cannot check the lock of scope \"" + scope + "\": " +
                     holds.error().message);
  }
  if (!holds->boolean(0, 0)) {
    return makeError(poolerMessage(conn, scope));
  }
  return {};
}

Result<int64_t> takeScope(pg::Connection& conn, const std::string& scope,
                          const std::string& holder) {
  auto taken = conn.exec(
      "INSERT INTO oe_scopes (scope, epoch, run_id) VALUES ($1, 1, $2) ON CONFLICT (scope) DO "
      "UPDATE SET epoch = oe_scopes.epoch + 1, run_id = excluded.run_id, taken_at = now() "
      "RETURNING epoch",
      {scope, holder});
  if (!taken) {
    return makeError("cannot take scope \"" + scope + "\" in " + pg::redact(conn.url()) + ": " +
                     taken.error().message);
  }
  return taken->int64(0, 0);
}

Result<void> holdScope(pg::Connection& conn, const std::string& scope) {
  auto locked = tryHoldScope(conn, scope);
  if (!locked) {
    return locked.error();
  }
  if (!*locked) {
    return makeError("the state store " + pg::redact(conn.url()) + " (scope \"" + scope +
                     "\") is in use by " + scopeHolder(conn, scope) +
                     ". Wait for that run to finish (or stop it), or pass --wait; a killed "
                     "coordinator's lock goes when its connection ends.");
  }
  if (auto held = checkSessionHoldsScope(conn, scope); !held) {
    return held;
  }
  if (auto taken = takeScope(conn, scope, "oe " + coordinatorName()); !taken) {
    return taken.error();
  }
  return {};
}

Result<std::unique_ptr<RunRecord>> RunRecord::begin(
    const std::string& url, RunInfo info, std::chrono::milliseconds retry_for,
    const std::function<void(const std::string& holder)>& on_wait,
    std::shared_ptr<pg::Patience> patience) {
  auto conn = connect(url, retry_for, "oe run", patience);
  if (!conn) {
    return conn.error();
  }
  pg::Connection& c = **conn;
  if (!on_wait) {
    if (auto held = holdScope(c, info.scope); !held) {
      return held.error();
    }
  } else {
    // Polled rather than a blocking pg_advisory_lock, so that a signal still ends the wait.
    bool told = false;
    for (;;) {
      auto locked = tryHoldScope(c, info.scope);
      if (!locked) {
        return locked.error();
      }
      if (*locked) {
        break;
      }
      if (!told) {
        on_wait(scopeHolder(c, info.scope));
        told = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    if (auto held = checkSessionHoldsScope(c, info.scope); !held) {
      return held.error();
    }
  }
  // The run's own epoch (holdScope took one for an anonymous holder: this names the run).
  auto epoch = takeScope(c, info.scope, info.run_id);
  if (!epoch) {
    return epoch.error();
  }
  info.status = "running";
  info.coordinator = coordinatorName();
  auto inserted = c.exec(
      "INSERT INTO oe_runs (run_id, scope, experience, chain_id, resumed_from, status, "
      "coordinator, pin, epoch) VALUES ($1, $2, $3, $4, $5, 'running', $6, $7, $8) ON CONFLICT "
      "(run_id) DO UPDATE SET status = 'running', coordinator = excluded.coordinator, "
      "finished_at = NULL, epoch = excluded.epoch",
      {info.run_id, info.scope, info.experience, info.chain_id,
       info.resumed_from.empty() ? pg::Param(nullptr) : pg::Param(info.resumed_from),
       info.coordinator, info.pin ? pg::Param(info.pin->dump()) : pg::Param(nullptr), *epoch});
  if (!inserted) {
    return makeError("cannot record run " + info.run_id + " in " + pg::redact(url) + ": " +
                     inserted.error().message);
  }
  return std::make_unique<RunRecord>(std::move(*conn), std::move(info), *epoch,
                                     std::move(patience));
}

RunRecord::RunRecord(std::unique_ptr<pg::Connection> conn, RunInfo info, int64_t epoch,
                     std::shared_ptr<pg::Patience> patience)
    : conn_(std::move(conn)),
      info_(std::move(info)),
      fence_(std::make_shared<ScopeFence>(info_.scope, epoch, std::move(patience))),
      locked_pid_(conn_->backendPid()) {}

RunRecord::~RunRecord() {
  stopGuard();
  // Let go of the lock before the connection closes: the server ends a closed session (and so
  // releases its locks) after the client has gone, so without this a coordinator started right
  // after this one ends (a script's next `oe run`) could still find the scope held.
  if (conn_ && conn_->healthy() && conn_->backendPid() == locked_pid_) {
    (void)conn_->exec("SELECT pg_advisory_unlock(hashtextextended($1, 0))",
                      {lockKey(info_.scope)});
  }
}

void RunRecord::guard(std::chrono::milliseconds every, std::function<void(std::string)> lost) {
  // A write the fence refused stops the run as the guard would (whichever comes first).
  fence_->onLost(lost);
  guard_ = std::thread([this, every, lost = std::move(lost)] {
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, every, [this] { return stopping_; })) {
      if (auto problem = keepLock()) {
        lock.unlock();
        lost(std::move(*problem));
        return;
      }
    }
  });
}

std::optional<std::string> RunRecord::keepLock() {
  const std::string scope = "scope \"" + info_.scope + "\" in " + pg::redact(conn_->url());
  const std::string taken = "the connection holding the lock on " + scope +
                            " was lost (a server restart?) and another coordinator took the "
                            "scope meanwhile: ";
  const std::string stops = ". This run stops so that the state keeps one writer; resume it "
                            "once the other run is done.";
  if (conn_->healthy() && conn_->backendPid() == locked_pid_) {
    // The session is the one that took the lock: it still holds it (else a pooler moved this
    // connection to another session), and the scope is still this run's.
    auto look = conn_->exec("SELECT " + std::string(kSessionHolds) +
                                ", (SELECT epoch FROM oe_scopes WHERE scope = $2)",
                            {lockKey(info_.scope), info_.scope});
    if (!look) {
      return std::nullopt;  // lost meanwhile: the next look reconnects
    }
    if (look->int64(0, 1) != fence_->epoch()) {
      return "another coordinator took " + scope + " while this run held it" + stops;
    }
    if (!look->boolean(0, 0)) {
      return poolerMessage(*conn_, info_.scope);
    }
    return std::nullopt;
  }
  // One try: while the server is still away, the next look tries again (a guard that waited
  // here would hold up the end of the run).
  if (auto back = conn_->reconnect(std::chrono::milliseconds(0)); !back) {
    return std::nullopt;
  }
  auto held = tryHoldScope(*conn_, info_.scope);
  if (!held) {
    return std::nullopt;  // lost again: the next look tries again
  }
  if (!*held) {
    return "the connection holding the lock on " + scope +
           " was lost (a server restart?) and another coordinator took the lock meanwhile: " +
           scopeHolder(*conn_, info_.scope) + stops;
  }
  if (auto session = checkSessionHoldsScope(*conn_, info_.scope); !session) {
    return session.error().message;
  }
  locked_pid_ = conn_->backendPid();
  // Held again. The scope is still this run's when its epoch did not move; a run of the scope
  // that started while the lock was free wrote the same state too.
  auto epoch = conn_->exec("SELECT epoch FROM oe_scopes WHERE scope = $1", {info_.scope});
  if (epoch && !epoch->empty() && epoch->int64(0, 0) != fence_->epoch()) {
    return taken + scopeHolder(*conn_, info_.scope) + stops;
  }
  auto others = conn_->exec(
      "SELECT run_id FROM oe_runs WHERE scope = $1 AND run_id <> $2 AND started_at >= "
      "(SELECT started_at FROM oe_runs WHERE run_id = $2) ORDER BY started_at LIMIT 1",
      {info_.scope, info_.run_id});
  if (others && !others->empty()) {
    return "the connection holding the lock on " + scope +
           " was lost (a server restart?) and run " + std::string(others->text(0, 0)) +
           " started on the scope while the lock was free. This run stops so that the state "
           "keeps one writer; check the state (`oe state --store URL`) before resuming.";
  }
  return std::nullopt;
}

void RunRecord::stopGuard() {
  fence_->onLost({});  // whom `lost` stops may go after this
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (guard_.joinable()) {
    guard_.join();
  }
}

Result<void> RunRecord::setPin(const Json& pin) {
  auto r = conn_->exec("UPDATE oe_runs SET pin = $2 WHERE run_id = $1", {info_.run_id, pin.dump()});
  if (!r) {
    return makeError("cannot record the definition pin of run " + info_.run_id + ": " +
                     r.error().message);
  }
  info_.pin = pin;
  return {};
}

Result<void> RunRecord::finish(std::string_view status) {
  stopGuard();
  constexpr std::string_view kSql =
      "UPDATE oe_runs SET status = $2, finished_at = now() WHERE run_id = $1";
  auto r = execRetrying(*conn_, kSql, {info_.run_id, status});
  if (!r) {
    return makeError("cannot record the end of run " + info_.run_id + ": " + r.error().message);
  }
  info_.status = status;
  return {};
}

Result<RunInfo> findRun(pg::Connection& conn, const std::string& id_or_prefix,
                        const std::string& scope) {
  auto rows = conn.exec(std::string("SELECT ") + std::string(kColumns) +
                            " FROM oe_runs WHERE (run_id = $1 OR starts_with(run_id, $1)) AND "
                            "($2 = '' OR scope = $2) ORDER BY run_id = $1 DESC, started_at "
                            "LIMIT 3",
                        {id_or_prefix, scope});
  if (!rows) {
    return makeError("cannot look up run " + id_or_prefix + " in " + pg::redact(conn.url()) + ": " +
                     rows.error().message);
  }
  if (rows->empty()) {
    return makeError("no run " + id_or_prefix + " in " + pg::redact(conn.url()) +
                     (scope.empty() ? std::string() : " (scope \"" + scope + "\")") +
                     ". List them with `oe runs --store URL`.");
  }
  if (rows->size() > 1 && rows->text(0, 0) != id_or_prefix) {
    return makeError("run prefix " + id_or_prefix + " matches several runs (" +
                     std::string(rows->text(0, 0)) + ", " + std::string(rows->text(1, 0)) +
                     ", ...). Give more of the id.");
  }
  return infoOf(*rows, 0);
}

Result<std::vector<RunInfo>> listRuns(pg::Connection& conn, const std::string& scope) {
  // The counts read the lines' heads, as the event log writes them: {"type":"<type>",...
  auto rows = conn.exec(
      std::string("SELECT ") + std::string(kColumns) +
          ", c.ran, c.cached, c.failed, c.skipped, c.cancelled FROM oe_runs r LEFT JOIN "
          "LATERAL (SELECT "
          "count(*) FILTER (WHERE starts_with(line, '{\"type\":\"node.finished\"') AND "
          "position('\"cached\":true' IN line) = 0) AS ran, count(*) FILTER (WHERE "
          "starts_with(line, '{\"type\":\"node.finished\"') AND position('\"cached\":true' IN "
          "line) > 0) AS cached, count(*) FILTER (WHERE starts_with(line, "
          "'{\"type\":\"node.failed\"') AND position('\"cancelled\":true' IN line) = 0) AS "
          "failed, count(*) FILTER (WHERE starts_with(line, '{\"type\":\"node.skipped\"')) AS "
          "skipped, count(*) FILTER (WHERE starts_with(line, '{\"type\":\"node.failed\"') AND "
          "position('\"cancelled\":true' IN line) > 0) AS cancelled FROM oe_events e WHERE "
          "e.run_id = "
          "r.run_id) c ON true WHERE r.scope = $1 ORDER BY r.started_at, r.run_id",
      {scope});
  // Whether some session holds the scope's lock: pg_locks shows a 64-bit advisory key as
  // classid (high half) and objid (low half), objsubid 1.
  auto held = conn.exec(
      "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND "
      "granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
      "AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0))",
      {lockKey(scope)});
  if (!rows) {
    return makeError("cannot list the runs in " + pg::redact(conn.url()) + ": " +
                     rows.error().message);
  }
  std::vector<RunInfo> out;
  for (int i = 0; i < rows->size(); ++i) {
    RunInfo info = infoOf(*rows, i);
    info.ran = static_cast<size_t>(rows->int64(i, 10));
    info.cached = static_cast<size_t>(rows->int64(i, 11));
    info.failed = static_cast<size_t>(rows->int64(i, 12));
    info.skipped = static_cast<size_t>(rows->int64(i, 13));
    info.cancelled = static_cast<size_t>(rows->int64(i, 14));
    out.push_back(std::move(info));
  }
  if (held && !held->empty() && held->boolean(0, 0)) {
    for (auto it = out.rbegin(); it != out.rend(); ++it) {
      if (it->status == "running" && it->finished_at.empty()) {
        it->live = true;
        break;
      }
    }
  }
  return out;
}

}  // namespace oe::pgstore

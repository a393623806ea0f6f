// The run queue on PostgreSQL (oe_run_queue, schema versions 6 and 7), shared by every `oe serve`
// of the store. A claim holds a transaction-scoped advisory lock, so the running counts the limits
// are checked against are exact across instances; the row it takes is locked FOR UPDATE SKIP
// LOCKED, so a cancel marking it cancelled meanwhile is never waited for.
#include <mutex>

#include "oe/pg/connection.hpp"
#include "oe/pg/schema.hpp"
#include "oe/service/run_queue.hpp"

namespace oe::service {

Result<std::unique_ptr<RunQueue>> openPgQueue(const std::string& url);

namespace {

constexpr const char* kPgColumns =
    "run_id, experience, kind, resume_of, args, options, priority, enqueued_ms, state, "
    "started_ms, pid, owner, lease_until_ms, max_concurrent, folder, cancelled_ms";
constexpr const char* kPgOrder =
    " ORDER BY state = 'running' DESC, state = 'cancelled', priority DESC, enqueued_ms, run_id";
// The advisory lock of claims: any 64-bit constant of oe's own.
constexpr int64_t kClaimLock = 0x6f655f636c61696d;  // "oe_claim"

Json pgJsonOr(std::string_view text) {
  Json j = Json::parse(text, nullptr, false);
  return j.is_discarded() ? Json::object() : j;
}

QueuedRun pgRowOf(const pg::Rows& rows, int i) {
  QueuedRun e;
  e.run_id = std::string(rows.text(i, 0));
  e.experience = std::string(rows.text(i, 1));
  e.kind = std::string(rows.text(i, 2));
  e.resume_of = std::string(rows.text(i, 3));
  e.args = pgJsonOr(rows.text(i, 4));
  e.options = pgJsonOr(rows.text(i, 5));
  e.priority = static_cast<int>(rows.int64(i, 6));
  e.enqueued_ms = rows.int64(i, 7);
  e.state = std::string(rows.text(i, 8));
  e.started_ms = rows.int64(i, 9);
  e.pid = rows.int64(i, 10);
  e.owner = std::string(rows.text(i, 11));
  e.lease_until_ms = rows.int64(i, 12);
  e.max_concurrent = static_cast<int>(rows.int64(i, 13));
  e.folder = std::string(rows.text(i, 14));
  e.cancelled_ms = rows.int64(i, 15);
  return e;
}

std::vector<QueuedRun> entriesOf(const pg::Rows& rows) {
  std::vector<QueuedRun> out;
  out.reserve(static_cast<size_t>(rows.size()));
  for (int i = 0; i < rows.size(); ++i) {
    out.push_back(pgRowOf(rows, i));
  }
  return out;
}

class PgQueue final : public RunQueue {
 public:
  explicit PgQueue(std::unique_ptr<pg::Connection> conn) : conn_(std::move(conn)) {}

  Result<void> enqueue(const QueuedRun& e) override {
    std::lock_guard lock(mutex_);
    reconnectIfLost();
    auto inserted = conn_->exec(
        "INSERT INTO oe_run_queue (run_id, experience, kind, resume_of, args, options, priority, "
        "enqueued_ms, state, max_concurrent, folder) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, "
        "'queued', "
        "$9, $10)",
        {e.run_id, e.experience, e.kind, e.resume_of, e.args.dump(), e.options.dump(), e.priority,
         e.enqueued_ms, e.max_concurrent, e.folder});
    if (!inserted) {
      return failed("queue run " + e.run_id, inserted.error());
    }
    return {};
  }

  Result<std::vector<QueuedRun>> list() override {
    std::lock_guard lock(mutex_);
    reconnectIfLost();
    auto rows = conn_->exec(std::string("SELECT ") + kPgColumns + " FROM oe_run_queue" + kPgOrder);
    if (!rows) {
      return failed("read the queue", rows.error());
    }
    return entriesOf(*rows);
  }

  Result<std::optional<QueuedRun>> find(std::string_view run_id) override {
    std::lock_guard lock(mutex_);
    reconnectIfLost();
    auto rows = conn_->exec(
        std::string("SELECT ") + kPgColumns + " FROM oe_run_queue WHERE run_id = $1", {run_id});
    if (!rows) {
      return failed("read the queue", rows.error());
    }
    if (rows->empty()) {
      return std::optional<QueuedRun>();
    }
    return std::optional<QueuedRun>(pgRowOf(*rows, 0));
  }

  Result<std::optional<QueuedRun>> claim(std::string_view owner, const ClaimLimits& limits,
                                         int64_t lease_ms) override {
    std::lock_guard lock(mutex_);
    reconnectIfLost();
    std::optional<QueuedRun> taken;
    auto done = conn_->transaction([&](pg::Connection& c) -> Result<void> {
      taken.reset();
      if (auto locked = c.exec("SELECT pg_advisory_xact_lock($1)", {kClaimLock}); !locked) {
        return locked.error();
      }
      // The cancelled rows neither start nor count against the limits.
      auto rows = c.exec(std::string("SELECT ") + kPgColumns +
                         " FROM oe_run_queue WHERE state <> 'cancelled'" + kPgOrder);
      if (!rows) {
        return rows.error();
      }
      auto chosen = pickNext(entriesOf(*rows), limits);
      if (!chosen) {
        return {};
      }
      auto row = c.exec(
          "SELECT run_id FROM oe_run_queue WHERE run_id = $1 AND state = 'queued' "
          "FOR UPDATE SKIP LOCKED",
          {chosen->run_id});
      if (!row) {
        return row.error();
      }
      if (row->empty()) {
        return {};  // being cancelled: the next claim looks again
      }
      QueuedRun entry = std::move(*chosen);
      entry.state = "running";
      entry.owner = std::string(owner);
      entry.started_ms = nowMs();
      entry.lease_until_ms = entry.started_ms + lease_ms;
      entry.pid = 0;
      auto updated = c.exec(
          "UPDATE oe_run_queue SET state = 'running', owner = $2, started_ms = $3, "
          "lease_until_ms = $4, pid = 0 WHERE run_id = $1",
          {entry.run_id, entry.owner, entry.started_ms, entry.lease_until_ms});
      if (!updated) {
        return updated.error();
      }
      taken = std::move(entry);
      return {};
    });
    if (!done) {
      return failed("claim a queued run", done.error());
    }
    return taken;
  }

  Result<void> setPid(std::string_view run_id, int64_t pid) override {
    std::lock_guard lock(mutex_);
    reconnectIfLost();
    auto updated = conn_->exec("UPDATE oe_run_queue SET pid = $2 WHERE run_id = $1", {run_id, pid});
    if (!updated) {
      return failed("update run " + std::string(run_id), updated.error());
    }
    return {};
  }

  Result<bool> remove(std::string_view run_id) override {
    std::lock_guard lock(mutex_);
    reconnectIfLost();
    auto deleted = conn_->exec("DELETE FROM oe_run_queue WHERE run_id = $1", {run_id});
    if (!deleted) {
      return failed("remove run " + std::string(run_id), deleted.error());
    }
    return deleted->affected() > 0;
  }

  Result<bool> cancelQueued(std::string_view run_id, int64_t now_ms) override {
    std::lock_guard lock(mutex_);
    reconnectIfLost();
    auto updated = conn_->exec(
        "UPDATE oe_run_queue SET state = 'cancelled', cancelled_ms = $2 "
        "WHERE run_id = $1 AND state = 'queued'",
        {run_id, now_ms});
    if (!updated) {
      return failed("cancel run " + std::string(run_id), updated.error());
    }
    return updated->affected() > 0;
  }

  Result<int> dropCancelled(int64_t before_ms) override {
    std::lock_guard lock(mutex_);
    reconnectIfLost();
    auto deleted = conn_->exec(
        "DELETE FROM oe_run_queue WHERE state = 'cancelled' AND cancelled_ms < $1", {before_ms});
    if (!deleted) {
      return failed("drop the cancelled runs", deleted.error());
    }
    return static_cast<int>(deleted->affected());
  }

  Result<void> requeue(const QueuedRun& e) override {
    std::lock_guard lock(mutex_);
    reconnectIfLost();
    auto updated = conn_->exec(
        "UPDATE oe_run_queue SET state = 'queued', owner = '', pid = 0, started_ms = 0, "
        "lease_until_ms = 0, kind = $2, resume_of = $3 WHERE run_id = $1",
        {e.run_id, e.kind, e.resume_of});
    if (!updated) {
      return failed("requeue run " + e.run_id, updated.error());
    }
    return {};
  }

  Result<void> renew(std::string_view owner, int64_t lease_ms) override {
    std::lock_guard lock(mutex_);
    reconnectIfLost();
    auto updated = conn_->exec(
        "UPDATE oe_run_queue SET lease_until_ms = $2 WHERE owner = $1 AND state = 'running'",
        {owner, nowMs() + lease_ms});
    if (!updated) {
      return failed("renew the leases of " + std::string(owner), updated.error());
    }
    return {};
  }

  Result<std::vector<QueuedRun>> takeOverExpired(std::string_view owner, int64_t now_ms,
                                                 int64_t lease_ms) override {
    std::lock_guard lock(mutex_);
    reconnectIfLost();
    // One UPDATE: of two instances looking at once, each row goes to one of them.
    auto rows =
        conn_->exec(std::string("UPDATE oe_run_queue SET owner = $1, lease_until_ms = $3 "
                                "WHERE state = 'running' AND owner <> $1 AND lease_until_ms < $2 "
                                "RETURNING ") +
                        kPgColumns,
                    {owner, now_ms, now_ms + lease_ms});
    if (!rows) {
      return failed("take over the runs of a stopped server", rows.error());
    }
    return entriesOf(*rows);
  }

 private:
  // A connection lost by an earlier call (the server restarted) is opened again before the next
  // statement; if that fails, the statement fails and says so.
  void reconnectIfLost() {
    if (!conn_->healthy()) {
      (void)conn_->reconnect();
    }
  }

  Error failed(const std::string& what, const Error& why) const {
    return Error{"cannot " + what + " in the queue of " + pg::redact(conn_->url()) + ": " +
                 why.message};
  }

  std::mutex mutex_;
  std::unique_ptr<pg::Connection> conn_;
};

}  // namespace

Result<std::unique_ptr<RunQueue>> openPgQueue(const std::string& url) {
  pg::ConnectOptions options = pg::retrying(std::chrono::seconds(10), "oe serve queue");
  options.reply_timeout = pg::kReplyTimeout;
  auto conn = pg::Connection::open(url, options);
  if (!conn) {
    return makeError("the run queue of " + pg::redact(url) +
                     " cannot be used: " + conn.error().message);
  }
  if (auto migrated = pg::migrate(**conn); !migrated) {
    return makeError("the run queue of " + pg::redact(url) +
                     " cannot be used: " + migrated.error().message);
  }
  return std::unique_ptr<RunQueue>(std::make_unique<PgQueue>(std::move(conn).value()));
}

}  // namespace oe::service

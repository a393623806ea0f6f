// The PostgreSQL trigger store: oe_trigger_fires and oe_webhook_deliveries (schema version 5),
// and the scheduler's leadership as a session advisory lock; see trigger_store.hpp.
#include <chrono>
#include <functional>
#include <mutex>

#include "oe/pg/connection.hpp"
#include "oe/pg/schema.hpp"
#include "oe/triggers/trigger_store.hpp"

namespace oe::triggers {

namespace {

// The advisory lock the scheduling instance holds: a key of oe's own below 2^31, so that
// pg_locks shows it as classid 0, objid this.
constexpr int64_t kLeaderLock = 0x6f655f74;  // "oe_t"

class PgTriggerStore final : public TriggerStore {
 public:
  explicit PgTriggerStore(std::unique_ptr<pg::Connection> conn) : conn_(std::move(conn)) {}

  Result<bool> claimFire(std::string_view experience, std::string_view trigger_id,
                         int64_t scheduled_ms) override {
    std::lock_guard lock(mutex_);
    // The primary key is the claim: of several instances inserting the same time, one adds the
    // row and the others add nothing.
    auto rows = withRetry([&](pg::Connection& c) {
      return c.exec(
          "INSERT INTO oe_trigger_fires (experience, trigger_id, scheduled_ms) VALUES ($1, $2, "
          "$3) ON CONFLICT DO NOTHING",
          {experience, trigger_id, scheduled_ms});
    });
    if (!rows) {
      return rows.error();
    }
    return rows->affected() == 1;
  }

  Result<std::optional<int64_t>> lastFire(std::string_view experience,
                                          std::string_view trigger_id) override {
    std::lock_guard lock(mutex_);
    auto rows = withRetry([&](pg::Connection& c) {
      return c.exec(
          "SELECT max(scheduled_ms) FROM oe_trigger_fires WHERE experience = $1 AND "
          "trigger_id = $2",
          {experience, trigger_id});
    });
    if (!rows) {
      return rows.error();
    }
    if (rows->empty() || rows->isNull(0, 0)) {
      return std::optional<int64_t>();
    }
    return std::optional<int64_t>(rows->int64(0, 0));
  }

  Result<bool> claimDelivery(std::string_view experience, std::string_view hook,
                             std::string_view delivery_id, int64_t now_ms,
                             int64_t retention_ms) override {
    std::lock_guard lock(mutex_);
    bool added = false;
    auto done = conn_->transaction([&](pg::Connection& c) -> Result<void> {
      if (auto pruned = c.exec("DELETE FROM oe_webhook_deliveries WHERE received_ms < $1",
                               {now_ms - retention_ms});
          !pruned) {
        return pruned.error();
      }
      auto inserted = c.exec(
          "INSERT INTO oe_webhook_deliveries (experience, hook, delivery_id, received_ms) "
          "VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
          {experience, hook, delivery_id, now_ms});
      if (!inserted) {
        return inserted.error();
      }
      added = inserted->affected() == 1;
      return {};
    });
    if (!done) {
      return makeError("cannot record a webhook delivery in " + pg::redact(conn_->url()) + ": " +
                       done.error().message);
    }
    return added;
  }

  Result<bool> tryLead() override {
    std::lock_guard lock(mutex_);
    // Held already (this session's lock is in pg_locks), or taken now. CASE evaluates in order,
    // so a holder does not stack a second hold of the lock. A reconnect (a new session) has lost
    // the lock and takes it again only when no other instance holds it.
    auto rows = withRetry([](pg::Connection& c) {
      return c.exec(
          "SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND "
          "pid = pg_backend_pid() AND classid = 0 AND objid = $1::bigint::oid AND objsubid = 1 "
          "AND granted) THEN true ELSE pg_try_advisory_lock($1::bigint) END",
          {kLeaderLock});
    });
    if (!rows) {
      return rows.error();
    }
    return !rows->empty() && rows->boolean(0, 0);
  }

  void releaseLead() override {
    std::lock_guard lock(mutex_);
    (void)conn_->exec("SELECT pg_advisory_unlock_all()");
  }

 private:
  // One statement, sent again once on a fresh connection when the first was lost (a server
  // restart): every statement here is a single idempotent one.
  Result<pg::Rows> withRetry(const std::function<Result<pg::Rows>(pg::Connection&)>& statement) {
    auto rows = statement(*conn_);
    if (!rows && conn_->lastFailure() == pg::Failure::kConnection) {
      if (auto back = conn_->reconnect(); back) {
        rows = statement(*conn_);
      }
    }
    if (!rows) {
      return makeError("the triggers' store " + pg::redact(conn_->url()) + ": " +
                       rows.error().message);
    }
    return rows;
  }

  std::mutex mutex_;  // a libpq connection is used by one thread at a time
  std::unique_ptr<pg::Connection> conn_;
};

}  // namespace

Result<std::unique_ptr<TriggerStore>> openPgTriggerStore(const std::string& url) {
  // A reply timeout: a server that froze must not hold the scheduler's tick (and so its stop)
  // or a webhook's answer for ever; each statement here takes milliseconds.
  auto conn = pg::Connection::open(url, {.retry_for = std::chrono::seconds(10),
                                         .application_name = "oe triggers",
                                         .reply_timeout = std::chrono::seconds(30)});
  if (!conn) {
    return makeError("the triggers' store " + pg::redact(url) +
                     " cannot be used: " + conn.error().message);
  }
  if (auto migrated = pg::migrate(**conn); !migrated) {
    return makeError("the triggers' store " + pg::redact(url) +
                     " cannot be used: " + migrated.error().message);
  }
  return std::unique_ptr<TriggerStore>(std::make_unique<PgTriggerStore>(std::move(conn).value()));
}

}  // namespace oe::triggers

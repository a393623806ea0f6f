// The SQLite trigger store; see trigger_store.hpp. PostgreSQL's is pg_trigger_store.cpp.
#include "oe/triggers/trigger_store.hpp"

#include <chrono>
#include <functional>
#include <mutex>

#include "oe/common/sqlite.hpp"
#include "oe/pg/connection.hpp"

namespace oe::triggers {

namespace {

constexpr const char* kTriggerSchema =
    "CREATE TABLE IF NOT EXISTS trigger_fires ("
    " experience TEXT NOT NULL, trigger_id TEXT NOT NULL, scheduled_ms INTEGER NOT NULL,"
    " fired_at_ms INTEGER NOT NULL, PRIMARY KEY (experience, trigger_id, scheduled_ms));"
    "CREATE TABLE IF NOT EXISTS webhook_deliveries ("
    " experience TEXT NOT NULL, hook TEXT NOT NULL, delivery_id TEXT NOT NULL,"
    " received_ms INTEGER NOT NULL, PRIMARY KEY (experience, hook, delivery_id));"
    "CREATE INDEX IF NOT EXISTS webhook_deliveries_received ON webhook_deliveries (received_ms);";

int64_t wallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class SqliteTriggerStore final : public TriggerStore {
 public:
  SqliteTriggerStore(sqlite::Db db, std::filesystem::path path)
      : db_(std::move(db)), path_(std::move(path)) {}

  Result<bool> claimFire(std::string_view experience, std::string_view trigger_id,
                         int64_t scheduled_ms) override {
    std::lock_guard lock(mutex_);
    return inTransaction([&]() -> Result<bool> {
      auto insert = sqlite::prepare(db_.get(),
                                    "INSERT OR IGNORE INTO trigger_fires (experience, trigger_id, "
                                    "scheduled_ms, fired_at_ms) VALUES (?1, ?2, ?3, ?4)");
      if (!insert) {
        return insert.error();
      }
      sqlite::bindText(insert->get(), 1, experience);
      sqlite::bindText(insert->get(), 2, trigger_id);
      sqlite3_bind_int64(insert->get(), 3, scheduled_ms);
      sqlite3_bind_int64(insert->get(), 4, wallMs());
      if (sqlite3_step(insert->get()) != SQLITE_DONE) {
        return fail("record a fire");
      }
      return sqlite3_changes(db_.get()) == 1;
    });
  }

  Result<std::optional<int64_t>> lastFire(std::string_view experience,
                                          std::string_view trigger_id) override {
    std::lock_guard lock(mutex_);
    auto select = sqlite::prepare(db_.get(),
                                  "SELECT max(scheduled_ms) FROM trigger_fires WHERE experience = "
                                  "?1 AND trigger_id = ?2");
    if (!select) {
      return select.error();
    }
    sqlite::bindText(select->get(), 1, experience);
    sqlite::bindText(select->get(), 2, trigger_id);
    if (sqlite3_step(select->get()) != SQLITE_ROW) {
      return fail("read the fired-once record");
    }
    if (sqlite3_column_type(select->get(), 0) == SQLITE_NULL) {
      return std::optional<int64_t>();
    }
    return std::optional<int64_t>(sqlite3_column_int64(select->get(), 0));
  }

  Result<bool> claimDelivery(std::string_view experience, std::string_view hook,
                             std::string_view delivery_id, int64_t now_ms,
                             int64_t retention_ms) override {
    std::lock_guard lock(mutex_);
    return inTransaction([&]() -> Result<bool> {
      auto prune =
          sqlite::prepare(db_.get(), "DELETE FROM webhook_deliveries WHERE received_ms < ?1");
      if (!prune) {
        return prune.error();
      }
      sqlite3_bind_int64(prune->get(), 1, now_ms - retention_ms);
      if (sqlite3_step(prune->get()) != SQLITE_DONE) {
        return fail("forget old webhook deliveries");
      }
      auto insert = sqlite::prepare(db_.get(),
                                    "INSERT OR IGNORE INTO webhook_deliveries (experience, hook, "
                                    "delivery_id, received_ms) VALUES (?1, ?2, ?3, ?4)");
      if (!insert) {
        return insert.error();
      }
      sqlite::bindText(insert->get(), 1, experience);
      sqlite::bindText(insert->get(), 2, hook);
      sqlite::bindText(insert->get(), 3, delivery_id);
      sqlite3_bind_int64(insert->get(), 4, now_ms);
      if (sqlite3_step(insert->get()) != SQLITE_DONE) {
        return fail("record a webhook delivery");
      }
      return sqlite3_changes(db_.get()) == 1;
    });
  }

  Result<bool> tryLead() override { return true; }

 private:
  Error fail(const std::string& what) const {
    return makeError("cannot " + what + " in " + path_.string() + ": " +
                     sqlite::errorOf(db_.get()) + "; check the file's permissions and the disk");
  }

  // `work` in one IMMEDIATE transaction (the write lock taken first, so two processes on the
  // file serialise rather than fail on upgrade), rolled back when it fails.
  Result<bool> inTransaction(const std::function<Result<bool>()>& work) {
    sqlite3* h = db_.get();
    if (!sqlite::exec(h, "BEGIN IMMEDIATE")) {
      return fail("start a transaction");
    }
    Result<bool> result = work();
    if (!result) {
      (void)sqlite::exec(h, "ROLLBACK");
      return result;
    }
    if (!sqlite::exec(h, "COMMIT")) {
      Error error = fail("commit");
      (void)sqlite::exec(h, "ROLLBACK");
      return error;
    }
    return result;
  }

  std::mutex mutex_;  // the connection is NOMUTEX: one call at a time
  sqlite::Db db_;
  std::filesystem::path path_;
};

}  // namespace

std::filesystem::path storePath(const std::filesystem::path& workspace_dir) {
  return workspace_dir / "triggers.sqlite";
}

Result<std::unique_ptr<TriggerStore>> TriggerStore::open(const std::string& where) {
  if (pg::isUrl(where)) {
    return openPgTriggerStore(where);
  }
  return openSqliteTriggerStore(where);
}

Result<std::unique_ptr<TriggerStore>> openSqliteTriggerStore(const std::filesystem::path& path) {
  auto db = sqlite::openStoreFile(path, kTriggerSchema, "triggers");
  if (!db) {
    return db.error();
  }
  return std::unique_ptr<TriggerStore>(
      std::make_unique<SqliteTriggerStore>(std::move(db).value(), path));
}

}  // namespace oe::triggers

// The run queue on SQLite: one table in <root>/.openexpertise/serve/queue.db (WAL), one server
// per file (an flock), every call under one mutex (the connection is NOMUTEX). A queued run that
// is cancelled stays as a `cancelled` row (docs/serve.md, "The queue") until dropCancelled.
#include "oe/service/run_queue.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>

#include "oe/common/clock.hpp"
#include "oe/common/sqlite.hpp"
#include "oe/pg/connection.hpp"

namespace oe::service {

// run_queue_pg.cpp
Result<std::unique_ptr<RunQueue>> openPgQueue(const std::string& url);

namespace {

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS run_queue ("
    " run_id TEXT PRIMARY KEY, experience TEXT NOT NULL, folder TEXT NOT NULL, kind TEXT NOT NULL,"
    " resume_of TEXT NOT NULL, args TEXT NOT NULL, options TEXT NOT NULL,"
    " priority INTEGER NOT NULL, enqueued_ms INTEGER NOT NULL, state TEXT NOT NULL,"
    " started_ms INTEGER NOT NULL DEFAULT 0, pid INTEGER NOT NULL DEFAULT 0,"
    " owner TEXT NOT NULL DEFAULT '', lease_until_ms INTEGER NOT NULL DEFAULT 0,"
    " max_concurrent INTEGER NOT NULL DEFAULT 0, cancelled_ms INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS run_queue_order ON run_queue (state, priority DESC, enqueued_ms);";

constexpr const char* kColumns =
    "run_id, experience, kind, resume_of, args, options, priority, enqueued_ms, state, "
    "started_ms, pid, owner, lease_until_ms, max_concurrent, folder, cancelled_ms";

constexpr const char* kOrder =
    " ORDER BY state = 'running' DESC, state = 'cancelled', priority DESC, enqueued_ms, run_id";

// cancelled_ms came after the first queue files: a file written before it gets it here (0: not
// cancelled, which every row of such a file is). The file is this server's alone (its flock).
Result<void> addCancelledColumn(sqlite3* db) {
  auto stmt = sqlite::prepare(db, "PRAGMA table_info(run_queue)");
  if (!stmt) {
    return stmt.error();
  }
  while (sqlite3_step(stmt->get()) == SQLITE_ROW) {
    if (sqlite::columnView(stmt->get(), 1) == "cancelled_ms") {
      return {};
    }
  }
  return sqlite::exec(db,
                      "ALTER TABLE run_queue ADD COLUMN cancelled_ms INTEGER NOT NULL DEFAULT 0");
}

Json queueJsonOr(std::string_view text) {
  Json j = Json::parse(text, nullptr, false);
  return j.is_discarded() ? Json::object() : j;
}

QueuedRun queueRowOf(sqlite3_stmt* stmt) {
  QueuedRun e;
  e.run_id = sqlite::columnText(stmt, 0);
  e.experience = sqlite::columnText(stmt, 1);
  e.kind = sqlite::columnText(stmt, 2);
  e.resume_of = sqlite::columnText(stmt, 3);
  e.args = queueJsonOr(sqlite::columnView(stmt, 4));
  e.options = queueJsonOr(sqlite::columnView(stmt, 5));
  e.priority = sqlite3_column_int(stmt, 6);
  e.enqueued_ms = sqlite3_column_int64(stmt, 7);
  e.state = sqlite::columnText(stmt, 8);
  e.started_ms = sqlite3_column_int64(stmt, 9);
  e.pid = sqlite3_column_int64(stmt, 10);
  e.owner = sqlite::columnText(stmt, 11);
  e.lease_until_ms = sqlite3_column_int64(stmt, 12);
  e.max_concurrent = sqlite3_column_int(stmt, 13);
  e.folder = sqlite::columnText(stmt, 14);
  e.cancelled_ms = sqlite3_column_int64(stmt, 15);
  return e;
}

class SqliteQueue final : public RunQueue {
 public:
  SqliteQueue(sqlite::Db db, std::filesystem::path path, int lock_fd)
      : db_(std::move(db)), path_(std::move(path)), lock_fd_(lock_fd) {}
  ~SqliteQueue() override { ::close(lock_fd_); }
  SqliteQueue(const SqliteQueue&) = delete;
  SqliteQueue& operator=(const SqliteQueue&) = delete;

  Result<void> enqueue(const QueuedRun& entry) override {
    std::lock_guard lock(mutex_);
    auto insert = sqlite::prepare(
        db_.get(),
        "INSERT INTO run_queue (run_id, experience, kind, resume_of, args, options, "
        "priority, enqueued_ms, state, max_concurrent, folder) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'queued', ?9, ?10)");
    if (!insert) {
      return insert.error();
    }
    const std::string args = entry.args.dump();
    const std::string options = entry.options.dump();
    sqlite3_stmt* s = insert->get();
    sqlite::bindText(s, 1, entry.run_id);
    sqlite::bindText(s, 2, entry.experience);
    sqlite::bindText(s, 3, entry.kind);
    sqlite::bindText(s, 4, entry.resume_of);
    sqlite::bindText(s, 5, args);
    sqlite::bindText(s, 6, options);
    sqlite3_bind_int(s, 7, entry.priority);
    sqlite3_bind_int64(s, 8, entry.enqueued_ms);
    sqlite3_bind_int(s, 9, entry.max_concurrent);
    sqlite::bindText(s, 10, entry.folder);
    if (sqlite3_step(s) != SQLITE_DONE) {
      return failed("queue run " + entry.run_id);
    }
    return {};
  }

  Result<std::vector<QueuedRun>> list() override {
    std::lock_guard lock(mutex_);
    return select("", {});
  }

  Result<std::optional<QueuedRun>> find(std::string_view run_id) override {
    std::lock_guard lock(mutex_);
    auto rows = select(" WHERE run_id = ?1", {run_id});
    if (!rows) {
      return rows.error();
    }
    if (rows->empty()) {
      return std::optional<QueuedRun>();
    }
    return std::optional<QueuedRun>(std::move(rows->front()));
  }

  Result<std::optional<QueuedRun>> claim(std::string_view owner, const ClaimLimits& limits,
                                         int64_t lease_ms) override {
    std::lock_guard lock(mutex_);
    if (auto begun = sqlite::exec(db_.get(), "BEGIN IMMEDIATE"); !begun) {
      return failed("claim a queued run");
    }
    // The cancelled rows neither start nor count against the limits.
    auto rows = select(" WHERE state <> 'cancelled'", {});
    if (!rows) {
      (void)sqlite::exec(db_.get(), "ROLLBACK");
      return rows.error();
    }
    auto chosen = pickNext(*rows, limits);
    if (!chosen) {
      (void)sqlite::exec(db_.get(), "ROLLBACK");
      return std::optional<QueuedRun>();
    }
    QueuedRun entry = std::move(*chosen);
    entry.state = "running";
    entry.owner = std::string(owner);
    entry.started_ms = nowMs();
    entry.lease_until_ms = entry.started_ms + lease_ms;
    entry.pid = 0;
    auto update = sqlite::prepare(db_.get(),
                                  "UPDATE run_queue SET state = 'running', owner = ?2, "
                                  "started_ms = ?3, lease_until_ms = ?4, pid = 0 "
                                  "WHERE run_id = ?1");
    if (!update) {
      (void)sqlite::exec(db_.get(), "ROLLBACK");
      return update.error();
    }
    sqlite::bindText(update->get(), 1, entry.run_id);
    sqlite::bindText(update->get(), 2, entry.owner);
    sqlite3_bind_int64(update->get(), 3, entry.started_ms);
    sqlite3_bind_int64(update->get(), 4, entry.lease_until_ms);
    if (sqlite3_step(update->get()) != SQLITE_DONE || !sqlite::exec(db_.get(), "COMMIT")) {
      Error error = failed("claim run " + entry.run_id);
      (void)sqlite::exec(db_.get(), "ROLLBACK");
      return error;
    }
    return std::optional<QueuedRun>(std::move(entry));
  }

  Result<void> setPid(std::string_view run_id, int64_t pid) override {
    std::lock_guard lock(mutex_);
    auto changed = change("UPDATE run_queue SET pid = ?2 WHERE run_id = ?1", run_id, pid);
    if (!changed) {
      return changed.error();
    }
    return {};
  }

  Result<bool> remove(std::string_view run_id) override {
    std::lock_guard lock(mutex_);
    auto changed = change("DELETE FROM run_queue WHERE run_id = ?1", run_id, 0);
    if (!changed) {
      return changed.error();
    }
    return *changed > 0;
  }

  Result<bool> cancelQueued(std::string_view run_id, int64_t now_ms) override {
    std::lock_guard lock(mutex_);
    auto changed = change(
        "UPDATE run_queue SET state = 'cancelled', cancelled_ms = ?2 "
        "WHERE run_id = ?1 AND state = 'queued'",
        run_id, now_ms);
    if (!changed) {
      return changed.error();
    }
    return *changed > 0;
  }

  Result<int> dropCancelled(int64_t before_ms) override {
    std::lock_guard lock(mutex_);
    auto drop = sqlite::prepare(
        db_.get(), "DELETE FROM run_queue WHERE state = 'cancelled' AND cancelled_ms < ?1");
    if (!drop) {
      return drop.error();
    }
    sqlite3_bind_int64(drop->get(), 1, before_ms);
    if (sqlite3_step(drop->get()) != SQLITE_DONE) {
      return failed("drop the cancelled runs");
    }
    return sqlite3_changes(db_.get());
  }

  Result<void> requeue(const QueuedRun& entry) override {
    std::lock_guard lock(mutex_);
    auto update = sqlite::prepare(db_.get(),
                                  "UPDATE run_queue SET state = 'queued', owner = '', pid = 0, "
                                  "started_ms = 0, lease_until_ms = 0, kind = ?2, resume_of = ?3 "
                                  "WHERE run_id = ?1");
    if (!update) {
      return update.error();
    }
    sqlite::bindText(update->get(), 1, entry.run_id);
    sqlite::bindText(update->get(), 2, entry.kind);
    sqlite::bindText(update->get(), 3, entry.resume_of);
    if (sqlite3_step(update->get()) != SQLITE_DONE) {
      return failed("requeue run " + entry.run_id);
    }
    return {};
  }

  Result<void> renew(std::string_view owner, int64_t lease_ms) override {
    std::lock_guard lock(mutex_);
    auto update = sqlite::prepare(
        db_.get(),
        "UPDATE run_queue SET lease_until_ms = ?2 WHERE owner = ?1 AND state = 'running'");
    if (!update) {
      return update.error();
    }
    sqlite::bindText(update->get(), 1, owner);
    sqlite3_bind_int64(update->get(), 2, nowMs() + lease_ms);
    if (sqlite3_step(update->get()) != SQLITE_DONE) {
      return failed("renew the leases of " + std::string(owner));
    }
    return {};
  }

  Result<std::vector<QueuedRun>> takeOverExpired(std::string_view owner, int64_t /*now_ms*/,
                                                 int64_t lease_ms) override {
    std::lock_guard lock(mutex_);
    // The file is ours alone (the flock): whatever another owner left running was a server of
    // this root that died.
    auto rows = select(" WHERE state = 'running' AND owner <> ?1", {owner});
    if (!rows) {
      return rows.error();
    }
    auto update = sqlite::prepare(
        db_.get(), "UPDATE run_queue SET owner = ?2, lease_until_ms = ?3 WHERE run_id = ?1");
    if (!update) {
      return update.error();
    }
    for (auto& entry : *rows) {
      sqlite::StmtScope scope(update->get());
      entry.owner = std::string(owner);
      entry.lease_until_ms = nowMs() + lease_ms;
      sqlite::bindText(update->get(), 1, entry.run_id);
      sqlite::bindText(update->get(), 2, entry.owner);
      sqlite3_bind_int64(update->get(), 3, entry.lease_until_ms);
      if (sqlite3_step(update->get()) != SQLITE_DONE) {
        return failed("take over run " + entry.run_id);
      }
    }
    return rows;
  }

 private:
  Error failed(const std::string& what) const {
    return Error{"cannot " + what + " in " + path_.string() + ": " + sqlite::errorOf(db_.get()) +
                 "; check the file's permissions and the disk"};
  }

  Result<std::vector<QueuedRun>> select(const std::string& where,
                                        std::vector<std::string_view> binds) {
    auto stmt = sqlite::prepare(
        db_.get(), std::string("SELECT ") + kColumns + " FROM run_queue" + where + kOrder);
    if (!stmt) {
      return stmt.error();
    }
    for (size_t i = 0; i < binds.size(); ++i) {
      sqlite::bindText(stmt->get(), static_cast<int>(i + 1), binds[i]);
    }
    std::vector<QueuedRun> out;
    while (true) {
      const int rc = sqlite3_step(stmt->get());
      if (rc == SQLITE_ROW) {
        out.push_back(queueRowOf(stmt->get()));
        continue;
      }
      if (rc != SQLITE_DONE) {
        return failed("read the queue");
      }
      return out;
    }
  }

  Result<int> change(const char* sql, std::string_view run_id, int64_t value) {
    auto stmt = sqlite::prepare(db_.get(), sql);
    if (!stmt) {
      return stmt.error();
    }
    sqlite::bindText(stmt->get(), 1, run_id);
    if (sqlite3_bind_parameter_count(stmt->get()) >= 2) {
      sqlite3_bind_int64(stmt->get(), 2, value);
    }
    if (sqlite3_step(stmt->get()) != SQLITE_DONE) {
      return failed("update run " + std::string(run_id));
    }
    return sqlite3_changes(db_.get());
  }

  std::mutex mutex_;
  sqlite::Db db_;
  std::filesystem::path path_;
  int lock_fd_;
};

}  // namespace

std::optional<QueuedRun> pickNext(const std::vector<QueuedRun>& entries,
                                  const ClaimLimits& limits) {
  int running = 0;
  std::map<std::string, int> per_experience;
  for (const auto& e : entries) {
    if (e.state == "running") {
      ++running;
      ++per_experience[e.folder];
    }
  }
  if (limits.global > 0 && running >= limits.global) {
    return std::nullopt;
  }
  // `entries` are in start order: the first queued one its experience's limit allows.
  for (const auto& e : entries) {
    if (e.state != "queued") {
      continue;
    }
    const int cap = e.max_concurrent > 0 ? e.max_concurrent : limits.per_experience;
    if (cap > 0 && per_experience[e.folder] >= cap) {
      continue;
    }
    return e;
  }
  return std::nullopt;
}

Json QueuedRun::toJson() const {
  Json out = {{"id", run_id},
              {"status", state},
              {"experience", experience},
              {"folder", folder},
              {"kind", kind},
              {"priority", priority},
              {"enqueued_at", isoTime(enqueued_ms / 1000, static_cast<int>(enqueued_ms % 1000))}};
  if (!resume_of.empty()) {
    out["resume_of"] = resume_of;
  }
  if (state == "running" && started_ms > 0) {
    out["started_at"] = isoTime(started_ms / 1000, static_cast<int>(started_ms % 1000));
  }
  if (state == "cancelled" && cancelled_ms > 0) {
    out["cancelled_at"] = isoTime(cancelled_ms / 1000, static_cast<int>(cancelled_ms % 1000));
  }
  return out;
}

int64_t nowMs() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

std::filesystem::path RunQueue::defaultPath(const std::filesystem::path& root) {
  return root / ".openexpertise" / "serve" / "queue.db";
}

Result<std::unique_ptr<RunQueue>> RunQueue::open(const std::string& where) {
  if (pg::isUrl(where)) {
    return openPgQueue(where);
  }
  const std::filesystem::path path(where);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  const std::string lock_path = path.string() + ".lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return makeError("cannot open " + lock_path + ": " + std::strerror(errno) +
                     "; check the folder's permissions");
  }
  int rc = 0;
  do {
    rc = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    ::close(fd);
    return makeError("the run queue " + path.string() +
                     " is in use by another `oe serve` of this root; stop it first, or serve "
                     "another --root (several servers share one queue through --store URL)");
  }
  auto db = sqlite::openStoreFile(path, kSchema, "run queue");
  if (!db) {
    ::close(fd);
    return db.error();
  }
  if (auto added = addCancelledColumn(db->get()); !added) {
    ::close(fd);
    return makeError("the run queue file " + path.string() + " cannot be used: " +
                     added.error().message + "; check its permissions and the disk");
  }
  return std::unique_ptr<RunQueue>(std::make_unique<SqliteQueue>(std::move(db).value(), path, fd));
}

}  // namespace oe::service

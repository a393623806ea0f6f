// A tiny header-only RAII layer over the sqlite3 C API, shared by the state store and the cache
// (neither depends on the other). Include it only from .cpp files of modules that link SQLite.
#pragma once

#include "oe/common/clock.hpp"

#include <sqlite3.h>

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "oe/common/result.hpp"
#include "oe/common/sqlite_vfs.hpp"

namespace oe::sqlite {

struct DbCloser {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* stmt) const noexcept { sqlite3_finalize(stmt); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

inline std::string errorOf(sqlite3* db) { return db ? sqlite3_errmsg(db) : "out of memory"; }

// Opens (creating if needed) a database for one thread at a time: NOMUTEX skips SQLite's own
// per-call mutex, so every owner must serialise its calls (the stores document how they do).
// Through the WAL-batching VFS (sqlite_vfs.hpp): one pwrite per commit instead of two per page.
inline Result<Db> open(const std::filesystem::path& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 vfs::name());
  Db db(raw);
  if (rc != SQLITE_OK) {
    return makeError("cannot open SQLite database " + path.string() + ": " + errorOf(db.get()));
  }
  sqlite3_extended_result_codes(db.get(), 1);
  return db;
}

inline Result<void> exec(sqlite3* db, const char* sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string text = msg ? msg : errorOf(db);
    sqlite3_free(msg);
    return makeError(std::move(text));
  }
  return {};
}

// WAL + synchronous=NORMAL: a commit costs ~27 µs instead of ~190 µs with an fsync (see
// machine-limits §1); a power loss can lose the last commits but never corrupts the file.
// A NEW file gets 1 KiB pages (SQLite's default is 4 KiB): a commit writes one WAL frame per
// page it touches (a state write touches ~5), so smaller pages copy and checksum a quarter of
// the bytes, ~25% of a commit here (docs/performance.md). Any SQLite reads any page size; on an
// existing file the pragma does nothing. The WAL is checkpointed every 10,000 frames (10 MiB
// of 1 KiB pages) rather than 1,000: each checkpoint pays two fdatasync, 0.2 ms on a quiet
// disk and several ms on a busy one, which was the largest wait of a run. The page cache is
// 1 MiB per connection (SQLite's default: 2 MiB): the stores write in batches and read little,
// and a run holds two connections. The busy timeout comes first: switching a new file to WAL
// takes a lock, which two nested runs (or two processes) opening the same cache at once meet.
inline Result<void> useWal(sqlite3* db) {
  if (auto r = exec(db, "PRAGMA busy_timeout = 5000; PRAGMA page_size = 1024;"); !r) {
    return r;
  }
  // Switching a new file to WAL can meet another opener mid-switch with SQLITE_BUSY before the
  // busy handler is consulted; the switch is idempotent, so it is retried for the same 5 s.
  for (int attempt = 0;; ++attempt) {
    auto r = exec(db, "PRAGMA journal_mode = WAL;");
    if (r) {
      break;
    }
    if (attempt == 500 || (sqlite3_errcode(db) & 0xFF) != SQLITE_BUSY) {
      return r;
    }
    sqlite3_sleep(10);
  }
  return exec(db,
              "PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 10000; "
              "PRAGMA cache_size = -1024;");
}

// Creates a store's tables. In one IMMEDIATE transaction: as separate autocommit statements, two
// openers of a new file each read the old schema and then both want to write it, and SQLite
// answers the second one SQLITE_BUSY at once (waiting could deadlock), busy timeout or not.
inline Result<void> createSchema(sqlite3* db, const char* schema_sql) {
  if (auto r = exec(db, "BEGIN IMMEDIATE"); !r) {
    return r;
  }
  if (auto r = exec(db, schema_sql); !r) {
    (void)exec(db, "ROLLBACK");
    return r;
  }
  return exec(db, "COMMIT");
}

// A store's own SQLite file (approvals, triggers, ...): its folder made, opened in WAL mode, its
// schema created. The error names `what` and the file and says what to check.
inline Result<Db> openStoreFile(const std::filesystem::path& path, const char* schema_sql,
                                std::string_view what) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  auto db = open(path);
  if (!db) {
    return db.error();
  }
  const auto fail = [&](const Error& e) {
    return makeError("the " + std::string(what) + " file " + path.string() +
                     " cannot be used: " + e.message + "; check its permissions and the disk");
  };
  if (auto wal = useWal(db->get()); !wal) {
    return fail(wal.error());
  }
  if (auto schema = createSchema(db->get(), schema_sql); !schema) {
    return fail(schema.error());
  }
  return db;
}

inline Result<Stmt> prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                         &raw, nullptr) != SQLITE_OK) {
    return makeError("cannot prepare `" + std::string(sql) + "`: " + errorOf(db));
  }
  return Stmt(raw);
}

// Binds text without copying: the caller keeps `text` alive until the statement is reset, which
// a StmtScope declared after the bound strings guarantees.
inline void bindText(sqlite3_stmt* stmt, int index, std::string_view text) {
  sqlite3_bind_text(stmt, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
}

inline std::string columnText(sqlite3_stmt* stmt, int column) {
  const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
  return data ? std::string(data, static_cast<size_t>(sqlite3_column_bytes(stmt, column)))
              : std::string();
}

inline std::string_view columnView(sqlite3_stmt* stmt, int column) {
  const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
  return data ? std::string_view(data, static_cast<size_t>(sqlite3_column_bytes(stmt, column)))
              : std::string_view();
}

// Resets a kept prepared statement when the scope ends, so it can be reused and releases the
// strings bound to it; the statement itself lives as long as its store.
class StmtScope {
 public:
  explicit StmtScope(sqlite3_stmt* stmt) noexcept : stmt_(stmt) {}
  ~StmtScope() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  StmtScope(const StmtScope&) = delete;
  StmtScope& operator=(const StmtScope&) = delete;

 private:
  sqlite3_stmt* stmt_;
};

// Opens a write transaction and fills temp.gc_keep(run_id) with `run_ids`, for a prune that
// deletes what no kept run refers to: the count and the delete then see the same rows. On
// failure the transaction is rolled back.
template <class Strings>
inline Result<void> beginWithKeptRuns(sqlite3* h, const Strings& run_ids) {
  auto fail = [h](Error error) -> Result<void> {
    (void)exec(h, "ROLLBACK");  // fails harmlessly when no transaction is open
    return error;
  };
  if (auto r = exec(h, "CREATE TEMP TABLE IF NOT EXISTS gc_keep (run_id TEXT PRIMARY KEY);"
                       "BEGIN IMMEDIATE; DELETE FROM temp.gc_keep;");
      !r) {
    return fail(r.error());
  }
  auto insert = prepare(h, "INSERT OR IGNORE INTO temp.gc_keep (run_id) VALUES (?1)");
  if (!insert) {
    return fail(insert.error());
  }
  for (const std::string& id : run_ids) {
    StmtScope scope(insert->get());
    bindText(insert->get(), 1, id);
    if (sqlite3_step(insert->get()) != SQLITE_DONE) {
      return fail(Error{errorOf(h)});
    }
  }
  return {};
}

// The text of every timestamp column oe writes (common/clock.hpp).
inline std::string isoNow() { return oe::isoNow(); }

}  // namespace oe::sqlite

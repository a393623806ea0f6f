// The state store's SQLite side (internal to oe_state): its schema and statements, the prepared
// statements a StateStore holds, and where its journals live. Shared by the files StateStore's
// members are spread over (state_store, sqlite_journal, history, maintenance).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "oe/common/result.hpp"
#include "oe/common/sqlite.hpp"
#include "oe/state/state_store.hpp"

namespace oe::state {

inline constexpr const char* kSchemaSql =
    "CREATE TABLE IF NOT EXISTS state_snapshot (field TEXT PRIMARY KEY, value TEXT NOT NULL, "
    "updated_at TEXT NOT NULL, updated_by_node TEXT NOT NULL, updated_by_run TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS state_history (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "field TEXT NOT NULL, value_old TEXT, value_new TEXT NOT NULL, node_id TEXT NOT NULL, "
    "run_id TEXT NOT NULL, ts TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS idx_history_field ON state_history(field);"
    "CREATE INDEX IF NOT EXISTS idx_history_run ON state_history(run_id);"
    // oe's own (not upstream's): how far each group-commit journal is folded.
    "CREATE TABLE IF NOT EXISTS oe_journal_folds (journal TEXT PRIMARY KEY, "
    "folded_bytes INTEGER NOT NULL);"
    // oe's own: the writes that landed in each chain of runs (`oe resume` does not apply them
    // again), the chains (numbered, so a mark does not repeat the chain's id) and the runs
    // that landed writes in each (oe gc keeps a chain's marks while one of them is kept).
    "CREATE TABLE IF NOT EXISTS oe_chains (id INTEGER PRIMARY KEY, "
    "chain_id TEXT NOT NULL UNIQUE);"
    "CREATE TABLE IF NOT EXISTS oe_chain_runs (chain INTEGER NOT NULL, run_id TEXT NOT NULL, "
    "PRIMARY KEY (chain, run_id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS oe_landed_writes (chain INTEGER NOT NULL, "
    "write_key TEXT NOT NULL, input_key TEXT NOT NULL, PRIMARY KEY (chain, write_key)) "
    "WITHOUT ROWID;"
    // The marks as oe writes them now: one row per (chain, commit), `marks` a JSON array of
    // [write_key, input_key] pairs in landing order (a later pair with the same key wins).
    // A row per mark cost a B-tree insert per node write; oe_landed_writes, above, keeps the
    // marks older versions wrote, which are still read.
    "CREATE TABLE IF NOT EXISTS oe_landed_batches (id INTEGER PRIMARY KEY, "
    "chain INTEGER NOT NULL, marks TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS idx_landed_batches_chain ON oe_landed_batches(chain);";

inline constexpr std::string_view kUpsertSql =
    "INSERT INTO state_snapshot (field, value, updated_at, updated_by_node, updated_by_run) "
    "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(field) DO UPDATE SET value = excluded.value, "
    "updated_at = excluded.updated_at, updated_by_node = excluded.updated_by_node, "
    "updated_by_run = excluded.updated_by_run";
inline constexpr std::string_view kHistorySql =
    "INSERT INTO state_history (field, value_old, value_new, node_id, run_id, ts) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
inline constexpr std::string_view kByFieldSql =
    "SELECT id, field, value_old, value_new, node_id, run_id, ts FROM state_history "
    "WHERE field = ?1 ORDER BY id";
inline constexpr std::string_view kFoldedSql =
    "INSERT INTO oe_journal_folds (journal, folded_bytes) VALUES (?1, ?2) "
    "ON CONFLICT(journal) DO UPDATE SET folded_bytes = excluded.folded_bytes";
inline constexpr std::string_view kSnapshotOfSql =
    "SELECT value FROM state_snapshot WHERE field = ?1";
inline constexpr std::string_view kChainSql =
    "INSERT INTO oe_chains (chain_id) VALUES (?1) ON CONFLICT(chain_id) DO NOTHING";
inline constexpr std::string_view kChainNumberSql =
    "SELECT id FROM oe_chains WHERE chain_id = ?1";
inline constexpr std::string_view kMemberSql =
    "INSERT INTO oe_chain_runs (chain, run_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING";
inline constexpr std::string_view kMarkSql =
    "INSERT INTO oe_landed_batches (chain, marks) VALUES (?1, ?2)";
// The rows of older versions first, then the batches in commit order: a later mark wins.
inline constexpr std::string_view kMarksOfChainSql =
    "SELECT write_key, input_key, NULL FROM oe_landed_writes WHERE chain = "
    "(SELECT id FROM oe_chains WHERE chain_id = ?1) UNION ALL "
    "SELECT * FROM (SELECT NULL, NULL, marks FROM oe_landed_batches WHERE chain = "
    "(SELECT id FROM oe_chains WHERE chain_id = ?1) ORDER BY id)";
inline constexpr std::string_view kFoldedBytesSql =
    "SELECT folded_bytes FROM oe_journal_folds WHERE journal = ?1";
inline constexpr std::string_view kByRunSql =
    "SELECT id, field, value_old, value_new, node_id, run_id, ts FROM state_history "
    "WHERE run_id = ?1 ORDER BY id";

// The journals of the database at `db`: `<db file name>-oe-journal-<pid>-<random>.jsonl`.
inline std::string journalPrefix(const std::filesystem::path& db) {
  return db.filename().string() + "-oe-journal-";
}

inline std::filesystem::path dirOf(const std::filesystem::path& db) {
  return db.has_parent_path() ? db.parent_path() : std::filesystem::path(".");
}

struct StateStore::Sql {
  sqlite::Db db;
  sqlite::Stmt begin;
  sqlite::Stmt commit;
  sqlite::Stmt rollback;
  sqlite::Stmt upsert;
  sqlite::Stmt insert_history;
  sqlite::Stmt folded;
  sqlite::Stmt snapshot_of;
  sqlite::Stmt insert_chain;
  sqlite::Stmt chain_number;
  sqlite::Stmt insert_member;
  sqlite::Stmt insert_mark;
  sqlite::Stmt by_field;
  sqlite::Stmt by_run;
};


inline Result<void> stepDone(sqlite3* db, sqlite3_stmt* stmt) {
  const int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE) {
    std::string msg = sqlite::errorOf(db);
    sqlite3_reset(stmt);
    return makeError(std::move(msg));
  }
  sqlite3_reset(stmt);
  return {};
}

}  // namespace oe::state

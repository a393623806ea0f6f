// Maintenance of a state database, called by `oe gc`, `oe reset-state`, a run's retention and
// `oe evolve`, not by the store: pruning history rows no kept run needs, removing the files.
#include "oe/state/state_store.hpp"

#include <system_error>

#include "oe/common/sqlite.hpp"
#include "oe/state/store_sql.hpp"
#include "oe/state/value_codec.hpp"

namespace oe::state {

Result<HistoryPruneStats> pruneHistory(const std::filesystem::path& db_path,
                                       const std::unordered_set<std::string>& keep_runs,
                                       bool dry_run,
                                       const std::unordered_set<std::string>& keep_chains) {
  HistoryPruneStats stats;
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) {
    return stats;
  }
  const std::string where = "cannot prune the state history in " + db_path.string() + ": ";
  auto db = sqlite::open(db_path);
  if (!db) {
    return makeError(where + db.error().message);
  }
  sqlite3* h = db->get();
  auto fail = [&](const std::string& message) -> Result<HistoryPruneStats> {
    (void)sqlite::exec(h, "ROLLBACK");  // fails harmlessly when no transaction is open
    return makeError(where + message);
  };
  if (auto r = sqlite::useWal(h); !r) {
    return fail(r.error().message);
  }
  if (auto r = sqlite::createSchema(h, kSchemaSql); !r) {
    return fail(r.error().message);
  }
  // The kept runs go into a temp table; the count and the delete share one transaction so the
  // report matches what was deleted even if a run writes meanwhile.
  if (auto r = sqlite::beginWithKeptRuns(h, keep_runs); !r) {
    return fail(r.error().message);
  }
  // Per field, its newest row with a full value (not an append, D17): that row and every row
  // after it explain the current value and are kept.
  if (auto r = sqlite::exec(
          h,
          "CREATE TEMP TABLE IF NOT EXISTS gc_base (field TEXT PRIMARY KEY, base_id INTEGER);"
          "DELETE FROM temp.gc_base;"
          "INSERT INTO temp.gc_base SELECT field, MAX(id) FROM state_history WHERE "
          "value_old IS NULL OR substr(value_old, 1, 14) != '{\"$oe_append\":' GROUP BY field;");
      !r) {
    return fail(r.error().message);
  }
  constexpr std::string_view kPrunable =
      " FROM state_history WHERE run_id NOT IN (SELECT run_id FROM temp.gc_keep) AND "
      "id < (SELECT base_id FROM temp.gc_base b WHERE b.field = state_history.field)";
  {
    auto count = sqlite::prepare(
        h, std::string("SELECT COUNT(*), COALESCE(SUM(COALESCE(length(CAST(value_old AS BLOB)), "
                       "0) + length(CAST(value_new AS BLOB))), 0)") +
               std::string(kPrunable));
    if (!count) {
      return fail(count.error().message);
    }
    if (sqlite3_step(count->get()) != SQLITE_ROW) {
      return fail(sqlite::errorOf(h));
    }
    stats.rows = static_cast<size_t>(sqlite3_column_int64(count->get(), 0));
    stats.value_bytes = static_cast<uint64_t>(sqlite3_column_int64(count->get(), 1));
  }
  if (!dry_run && stats.rows > 0) {
    if (auto r = sqlite::exec(h, ("DELETE" + std::string(kPrunable)).c_str()); !r) {
      return fail(r.error().message);
    }
  }
  // Landed-write marks of chains that no kept run belongs to.
  if (auto r = sqlite::exec(h, "CREATE TEMP TABLE IF NOT EXISTS gc_keep_chains (chain_id TEXT "
                               "PRIMARY KEY); DELETE FROM temp.gc_keep_chains;");
      !r) {
    return fail(r.error().message);
  }
  {
    auto insert = sqlite::prepare(h, "INSERT OR IGNORE INTO temp.gc_keep_chains VALUES (?1)");
    if (!insert) {
      return fail(insert.error().message);
    }
    for (const std::string& id : keep_chains) {
      sqlite::StmtScope scope(insert->get());
      sqlite::bindText(insert->get(), 1, id);
      if (sqlite3_step(insert->get()) != SQLITE_DONE) {
        return fail(sqlite::errorOf(h));
      }
    }
  }
  if (auto r = sqlite::exec(
          h,
          "CREATE TEMP TABLE IF NOT EXISTS gc_doomed_chains (id INTEGER PRIMARY KEY);"
          "DELETE FROM temp.gc_doomed_chains;"
          "INSERT INTO temp.gc_doomed_chains SELECT id FROM oe_chains WHERE "
          "chain_id NOT IN (SELECT run_id FROM temp.gc_keep) AND "
          "chain_id NOT IN (SELECT chain_id FROM temp.gc_keep_chains) AND "
          "id NOT IN (SELECT chain FROM oe_chain_runs WHERE run_id IN "
          "(SELECT run_id FROM temp.gc_keep));");
      !r) {
    return fail(r.error().message);
  }
  {
    auto count = sqlite::prepare(
        h,
        "SELECT (SELECT COUNT(*) FROM oe_landed_writes WHERE chain IN "
        "(SELECT id FROM temp.gc_doomed_chains)) + (SELECT COALESCE(SUM(json_array_length("
        "CASE WHEN json_valid(marks) THEN marks ELSE '[]' END)), 0) FROM oe_landed_batches "
        "WHERE chain IN (SELECT id FROM temp.gc_doomed_chains))");
    if (!count) {
      return fail(count.error().message);
    }
    if (sqlite3_step(count->get()) != SQLITE_ROW) {
      return fail(sqlite::errorOf(h));
    }
    stats.marks = static_cast<size_t>(sqlite3_column_int64(count->get(), 0));
  }
  if (!dry_run) {
    if (auto r = sqlite::exec(
            h,
            "DELETE FROM oe_landed_writes WHERE chain IN (SELECT id FROM temp.gc_doomed_chains);"
            "DELETE FROM oe_landed_batches WHERE chain IN (SELECT id FROM temp.gc_doomed_chains);"
            "DELETE FROM oe_chain_runs WHERE chain IN (SELECT id FROM temp.gc_doomed_chains);"
            "DELETE FROM oe_chains WHERE id IN (SELECT id FROM temp.gc_doomed_chains);");
        !r) {
      return fail(r.error().message);
    }
  }
  if (auto r = sqlite::exec(h, "COMMIT"); !r) {
    return fail(r.error().message);
  }
  if (dry_run) {
    return stats;
  }
  int64_t free_pages = 0;
  if (auto pragma = sqlite::prepare(h, "PRAGMA freelist_count");
      pragma && sqlite3_step(pragma->get()) == SQLITE_ROW) {
    free_pages = sqlite3_column_int64(pragma->get(), 0);
  }
  // VACUUM rewrites the whole file: only worth it when pages were freed. It goes through the
  // WAL; the TRUNCATE checkpoint copies it back and empties the WAL (also the one a killed run
  // left behind).
  if (free_pages > 0) {
    if (auto r = sqlite::exec(h, "VACUUM"); !r) {
      return makeError(where + "VACUUM failed: " + r.error().message);
    }
  }
  if (auto r = sqlite::exec(h, "PRAGMA wal_checkpoint(TRUNCATE)"); !r) {
    return makeError(where + "checkpoint failed: " + r.error().message);
  }
  return stats;
}

Result<void> removeStateFiles(const std::filesystem::path& db_path) {
  std::vector<std::filesystem::path> files = Journal::list(dirOf(db_path), journalPrefix(db_path));
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::filesystem::path p = db_path;
    p += suffix;
    files.push_back(std::move(p));
  }
  for (const std::filesystem::path& p : files) {
    std::error_code ec;
    std::filesystem::remove(p, ec);
    if (ec && ec != std::errc::no_such_file_or_directory) {
      return makeError("cannot remove " + p.string() + ": " + ec.message());
    }
  }
  return {};
}

}  // namespace oe::state

// `oe gc` on a PostgreSQL store (docs/storage.md): the same retention as on the SQLite files,
// for one scope, in one transaction. With a retention rule the caller holds the scope's lock
// (holdScope), so no run of the scope is in progress and every run without an end is dead.
// With `GcPolicy::runs` (`DELETE /api/runs/{id}` of `oe serve`) it removes those finished runs
// alone, and the lock is not needed: see pruneScope.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/pg/connection.hpp"

namespace oe::pgstore {

struct GcPolicy {
  std::optional<int64_t> keep;        // keep the N newest runs
  std::optional<int64_t> max_age_ms;  // prune runs started longer ago
  bool dry_run = false;               // count only
  // When not empty: remove exactly these runs of the scope (ids not in it are ignored) and keep
  // every other, whatever `keep` and `max_age_ms` say. Each must have ended (its status is not
  // `running`), or the caller holds the scope's lock.
  std::vector<std::string> runs;
};

struct GcReport {
  std::vector<std::string> kept;     // newest first
  std::vector<std::string> removed;  // newest first
  int64_t events = 0;                // oe_events lines of the removed runs
  int64_t attempts = 0;              // their oe_attempts rows
  int64_t cache_entries = 0;         // written and last used by removed runs only
  int64_t history_rows = 0;          // as pruneHistory: a field's newest full value and later stay
  int64_t landed_marks = 0;          // of chains no kept run belongs to
  int64_t write_claims = 0;          // oe_state_writes rows of the removed runs (a finished run
                                     // sends none of its writes again)
  int64_t bytes = 0;                 // the text of what went (or would go)
};

// Prunes the runs of `scope` that `policy` does not keep, and with them their events, attempts,
// the cache entries no kept run wrote or last used, their state history rows (each field's
// newest row holding a full value, and every row after it, stay: the history still explains
// the current state; the snapshot is not touched) and the landed-write marks of chains no kept
// run belongs to, and the write claims of the removed runs. A run is kept when either rule
// keeps it (--keep N and --older-than).
//
// With `policy.runs` the same targets remove those runs alone; the landed-write marks looked at
// are those of their chains only. No lock is needed for runs that ended, while other runs of the
// scope go on: everything removed is keyed by a removed run (events, attempts, write claims, its
// oe_runs row: a finished run writes none of them again) or is kept for the others by the rules
// above (a cache entry another run last used, a field's newest full history row and every later
// one, the marks of a chain a kept run belongs to, read in the same transaction: a run's row is
// in oe_runs before its first write). The scope's row in oe_scopes is held in share mode for the
// transaction, so a run that takes the scope meanwhile waits for it rather than start between the
// list of kept runs and the deletes (see pruneScope's body for what is left). Two things this
// does not cover, as `oe gc` under the lock does not: a cache entry a removed run alone wrote
// goes even while a running run replays it (last_used_run is written at a run's end; that run
// has the output already, later reuse is lost), and an `oe resume` of a removed run that looked
// it up before the transaction continues its chain without the marks that went.
Result<GcReport> pruneScope(pg::Connection& conn, const std::string& scope,
                            const GcPolicy& policy);

}  // namespace oe::pgstore

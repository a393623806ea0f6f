// `oe gc` on an experience's files, without the CLI (docs/durability.md): which runs a retention
// policy keeps, and the pruning of the others: their logs and definition pins, the cache entries
// no kept run refers to, their state history rows and the landed-write marks of chains no kept
// run belongs to, then the compaction of the SQLite files. And, after a PostgreSQL store's gc
// (pgstore/gc), the local logs of the runs it removed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "oe/runs/run_history.hpp"

namespace oe::runs {

// An unfinished run whose log changed this recently may still be running: never pruned.
inline constexpr int64_t kMaybeRunningMs = 10 * 60 * 1000;

struct RetentionPolicy {
  std::optional<int64_t> keep;        // keep the N newest runs (--keep)
  std::optional<int64_t> max_age_ms;  // prune the runs started longer ago (--older-than)
  bool dry_run = false;               // count only, delete nothing
};

// Which runs stay: the newest `keep` and/or those younger than the cutoff (a run goes when
// either rule prunes it), plus any unfinished run whose log changed in the last
// kMaybeRunningMs (deleting its log under it would lose its history).
struct Retention {
  std::unordered_set<std::string> keep;  // run ids
  std::vector<const RunRecord*> doomed;  // into the runs given, in their order
  size_t kept_running = 0;               // unfinished runs kept because they may be running
};
// `runs`: newest first, as listRuns gives them (with details); `now_ms`: ms since the epoch.
[[nodiscard]] Retention selectRuns(const std::vector<RunRecord>& runs,
                                   const RetentionPolicy& policy, int64_t now_ms);

// The chains the runs in `keep` belong to: the chain_id their run.started names, and for logs
// from before chains were recorded, their resumed_from and that run's, as far as `runs` tell.
// Their landed-write marks stay.
[[nodiscard]] std::unordered_set<std::string> keptChains(
    const std::vector<RunRecord>& runs, const std::unordered_set<std::string>& keep);

struct GcReport {
  size_t runs_kept = 0;
  std::vector<std::string> removed;  // run ids, newest first
  size_t cache_entries = 0;
  size_t history_rows = 0;
  size_t landed_marks = 0;
  uint64_t log_bytes = 0;    // the logs and pins removed
  uint64_t bytes_freed = 0;  // measured on the files; a dry run's is an estimate
  size_t kept_maybe_running = 0;
  // What went wrong, in the order it happened, each as a front end prints it after "oe: " (a
  // warning starts with "warning: "); `failed` when part of the work was not done.
  std::vector<std::string> problems;
  bool failed = false;
};

// Applies `policy` to the runs of the workspace `workspace` (.openexpertise/ of the experience)
// whose state store is `state_db`: removes the logs and pins of the runs it does not keep (a log
// that cannot be removed keeps its run), prunes the cache entries and the state history rows
// only they used, and compacts both SQLite files. The caller holds the state store's lock
// (unless `policy.dry_run`), so no run starts meanwhile.
[[nodiscard]] GcReport collectGarbage(const std::filesystem::path& workspace,
                                      const std::filesystem::path& state_db,
                                      const RetentionPolicy& policy, int64_t now_ms);

// After a PostgreSQL store pruned the runs `removed`: their logs and pins in `runs_dir` (on this
// machine, if it ran them) are removed too, unless `dry_run`. Returns the bytes they held.
[[nodiscard]] uint64_t removeLocalLogs(const std::filesystem::path& runs_dir,
                                       const std::vector<std::string>& removed, bool dry_run);

}  // namespace oe::runs

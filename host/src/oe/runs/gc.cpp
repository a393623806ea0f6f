// Retention of an experience's runs (see gc.hpp).
#include "oe/runs/gc.hpp"

#include <unordered_map>

#include "oe/cache/cache_store.hpp"
#include "oe/state/state_store.hpp"

namespace oe::runs {
namespace {

// The database and its WAL: what VACUUM and the checkpoint shrink.
uint64_t sqliteBytes(const std::filesystem::path& db) {
  uint64_t total = 0;
  for (const char* suffix : {"", "-wal"}) {
    std::filesystem::path p = db;
    p += suffix;
    std::error_code ec;
    const auto size = std::filesystem::file_size(p, ec);
    if (!ec) {
      total += size;
    }
  }
  return total;
}

}  // namespace

Retention selectRuns(const std::vector<RunRecord>& runs, const RetentionPolicy& policy,
                     int64_t now_ms) {
  Retention out;
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunRecord& run = runs[i];
    bool prune = (policy.keep && i >= static_cast<size_t>(*policy.keep)) ||
                 (policy.max_age_ms && run.started_ms < now_ms - *policy.max_age_ms);
    if (prune && !run.finished() && run.modified_ms >= now_ms - kMaybeRunningMs) {
      prune = false;
      ++out.kept_running;
    }
    if (prune) {
      out.doomed.push_back(&run);
    } else {
      out.keep.insert(run.id);
    }
  }
  return out;
}

std::unordered_set<std::string> keptChains(const std::vector<RunRecord>& runs,
                                           const std::unordered_set<std::string>& keep) {
  std::unordered_set<std::string> chains;
  std::unordered_map<std::string, const RunRecord*> by_id;
  for (const RunRecord& run : runs) {
    by_id.emplace(run.id, &run);
  }
  for (const std::string& id : keep) {
    auto it = by_id.find(id);
    if (it != by_id.end() && !it->second->chain_id.empty()) {
      chains.insert(it->second->chain_id);
    }
    while (it != by_id.end() && !it->second->resumed_from.empty() &&
           chains.insert(it->second->resumed_from).second) {
      it = by_id.find(it->second->resumed_from);
    }
  }
  return chains;
}

GcReport collectGarbage(const std::filesystem::path& workspace,
                        const std::filesystem::path& state_db, const RetentionPolicy& policy,
                        int64_t now_ms) {
  GcReport report;
  const auto cache_db = workspace / "cache" / "cache.sqlite";
  const auto runs = listRuns(workspace / "runs", true);
  Retention retention = selectRuns(runs, policy, now_ms);
  std::unordered_set<std::string>& keep = retention.keep;
  report.kept_maybe_running = retention.kept_running;

  const uint64_t before = sqliteBytes(cache_db) + sqliteBytes(state_db);
  for (const RunRecord* run : retention.doomed) {
    std::error_code ec;
    if (!policy.dry_run && !std::filesystem::remove(run->log, ec) && ec) {
      report.problems.push_back("warning: cannot remove " + run->log.string() + ": " +
                                ec.message() + "; its run is kept");
      keep.insert(run->id);
      report.failed = true;
      continue;
    }
    // The run's definition pin goes with its log (a resume needs both).
    auto pin = run->log;
    pin.replace_extension(".pin.json");
    if (const auto pin_size = std::filesystem::file_size(pin, ec); !ec) {
      report.log_bytes += pin_size;
      if (!policy.dry_run) {
        std::filesystem::remove(pin, ec);
      }
    }
    report.log_bytes += run->size_bytes;
    report.removed.push_back(run->id);
  }

  cache::PruneStats cache_stats;
  std::error_code ec;
  if (std::filesystem::exists(cache_db, ec)) {
    auto store = cache::CacheStore::open(cache_db.parent_path());
    auto pruned =
        store ? (*store)->prune(keep, policy.dry_run) : Result<cache::PruneStats>(store.error());
    if (pruned && !policy.dry_run) {
      if (auto compacted = (*store)->compact(); !compacted) {
        report.problems.push_back("warning: " + compacted.error().message);
      }
    }
    if (!pruned) {
      report.problems.push_back(pruned.error().message);
      report.failed = true;
    } else {
      cache_stats = *pruned;
    }
  }  // the store closes here, so its WAL is gone before the sizes are measured
  state::HistoryPruneStats history_stats;
  // The logs were read before any was deleted: the chains come from all of them.
  const auto keep_chains = keptChains(runs, keep);
  if (auto pruned = state::pruneHistory(state_db, keep, policy.dry_run, keep_chains); pruned) {
    history_stats = *pruned;
  } else {
    report.problems.push_back(pruned.error().message);
    report.failed = true;
  }

  report.bytes_freed = report.log_bytes;
  if (policy.dry_run) {
    // An estimate: pages vary.
    report.bytes_freed += cache_stats.output_bytes + history_stats.value_bytes;
  } else {
    const uint64_t after = sqliteBytes(cache_db) + sqliteBytes(state_db);
    report.bytes_freed += before > after ? before - after : 0;
  }
  report.runs_kept = keep.size();
  report.cache_entries = cache_stats.entries;
  report.history_rows = history_stats.rows;
  report.landed_marks = history_stats.marks;
  return report;
}

uint64_t removeLocalLogs(const std::filesystem::path& runs_dir,
                         const std::vector<std::string>& removed, bool dry_run) {
  uint64_t bytes = 0;
  for (const std::string& id : removed) {
    for (const char* ext : {".jsonl", ".pin.json"}) {
      const auto file = runs_dir / (id + ext);
      std::error_code ec;
      if (const auto size = std::filesystem::file_size(file, ec); !ec) {
        bytes += size;
        if (!dry_run) {
          std::filesystem::remove(file, ec);
        }
      }
    }
  }
  return bytes;
}

}  // namespace oe::runs

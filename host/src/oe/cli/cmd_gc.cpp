// `oe gc`: retention. Prunes old run logs, the cache entries no kept run refers to and the state
// history rows of pruned runs, then compacts the SQLite files (docs/durability.md).
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "oe/cache/cache_store.hpp"
#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/cli/run_lookup.hpp"
#include "oe/cli/store_option.hpp"
#include "oe/pgstore/gc.hpp"
#include "oe/run/run.hpp"
#include "oe/spec/loader.hpp"
#include "oe/spec/workspace.hpp"
#include "oe/state/state_store.hpp"

namespace oe::cli {
namespace {

// An unfinished run whose log changed this recently may still be running: never pruned.
constexpr int64_t kMaybeRunningMs = 10 * 60 * 1000;

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

struct GcArgs {
  std::string experience = ".";
  int64_t keep = -1;  // -1: no --keep
  std::string older_than;
  bool dry_run = false;
  bool json = false;
  std::string store;
};

// gc on a PostgreSQL store: refused while a coordinator holds the scope; the runs' local logs
// (on this machine, if it ran them) go with their rows.
int storeGc(const GcArgs& a, const ExperienceStore& store, std::optional<int64_t> max_age) {
  auto conn = openHoldingScope(store.url, store.scope, "prune");
  if (!conn) {
    return kExitFailed;
  }
  pgstore::GcPolicy policy;
  if (a.keep >= 0) {
    policy.keep = a.keep;
  }
  policy.max_age_ms = max_age;
  policy.dry_run = a.dry_run;
  auto report = pgstore::pruneScope(*conn, store.scope, policy);
  if (!report) {
    std::cerr << "oe: " << report.error().message << '\n';
    return kExitFailed;
  }
  uint64_t log_bytes = 0;
  const auto runs_dir = spec::workspaceDir(spec::resolveExperiencePath(a.experience)) / "runs";
  for (const std::string& id : report->removed) {
    for (const char* ext : {".jsonl", ".pin.json"}) {
      const auto file = runs_dir / (id + ext);
      std::error_code ec;
      if (const auto size = std::filesystem::file_size(file, ec); !ec) {
        log_bytes += size;
        if (!a.dry_run) {
          std::filesystem::remove(file, ec);
        }
      }
    }
  }
  const uint64_t freed = static_cast<uint64_t>(report->bytes) + log_bytes;
  const size_t removed = report->removed.size();
  if (a.json) {
    std::cout << Json{{"dry_run", a.dry_run},
                      {"store", pg::redact(store.url)},
                      {"scope", store.scope},
                      {"runs_kept", report->kept.size()},
                      {"runs_removed", report->removed},
                      {"events_removed", report->events},
                      {"attempts_removed", report->attempts},
                      {"cache_entries_removed", report->cache_entries},
                      {"history_rows_removed", report->history_rows},
                      {"landed_marks_removed", report->landed_marks},
                      {"log_bytes", log_bytes},
                      {"bytes_freed", freed}}
                     .dump(2)
              << '\n';
    return kExitOk;
  }
  std::cout << (a.dry_run ? "gc (dry run): would remove " : "gc: removed ") << removed
            << (removed == 1 ? " run" : " runs") << " of scope \"" << store.scope << "\" in "
            << pg::redact(store.url) << " (" << report->events << " event lines), "
            << report->cache_entries
            << (report->cache_entries == 1 ? " cache entry, " : " cache entries, ")
            << report->history_rows << (report->history_rows == 1 ? " history row" : " history rows")
            << "; " << (a.dry_run ? "would free about " : "freed about ") << humanBytes(freed)
            << " of data; kept " << report->kept.size()
            << (report->kept.size() == 1 ? " run" : " runs") << '\n';
  return kExitOk;
}

int runGc(const GcArgs& a) {
  if (a.keep < 0 && a.older_than.empty()) {
    std::cerr << "oe: gc needs --keep N (keep the N newest runs) or --older-than DURATION "
                 "(e.g. 7d, 12h, 30m)\n";
    return kExitUsage;
  }
  std::optional<int64_t> max_age;
  if (!a.older_than.empty()) {
    auto parsed = parseDurationMs(a.older_than);
    if (!parsed) {
      std::cerr << "oe: --older-than: " << parsed.error().message << '\n';
      return kExitUsage;
    }
    max_age = *parsed;
  }
  bool failed = false;
  if (auto store = experienceStore(a.experience, a.store, failed); store || failed) {
    return failed ? kExitFailed : storeGc(a, *store, max_age);
  }
  auto experience = loadOnly(a.experience);
  if (!experience) {
    return kExitFailed;
  }
  const auto workspace = run::workspaceDir(*experience);
  const auto cache_db = workspace / "cache" / "cache.sqlite";
  const auto state_db = run::statePath(*experience);
  // Held while gc deletes: a run starting meanwhile is refused instead of having its logs, cache
  // entries and history pruned, and its files compacted, under it. A dry run deletes nothing.
  std::optional<state::StoreLock> lock;
  if (!a.dry_run) {
    lock = lockForDeletion(state_db, "gc", "prune", "oe gc");
    if (!lock) {
      return kExitFailed;
    }
  }

  // Which runs stay: the newest N and/or those younger than the cutoff, plus any unfinished run
  // that may still be running (deleting its log under it would lose its history).
  const int64_t now = nowMs();
  const auto runs = listRuns(workspace / "runs", true);
  std::unordered_set<std::string> keep;
  std::vector<const RunRecord*> doomed;
  size_t kept_running = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunRecord& run = runs[i];
    bool prune = (a.keep >= 0 && i >= static_cast<size_t>(a.keep)) ||
                 (max_age && run.started_ms < now - *max_age);
    if (prune && !run.finished() && run.modified_ms >= now - kMaybeRunningMs) {
      prune = false;
      ++kept_running;
    }
    if (prune) {
      doomed.push_back(&run);
    } else {
      keep.insert(run.id);
    }
  }

  const uint64_t before = sqliteBytes(cache_db) + sqliteBytes(state_db);
  uint64_t log_bytes = 0;
  Json removed_ids = Json::array();
  int status = kExitOk;
  for (const RunRecord* run : doomed) {
    std::error_code ec;
    if (!a.dry_run && !std::filesystem::remove(run->log, ec) && ec) {
      std::cerr << "oe: warning: cannot remove " << run->log.string() << ": " << ec.message()
                << "; its run is kept\n";
      keep.insert(run->id);
      status = kExitFailed;
      continue;
    }
    // The run's definition pin goes with its log (a resume needs both).
    auto pin = run->log;
    pin.replace_extension(".pin.json");
    if (const auto pin_size = std::filesystem::file_size(pin, ec); !ec) {
      log_bytes += pin_size;
      if (!a.dry_run) {
        std::filesystem::remove(pin, ec);
      }
    }
    log_bytes += run->size_bytes;
    removed_ids.push_back(run->id);
  }

  cache::PruneStats cache_stats;
  std::error_code ec;
  if (std::filesystem::exists(cache_db, ec)) {
    auto store = cache::CacheStore::open(cache_db.parent_path());
    auto pruned =
        store ? (*store)->prune(keep, a.dry_run) : Result<cache::PruneStats>(store.error());
    if (pruned && !a.dry_run) {
      if (auto compacted = (*store)->compact(); !compacted) {
        std::cerr << "oe: warning: " << compacted.error().message << '\n';
      }
    }
    if (!pruned) {
      std::cerr << "oe: " << pruned.error().message << '\n';
      status = kExitFailed;
    } else {
      cache_stats = *pruned;
    }
  }  // the store closes here, so its WAL is gone before the sizes are measured
  state::HistoryPruneStats history_stats;
  // The chains the kept runs belong to: the chain_id their run.started names, and for logs from
  // before chains were recorded, their resumed_from and that run's, as far as the logs (read
  // before any was deleted) tell. Their landed-write marks stay.
  std::unordered_set<std::string> keep_chains;
  {
    std::unordered_map<std::string, const RunRecord*> by_id;
    for (const RunRecord& run : runs) {
      by_id.emplace(run.id, &run);
    }
    for (const std::string& id : keep) {
      auto it = by_id.find(id);
      if (it != by_id.end() && !it->second->chain_id.empty()) {
        keep_chains.insert(it->second->chain_id);
      }
      while (it != by_id.end() && !it->second->resumed_from.empty() &&
             keep_chains.insert(it->second->resumed_from).second) {
        it = by_id.find(it->second->resumed_from);
      }
    }
  }
  if (auto pruned = state::pruneHistory(state_db, keep, a.dry_run, keep_chains); pruned) {
    history_stats = *pruned;
  } else {
    std::cerr << "oe: " << pruned.error().message << '\n';
    status = kExitFailed;
  }

  uint64_t freed = log_bytes;
  if (a.dry_run) {
    freed += cache_stats.output_bytes + history_stats.value_bytes;  // an estimate: pages vary
  } else {
    const uint64_t after = sqliteBytes(cache_db) + sqliteBytes(state_db);
    freed += before > after ? before - after : 0;
  }

  if (a.json) {
    Json out = {{"dry_run", a.dry_run},
                {"runs_kept", keep.size()},
                {"runs_removed", removed_ids},
                {"cache_entries_removed", cache_stats.entries},
                {"history_rows_removed", history_stats.rows},
                {"landed_marks_removed", history_stats.marks},
                {"log_bytes", log_bytes},
                {"bytes_freed", freed},
                {"kept_maybe_running", kept_running}};
    std::cout << out.dump(2) << '\n';
    return status;
  }
  std::cout << (a.dry_run ? "gc (dry run): would remove " : "gc: removed ") << removed_ids.size()
            << (removed_ids.size() == 1 ? " run" : " runs") << " (" << humanBytes(log_bytes)
            << " of logs), " << cache_stats.entries
            << (cache_stats.entries == 1 ? " cache entry, " : " cache entries, ")
            << history_stats.rows << (history_stats.rows == 1 ? " history row" : " history rows")
            << "; " << (a.dry_run ? "would free about " : "freed ") << humanBytes(freed)
            << "; kept " << keep.size() << (keep.size() == 1 ? " run" : " runs") << '\n';
  if (kept_running > 0) {
    std::cout << "kept " << kept_running
              << " unfinished run(s) whose log changed in the last 10 minutes (may be running)\n";
  }
  return status;
}

}  // namespace

void addGcCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<GcArgs>();
  CLI::App* cmd = app.add_subcommand(
      "gc", "Prune old run logs, the cache entries and state history rows only they used");
  cmd->add_option("--experience", a->experience, "Experience folder")->capture_default_str();
  cmd->add_option("--keep", a->keep, "Keep the N newest runs")->check(CLI::NonNegativeNumber);
  cmd->add_option("--older-than", a->older_than, "Prune runs started longer ago (7d, 12h, 30m)")
      ->type_name("DURATION");
  cmd->add_flag("--dry-run", a->dry_run, "Report what would be freed; delete nothing");
  cmd->add_flag("--json", a->json, "Print the report as JSON");
  addStoreOption(*cmd, a->store);
  cmd->callback([a, &exit_code] { exit_code = runGc(*a); });
}

}  // namespace oe::cli

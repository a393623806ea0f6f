// `oe gc`: retention. Prunes old run logs, the cache entries no kept run refers to and the state
// history rows of pruned runs, then compacts the SQLite files (docs/durability.md); the policy
// and the deletion are runs/gc (files) and pgstore/gc (a PostgreSQL store).
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/cli/run_lookup.hpp"
#include "oe/cli/store_option.hpp"
#include "oe/pgstore/gc.hpp"
#include "oe/run/run.hpp"
#include "oe/runs/gc.hpp"
#include "oe/spec/loader.hpp"
#include "oe/spec/workspace.hpp"

namespace oe::cli {
namespace {

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
int storeGc(const GcArgs& a, const ExperienceStore& store, const runs::RetentionPolicy& policy) {
  auto conn = openHoldingScope(store.url, store.scope, "prune");
  if (!conn) {
    return kExitFailed;
  }
  pgstore::GcPolicy pg_policy;
  pg_policy.keep = policy.keep;
  pg_policy.max_age_ms = policy.max_age_ms;
  pg_policy.dry_run = policy.dry_run;
  auto report = pgstore::pruneScope(*conn, store.scope, pg_policy);
  if (!report) {
    std::cerr << "oe: " << report.error().message << '\n';
    return kExitFailed;
  }
  const auto runs_dir = spec::workspaceDir(spec::resolveExperiencePath(a.experience)) / "runs";
  const uint64_t log_bytes = runs::removeLocalLogs(runs_dir, report->removed, a.dry_run);
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
  runs::RetentionPolicy policy;
  if (a.keep >= 0) {
    policy.keep = a.keep;
  }
  policy.dry_run = a.dry_run;
  if (!a.older_than.empty()) {
    auto parsed = parseDurationMs(a.older_than);
    if (!parsed) {
      std::cerr << "oe: --older-than: " << parsed.error().message << '\n';
      return kExitUsage;
    }
    policy.max_age_ms = *parsed;
  }
  bool failed = false;
  if (auto store = experienceStore(a.experience, a.store, failed); store || failed) {
    return failed ? kExitFailed : storeGc(a, *store, policy);
  }
  auto experience = loadOnly(a.experience);
  if (!experience) {
    return kExitFailed;
  }
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
  const runs::GcReport r =
      runs::collectGarbage(run::workspaceDir(*experience), state_db, policy, nowMs());
  for (const std::string& problem : r.problems) {
    std::cerr << "oe: " << problem << '\n';
  }
  const int status = r.failed ? kExitFailed : kExitOk;
  if (a.json) {
    Json out = {{"dry_run", a.dry_run},
                {"runs_kept", r.runs_kept},
                {"runs_removed", r.removed},
                {"cache_entries_removed", r.cache_entries},
                {"history_rows_removed", r.history_rows},
                {"landed_marks_removed", r.landed_marks},
                {"log_bytes", r.log_bytes},
                {"bytes_freed", r.bytes_freed},
                {"kept_maybe_running", r.kept_maybe_running}};
    std::cout << out.dump(2) << '\n';
    return status;
  }
  std::cout << (a.dry_run ? "gc (dry run): would remove " : "gc: removed ") << r.removed.size()
            << (r.removed.size() == 1 ? " run" : " runs") << " (" << humanBytes(r.log_bytes)
            << " of logs), " << r.cache_entries
            << (r.cache_entries == 1 ? " cache entry, " : " cache entries, ") << r.history_rows
            << (r.history_rows == 1 ? " history row" : " history rows") << "; "
            << (a.dry_run ? "would free about " : "freed ") << humanBytes(r.bytes_freed)
            << "; kept " << r.runs_kept << (r.runs_kept == 1 ? " run" : " runs") << '\n';
  if (r.kept_maybe_running > 0) {
    std::cout << "kept " << r.kept_maybe_running
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

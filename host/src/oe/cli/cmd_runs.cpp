// `oe runs`: the run history, newest first, from the event logs in .openexpertise/runs.
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include "oe/approvals/approval_store.hpp"
#include "oe/approvals/decision_text.hpp"
#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/cli/run_lookup.hpp"
#include "oe/cli/store_option.hpp"
#include "oe/pgstore/run_record.hpp"
#include "oe/pgstore/scope.hpp"

namespace oe::cli {

namespace {

// The runs of the experience's scope in a PostgreSQL store, newest first, as listRuns gives
// them for the local logs; nullopt after saying why on stderr.
std::optional<std::vector<RunRecord>> storeRuns(const std::string& url,
                                                const std::filesystem::path& experience) {
  auto loaded = loadOnly(experience);
  if (!loaded) {
    return std::nullopt;
  }
  auto conn = openStore(url);
  if (!conn) {
    std::cerr << "oe: " << conn.error().message << '\n';
    return std::nullopt;
  }
  auto infos = pgstore::listRuns(**conn, pgstore::storeScope(loaded->name, loaded->file));
  if (!infos) {
    std::cerr << "oe: " << infos.error().message << '\n';
    return std::nullopt;
  }
  std::vector<RunRecord> runs;
  for (auto it = infos->rbegin(); it != infos->rend(); ++it) {
    RunRecord run;
    run.id = it->run_id;
    run.started_at = it->started_at;
    run.started_ms = parseIsoMs(it->started_at);
    run.finished_at = it->finished_at;
    run.end_ms = it->finished_at.empty() ? -1 : parseIsoMs(it->finished_at);
    // A row still `running` whose coordinator died stays so in the table; the scope's lock,
    // free again, tells it from the run in progress.
    run.status = !it->finished_at.empty() ? it->status
                 : it->live                ? std::string("running")
                                           : std::string("unfinished");
    run.resumed_from = it->resumed_from;
    run.chain_id = it->chain_id;
    run.ran = it->ran;
    run.cached = it->cached;
    run.failed = it->failed;
    run.skipped = it->skipped;
    run.cancelled = it->cancelled;
    runs.push_back(std::move(run));
  }
  return runs;
}

// A parked run (status waiting, not continued by a later run of its chain) and its questions.
struct Parked {
  const RunRecord* run = nullptr;
  std::vector<approvals::Request> requests;
};

// The parked runs of `runs` and their questions, each deadline that has passed decided by its
// on_timeout first (docs/policy.md, "Approvals": a deadline is checked whenever oe looks at the
// run). `where`: the approvals' place (approvals::Store::open), a PostgreSQL URL or the SQLite
// file. nullopt after saying why on stderr.
std::optional<std::vector<Parked>> parkedRuns(const std::string& where,
                                              const std::vector<RunRecord>& runs) {
  std::set<std::string> continued;
  bool any = false;
  for (const auto& run : runs) {
    if (!run.resumed_from.empty()) {
      continued.insert(run.resumed_from);
    }
    any = any || run.status == "waiting";
  }
  std::vector<Parked> out;
  if (!any) {
    return out;  // nothing to open: `oe runs` of an experience without approvals costs nothing
  }
  std::unique_ptr<approvals::Store> store;
  if (pg::isUrl(where) || std::filesystem::exists(where)) {
    auto opened = approvals::Store::open(where);
    if (!opened) {
      std::cerr << "oe: " << opened.error().message << '\n';
      return std::nullopt;
    }
    store = std::move(opened).value();
  }
  const int64_t now = approvals::nowMs();
  for (const auto& run : runs) {
    if (run.status != "waiting" || continued.count(run.id) != 0) {
      continue;
    }
    Parked parked{&run, {}};
    if (store) {
      auto listed = store->list(run.chain_id.empty() ? run.id : run.chain_id);
      if (!listed) {
        std::cerr << "oe: " << listed.error().message << '\n';
        return std::nullopt;
      }
      for (auto& request : *listed) {
        auto settled = store->settleTimeout(request, now);
        if (!settled) {
          std::cerr << "oe: " << settled.error().message << '\n';
          return std::nullopt;
        }
        parked.requests.push_back(std::move(settled).value());
      }
    }
    out.push_back(std::move(parked));
  }
  return out;
}

// `oe runs --waiting`: the parked runs and what each waits for.
void printWaiting(const std::vector<Parked>& parked, bool json) {
  Json out = Json::array();
  for (const auto& [run, requests] : parked) {
    if (json) {
      Json item = run->toJson();
      item["approvals"] = Json::array();
      for (const auto& request : requests) {
        item["approvals"].push_back(request.toJson());
      }
      out.push_back(std::move(item));
      continue;
    }
    std::cout << run->id << "  waiting since "
              << (run->finished_at.empty() ? "?" : run->finished_at) << '\n';
    for (const auto& request : requests) {
      std::cout << "  " << approvals::describeRequest(request);
      if (request.decision) {
        std::cout << ": " << approvals::describeDecision(*request.decision)
                  << "; continue with `oe resume " << run->id << "`";
      }
      std::cout << '\n';
      for (const auto& [entry, value] : request.shown.items()) {
        std::cout << "    " << entry << " = " << value.dump() << '\n';
      }
    }
  }
  if (json) {
    std::cout << out.dump(2) << '\n';
  } else if (parked.empty()) {
    std::cout << "no run waits for an approval\n";
  }
}

}  // namespace

void addRunsCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::string experience = ".";
    bool json = false;
    bool waiting = false;
    std::string store;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "runs",
      "List past runs, newest first (start, duration, status, calls ran/cached/failed/cancelled)");
  cmd->add_option("--experience", a->experience, "Experience folder")->capture_default_str();
  cmd->add_flag("--json", a->json, "Print a JSON array");
  cmd->add_flag("--waiting", a->waiting,
                "Only the runs parked on an approval, with what each waits for (every "
                "listing decides a passed deadline by its on_timeout)");
  addStoreOption(*cmd, a->store);
  cmd->callback([a, &exit_code] {
    const auto workspace = experienceWorkspace(a->experience);
    if (!workspace) {
      exit_code = kExitUsage;
      return;
    }
    // --store or OE_STORE (runtime.store would need the yaml loaded for every listing).
    const std::string url = resolveStore(a->store, nullptr);
    std::vector<RunRecord> runs;
    if (pg::isUrl(url)) {
      auto stored = storeRuns(url, a->experience);
      if (!stored) {
        exit_code = kExitFailed;
        return;
      }
      runs = std::move(*stored);
    } else {
      runs = listRuns(*workspace / "runs", true);
    }
    for (const auto& run : runs) {
      for (const auto& warning : run.warnings) {
        std::cerr << "oe: warning: " << warning << '\n';
      }
    }
    exit_code = kExitOk;
    // Every listing looks at the parked runs' deadlines, not only --waiting.
    const auto parked =
        parkedRuns(pg::isUrl(url) ? url : approvals::storePath(*workspace).string(), runs);
    if (!parked) {
      exit_code = kExitFailed;
      return;
    }
    if (a->waiting) {
      printWaiting(*parked, a->json);
      return;
    }
    if (a->json) {
      Json out = Json::array();
      for (const auto& run : runs) {
        out.push_back(run.toJson());
      }
      std::cout << out.dump(2) << '\n';
      return;
    }
    if (runs.empty()) {
      std::cout << "no runs yet in " << (*workspace / "runs").string() << '\n';
      return;
    }
    size_t id_width = 6;
    for (const auto& run : runs) {
      id_width = std::max(id_width, run.id.size());
    }
    const auto w = [](size_t n) { return std::setw(static_cast<int>(n)); };
    std::cout << std::left << w(id_width) << "RUN" << "  " << w(24) << "STARTED" << "  "
              << std::right << w(10) << "DURATION" << "  " << std::left << w(11) << "STATUS"
              << std::right << w(6) << "RAN" << w(8) << "CACHED" << w(8) << "FAILED" << w(11)
              << "CANCELLED" << '\n';
    for (const auto& run : runs) {
      const int64_t ms = run.durationMs();
      std::cout << std::left << w(id_width) << run.id << "  " << w(24)
                << (run.started_at.empty() ? "?" : run.started_at) << "  " << std::right
                << w(10) << (ms >= 0 ? std::to_string(ms) + " ms" : "-") << "  " << std::left
                << w(11) << run.status << std::right << w(6) << run.ran << w(8) << run.cached
                << w(8) << run.failed << w(11) << run.cancelled;
      if (!run.reason.empty()) {
        std::cout << "  (" << run.reason << ')';
      }
      if (!run.resumed_from.empty()) {
        std::cout << "  resumed from " << run.resumed_from;
      }
      std::cout << '\n';
    }
  });
}

}  // namespace oe::cli

// `oe run [path]` and `oe resume <run-id>`: execute an experience and print its final state. The
// flags are here; the checks before a run and where a resume picks up are launch/, the run is
// run/, the summary's text report/run_summary, the progress on stderr progress.cpp.
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string_view>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/cli/events_fd.hpp"
#include "oe/cli/evolve.hpp"
#include "oe/cli/progress.hpp"
#include "oe/cli/run_lookup.hpp"
#include "oe/cli/store_option.hpp"
#include "oe/events/event_log.hpp"
#include "oe/launch/preflight.hpp"
#include "oe/launch/resume.hpp"
#include "oe/report/run_summary.hpp"
#include "oe/run/run.hpp"
#include "oe/spec/workspace.hpp"
#include "oe/telemetry/run_telemetry.hpp"

namespace oe::cli {
namespace {

struct RunArgs {
  std::string path = ".";
  std::string args_json = "{}";
  std::string concurrency;
  bool no_cache = false;
  bool json = false;
  bool quiet = false;
  bool tui = false;     // the live view even when stderr does not look like a terminal
  bool no_tui = false;  // plain progress lines even on a terminal
  bool strict = false;
  std::string run_id;  // resume: the run to continue
  std::string from_node;
  std::string only_node;
  std::string experience = ".";
  std::string llm;         // --llm anthropic|openai
  std::string llm_record;  // --llm-record FILE
  std::string llm_replay;  // --llm-replay FILE
  std::string max_tokens;
  std::string max_cost_usd;
  bool fresh = false;  // run: start from an empty state
  bool wait = false;   // wait for a run that holds the state store
  bool last = false;   // resume: the newest run
  int events_fd = -1;  // hidden --events-fd N: run and node-end events as JSON lines (`oe mcp`)
  std::string new_run_id;  // hidden --run-id ID: the id `oe serve` gave the run when it queued it

  bool evolve = false;   // run: `oe evolve` the run after it succeeded
  bool otel = false;     // export the run's trace over OTLP (docs/telemetry.md)
  std::string store;     // --store URL (docs/storage.md)
  bool workers = false;  // --workers: node attempts go to `oe worker` processes
};

int exitCodeOf(const run::RunSummary& s) {
  switch (s.status) {
    case run::RunStatus::kSuccess:
      return kExitOk;
    case run::RunStatus::kInterrupted:
      return 128 + (s.signal != 0 ? s.signal : SIGINT);  // as a shell reports a killed command
    case run::RunStatus::kWaiting:
      return kExitWaiting;
    default:
      return kExitFailed;
  }
}

// Builds the run's options from the flags, checks them, loads the experience, runs it with the
// progress on stderr and prints the summary. `resumed`: the run a resume continues (null for
// `oe run`); `path`: the experience as the user named it.
int execute(const RunArgs& a, const std::string& path, Json run_args,
            const launch::ResumePoint* resumed) {
  run::RunOptions options;
  options.llm.env = llm::Environment::fromProcess();
  options.llm.provider_flag = a.llm;
  if (!a.llm_record.empty()) {
    options.llm.record_file = a.llm_record;
  }
  if (!a.llm_replay.empty()) {
    options.llm.replay_file = a.llm_replay;
  }
  auto budget = launch::parseBudget(a.max_tokens, a.max_cost_usd);
  if (printedError(budget) || printedError(launch::checkLlmSettings(options.llm))) {
    return kExitUsage;
  }
  options.budget_override = *budget;
  if (!a.concurrency.empty()) {
    auto concurrency = launch::parseConcurrency(a.concurrency);
    if (printedError(concurrency)) {
      return kExitUsage;
    }
    options.concurrency = *concurrency;
  }
  options.args = std::move(run_args);
  options.reuse_cache = !a.no_cache;
  options.run_id = a.new_run_id;
  if (resumed != nullptr) {
    options.prior_usage = resumed->prior_usage;
    options.resumed_from = resumed->run_id;
    options.chain_id = resumed->chain_id;
  }
  options.fresh = a.fresh;
  options.wait_for_lock = a.wait;
  options.on_lock_wait = [](const std::string& holder) {
    std::cerr << "oe: waiting for " << holder << " to finish with this state store (--wait)\n";
  };
  options.from_node = a.from_node;
  options.only_node = a.only_node;
  StderrLog log_sink;
  // A plugin that is not built in loads only once trusted (docs/trust.md): asked on a terminal,
  // refused with the `oe trust` command to run without one.
  const auto gate = ops::trustGate();
  plugins::PluginRegistry sinked(&log_sink, plugins::Access::kExecute, gate.get());
  // A replay answers the CLIs of cli-agent nodes from the recording: they need not be installed.
  auto experience = loadValidated(path, sinked, a.strict, /*for_run=*/true,
                                  /*starts_programs=*/a.llm_replay.empty());
  if (!experience) {
    return kExitFailed;
  }
  options.store_url = resolveStore(a.store, &experience->raw);
  // OE_WORKERS=1 sends every run through the queue, as --workers does (a deployment where
  // machines of workers serve every run sets it once).
  const char* workers_env = std::getenv("OE_WORKERS");  // NOLINT(concurrency-mt-unsafe): read only
  options.workers = a.workers || (workers_env != nullptr && std::string_view(workers_env) == "1");
  if (!a.new_run_id.empty()) {
    // A run id names one log (and one PostgreSQL run record, whose primary key refuses a
    // second): an id given twice must not append a second run to the first one's log.
    const auto log = spec::workspaceDir(experience->file) / "runs" / (a.new_run_id + ".jsonl");
    if (std::error_code ec; std::filesystem::exists(log, ec)) {
      std::cerr << "oe: --run-id " << a.new_run_id << ": a run with this id exists (" << log.string()
                << "); give a new id, or `oe resume " << a.new_run_id << "` to continue it\n";
      return kExitUsage;
    }
  }
  if (printedError(launch::checkSelection(*experience, a.from_node, a.only_node)) ||
      printedError(launch::checkStore(options.store_url, options.workers))) {
    return kExitUsage;
  }
  Json changes;
  if (resumed != nullptr) {
    auto diff =
        launch::definitionChanges(*experience, resumed->run_id, resumed->stored_pin, sinked);
    if (diff) {
      changes = std::move(*diff);
      std::cerr << "oe: " << report::definitionChangesText(resumed->run_id, changes) << '\n';
      for (const auto& id : changes["changed"]) {
        options.changed_nodes.push_back(id.get<std::string>());
      }
    } else {
      std::cerr << "oe: " << diff.error().message << '\n';
    }
  }
  RunDisplay display(*experience, a.quiet || a.json, a.tui, a.no_tui);
  options.on_changed_nodes = [&changes, &display,
                              &path](const std::vector<run::ChangedNode>& nodes) {
    Json landed = Json::object();
    for (const auto& node : nodes) {
      display.say("oe: " + report::changedNodeNote(node, path));
      landed[node.node_id] = node.landed;
    }
    changes["landed"] = std::move(landed);
  };
  display.attach(options, log_sink);
  if (a.events_fd >= 0) {
    options.on_event = eventsToFd(a.events_fd, std::move(options.on_event));
  }
  auto otel = telemetry::RunTelemetry::start(a.otel, telemetry::processEnvironment(), *experience,
                                             std::cerr);
  if (otel) {
    options.on_event = otel->listener(std::move(options.on_event));
    options.llm.observer = otel->observer();
  }
  const auto start = std::chrono::steady_clock::now();
  auto summary = run::runExperience(*experience, sinked, options);
  display.finish(log_sink);
  if (otel) {
    otel->finish(summary ? run::toString(summary->status) : "failed");
    options.llm.observer = nullptr;  // --evolve's calls are not part of the run's trace
  }
  if (!summary) {
    std::cerr << "oe: " << summary.error().message << '\n';
    return kExitFailed;
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  if (a.json) {
    std::cout << report::runSummaryJson(*summary, changes).dump(2) << '\n';
  } else {
    std::cout << report::runSummaryText(*summary, *experience, path, ms);
  }
  if (a.evolve && summary->status == run::RunStatus::kSuccess) {
    // Reference §9.2: evolve after a success; its failures only warn. Its output goes to
    // stderr under --json, which keeps stdout one JSON document.
    EvolveOptions evolve_options;
    evolve_options.experience = path;
    evolve_options.run_id = summary->run_id;
    evolve_options.llm = options.llm;
    if (const int code = evolve(evolve_options, a.json ? std::cerr : std::cout); code != kExitOk) {
      std::cerr << "oe: warning: --evolve: evolving run " << summary->run_id
                << " failed (the message above says why); the run itself succeeded\n";
    }
  }
  return exitCodeOf(*summary);
}

void addCommonFlags(CLI::App& cmd, RunArgs& a) {
  addStoreOption(cmd, a.store);
  // Kept as text (launch/preflight parses it) for a message that names the flag; the help says
  // what it takes.
  cmd.add_option("--concurrency", a.concurrency,
                 "Nodes run at once (overrides runtime.concurrency, default 1)")
      ->type_name("INT");
  cmd.add_flag("--no-cache", a.no_cache, "Run every node rather than reuse cached outputs (outputs are still stored, so a resume replays what landed)");
  cmd.add_flag("--json", a.json, "Print {run_id, status, final_state} as JSON, no progress");
  cmd.add_flag("-q,--quiet", a.quiet, "No per-node progress on stderr");
  auto* tui = cmd.add_flag("--tui", a.tui,
                           "Live dashboard on stderr even when it does not look like a terminal "
                           "(the default on a terminal)");
  cmd.add_flag("--no-tui", a.no_tui, "Plain progress lines on stderr, even on a terminal")
      ->excludes(tui);
  cmd.add_flag("--strict", a.strict, "Treat validation warnings (unknown keys) as errors");
  cmd.add_option("--llm", a.llm,
                 "LLM provider: anthropic or openai (default: from the API keys set)");
  auto* record = cmd.add_option("--llm-record", a.llm_record,
                                "Append every LLM request and response to this JSONL file");
  cmd.add_option("--llm-replay", a.llm_replay,
                 "Answer LLM calls from a recording, without network; a request not in it fails "
                 "its node")
      ->excludes(record);
  cmd.add_option("--max-tokens", a.max_tokens,
                 "Token budget of the run (overrides runtime.budget.max_tokens)")
      ->type_name("INT");
  cmd.add_option("--max-cost-usd", a.max_cost_usd,
                 "Cost budget of the run in USD (overrides runtime.budget.max_cost_usd)")
      ->type_name("NUMBER");
  cmd.add_flag("--otel", a.otel,
               "Export the run's trace (a span per node attempt and LLM call) over OTLP/HTTP "
               "to OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318");
  cmd.add_option("--events-fd", a.events_fd)->group("");  // for `oe mcp`, not for users
  // For `oe serve`, which shows a queued run under the id it will have; not for users.
  cmd.add_option("--run-id", a.new_run_id)
      ->group("")
      ->check([](const std::string& id) -> std::string {
        return events::isRunId(id) ? std::string()
                                   : "--run-id takes a UUID v4 in lower case (as oe makes them)";
      });
  cmd.add_flag("--workers", a.workers,
               "Hand node attempts to `oe worker` processes through the --store work queue "
               "instead of running them here (also OE_WORKERS=1); see docs/scale-out.md");
  cmd.add_flag("--wait", a.wait,
               "If another run is using this experience's state, wait for it to end instead of "
               "refusing to start");
}

}  // namespace

void addRunCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* cmd =
      app.add_subcommand("run", "Run an experience (a folder with experience.yaml, or the yaml)");
  cmd->add_option("path", a->path, "Experience folder or yaml file")->capture_default_str();
  cmd->add_option("--args", a->args_json, "Run-level args as a JSON object; they reach every node")
      ->type_name("JSON");
  auto* from = cmd->add_option("--from", a->from_node,
                               "Run this node and everything downstream; take the rest from the "
                               "current state and the cache without executing it");
  cmd->add_option("--only", a->only_node, "Run this one node against the current state")
      ->excludes(from);
  cmd->add_flag(
      "--fresh", a->fresh,
      "Start from an empty state instead of the stored one (the node cache still serves)");
  cmd->add_flag("--evolve", a->evolve,
                "After a successful run, run `oe evolve` on it (its failures only warn)");
  addCommonFlags(*cmd, *a);
  cmd->callback([a, &exit_code] {
    Json args = Json::parse(a->args_json, nullptr, false);
    if (args.is_discarded() || !args.is_object()) {
      std::cerr
          << "oe: --args must be valid JSON (an object, e.g. --args '{\"name\":\"World\"}')\n";
      exit_code = kExitUsage;
      return;
    }
    // A path that holds no experience is a bad invocation (exit 2), said and refused before
    // anything runs; an experience that does not validate is a failed run (exit 1).
    if (auto named = launch::checkExperiencePath(a->path); !named) {
      std::cerr << "oe: " << named.error().message << '\n';
      exit_code = kExitUsage;
      return;
    }
    exit_code = execute(*a, a->path, std::move(args), nullptr);
  });
}

// The run `oe resume` names and where it picks up: from the PostgreSQL store `store` (the run
// may have run on another machine) or from the experience's logs. nullopt after saying why, with
// `exit_code` set.
std::optional<launch::ResumePoint> resumePoint(const RunArgs& a, const std::string& store,
                                               int& exit_code) {
  exit_code = kExitUsage;
  Result<launch::ResumePoint> point = makeError("");
  if (pg::isUrl(store)) {
    auto conn = openStore(store);
    if (printedError(conn)) {
      exit_code = kExitFailed;
      return std::nullopt;
    }
    auto run = resolveStoreRun(**conn, a.run_id, a.last, a.experience);
    if (!run) {
      return std::nullopt;
    }
    point = launch::resumePointInStore(**conn, *run);
  } else {
    auto run = resolveRun(a.experience, a.run_id, a.last);
    if (!run) {
      return std::nullopt;
    }
    point = launch::resumePointOf(*run);
  }
  if (printedError(point)) {
    exit_code = kExitFailed;
    return std::nullopt;
  }
  for (const auto& note : point->notes) {
    std::cerr << "oe: " << note << '\n';
  }
  return std::move(point).value();
}

namespace {

// `oe resume` as its callback does it, for `oe resume` and for continueRun.
int resumeWith(const RunArgs& a) {
  int exit_code = kExitOk;
  const auto quiet = spec::loadExperience(spec::resolveExperiencePath(a.experience));
  const std::string store =
      resolveStore(a.store, quiet.experience ? &quiet.experience->raw : nullptr);
  const auto point = resumePoint(a, store, exit_code);
  if (!point) {
    return exit_code;
  }
  RunArgs with_store = a;
  if (pg::isUrl(store)) {
    with_store.store = store;
  }
  return execute(with_store, a.experience, point->args, &*point);
}

}  // namespace

int continueRun(const std::string& experience, const std::string& run_id,
                const std::string& store, bool json, bool quiet) {
  RunArgs a;
  a.experience = experience;
  a.store = store;
  a.run_id = run_id;
  a.json = json;
  a.quiet = quiet;
  a.no_tui = true;
  return resumeWith(a);
}

void addResumeCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "resume",
      "Run an experience again with a past run's args; finished nodes replay from the cache");
  auto* run_id =
      cmd->add_option("run-id", a->run_id, "The run to resume: its id or a unique prefix");
  cmd->add_flag("--last", a->last, "Resume the newest run")->excludes(run_id);
  cmd->add_option("--experience", a->experience, "Experience folder")->capture_default_str();
  addCommonFlags(*cmd, *a);
  // runtime.store from the yaml, loaded quietly (execute() reports its diagnostics).
  cmd->callback([a, &exit_code] { exit_code = resumeWith(*a); });
}

}  // namespace oe::cli

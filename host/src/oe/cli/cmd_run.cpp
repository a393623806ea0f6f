// `oe run [path]` and `oe resume <run-id>`: execute an experience and print its final state.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/cli/evolve.hpp"
#include "oe/cli/progress.hpp"
#include "oe/cli/run_lookup.hpp"
#include "oe/cli/store_option.hpp"
#include "oe/events/event_log.hpp"
#include "oe/llm/llm_service.hpp"
#include "oe/mcp/framing.hpp"
#include "oe/pgstore/event_sink.hpp"
#include "oe/pgstore/run_record.hpp"
#include "oe/pgstore/scope.hpp"
#include "oe/run/run.hpp"
#include "oe/telemetry/run_telemetry.hpp"
#include "oe/view/live_view.hpp"

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

  bool evolve = false;   // run: `oe evolve` the run after it succeeded
  bool otel = false;     // export the run's trace over OTLP (docs/telemetry.md)
  std::string store;     // --store URL (docs/storage.md)
  bool workers = false;  // --workers: node attempts go to `oe worker` processes
};

// What the runs a resumed run continues already spent on LLM calls: the chain's earlier total
// (usage_before in run.started) plus every node.tokens event of the log.
llm::Usage priorUsage(const std::vector<Json>& events) {
  llm::Usage total;
  for (const auto& event : events) {
    const std::string type = stringField(event, "type");
    if (type == "run.started") {
      total += llm::Usage::fromJson(event.value("usage_before", Json::object()));
    } else if (type == "node.tokens") {
      total.input_tokens += event.value("input_tokens", int64_t{0});
      total.output_tokens += event.value("output_tokens", int64_t{0});
      total.cost_usd += event.value("cost_usd", 0.0);
      total.calls += 1;
    }
  }
  return total;
}

// Parses --max-tokens / --max-cost-usd; false (after saying why) when malformed.
bool parseBudget(const RunArgs& a, llm::Budget& budget) {
  try {
    if (!a.max_tokens.empty()) {
      size_t used = 0;
      const long long value = std::stoll(a.max_tokens, &used);
      if (used != a.max_tokens.size() || value < 0) {
        throw std::invalid_argument("negative");
      }
      budget.max_tokens = value;
    }
  } catch (const std::exception&) {
    std::cerr << "oe: --max-tokens must be a non-negative integer\n";
    return false;
  }
  try {
    if (!a.max_cost_usd.empty()) {
      size_t used = 0;
      const double value = std::stod(a.max_cost_usd, &used);
      if (used != a.max_cost_usd.size() || !(value >= 0)) {
        throw std::invalid_argument("negative");
      }
      budget.max_cost_usd = value;
    }
  } catch (const std::exception&) {
    std::cerr << "oe: --max-cost-usd must be a non-negative number of US dollars\n";
    return false;
  }
  return true;
}

// Compares the resumed run's pinned definition with the experience as it is now, and says on
// stderr which nodes changed (they, and what depends on them, run again; the rest replays).
// `stored_pin`: the pin a PostgreSQL store recorded, used when this machine has no file of it
// (the run ran elsewhere).
Json definitionChanges(const spec::Experience& experience, const std::string& run_id,
                       const std::optional<Json>& stored_pin,
                       const plugins::PluginRegistry& plugins) {
  const auto pin_path = run::workspaceDir(experience) / "runs" / (run_id + ".pin.json");
  std::ifstream in(pin_path);
  Json before = Json::parse(in, nullptr, false);
  if ((!in || before.is_discarded()) && stored_pin) {
    before = *stored_pin;
  } else if (!in || before.is_discarded()) {
    std::cerr << "oe: run " << run_id << " has no readable definition pin (" << pin_path.string()
              << "); nodes whose inputs changed run again, the rest replays from the cache\n";
    return nullptr;
  }
  Json diff = run::diffPins(before, run::definitionPin(experience, &plugins));
  auto list = [](const Json& ids) {
    std::string text;
    for (const auto& id : ids) {
      text += (text.empty() ? "" : ", ") + id.get<std::string>();
    }
    return text;
  };
  if (diff["changed"].empty() && diff["added"].empty() && diff["removed"].empty()) {
    std::cerr << "oe: resuming run " << run_id << ": the experience is unchanged\n";
  } else {
    std::cerr << "oe: resuming run " << run_id << ": the experience changed since it ran";
    if (!diff["changed"].empty()) {
      std::cerr << "; changed: " << list(diff["changed"]);
    }
    if (!diff["added"].empty()) {
      std::cerr << "; added: " << list(diff["added"]);
    }
    if (!diff["removed"].empty()) {
      std::cerr << "; removed: " << list(diff["removed"]);
    }
    std::cerr << ". A resume finishes the run: what had landed in it is kept, not run or "
                 "applied again; what had not runs with the experience as it is now.\n";
  }
  return diff;
}

// What would fail a run once it has started, or make it run without what it was asked for,
// is a bad invocation: said and refused (exit 2) before anything is recorded. The provider of
// --llm must have its key unless --llm-replay answers every call: a run asked for a provider
// it cannot reach would otherwise run its tools and then fail every LLM node.
bool checkLlmFlags(const RunArgs& a, const llm::Settings& settings) {
  if (!a.llm.empty() && a.llm != "anthropic" && a.llm != "openai") {
    std::cerr << "oe: unknown --llm value \"" << a.llm << "\"; use anthropic or openai\n";
    return false;
  }
  if (settings.replay_file) {
    std::error_code ec;
    std::ifstream probe(*settings.replay_file);
    if (!std::filesystem::is_regular_file(*settings.replay_file, ec) || !probe) {
      std::cerr << "oe: --llm-replay " << settings.replay_file->string()
                << ": cannot read the recording (does it exist? record one with --llm-record)\n";
      return false;
    }
  } else if (!a.llm.empty()) {
    if (auto choice = llm::chooseProvider(settings); !choice) {
      std::cerr << "oe: " << choice.error().message
                << "; set it in the environment, or leave out --llm, or answer from a "
                   "recording with --llm-replay FILE\n";
      return false;
    }
  }
  if (settings.record_file) {
    const auto folder = settings.record_file->has_parent_path()
                            ? settings.record_file->parent_path()
                            : std::filesystem::path(".");
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec)) {
      std::cerr << "oe: --llm-record " << settings.record_file->string() << ": the folder "
                << folder.string() << " does not exist\n";
      return false;
    }
  }
  return true;
}

// --from/--only must name a node of the experience.
bool checkSelection(const RunArgs& a, const spec::Experience& experience) {
  for (const auto& [flag, id] : {std::pair{"--from", &a.from_node}, {"--only", &a.only_node}}) {
    if (!id->empty() && experience.findNode(*id) == nullptr) {
      std::cerr << "oe: " << flag << ": no node \"" << *id << "\" in " << experience.file.string()
                << '\n';
      return false;
    }
  }
  return true;
}

// ` --experience PATH` when the command was not run in the experience's folder, quoted for a
// POSIX shell when it needs to be, so that the printed command can be pasted.
std::string experienceFlag(const std::string& path) {
  if (path == "." || path.empty()) {
    return "";
  }
  const bool plain = std::all_of(path.begin(), path.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("/._-+:,@").find(c) != std::string_view::npos;
  });
  if (plain) {
    return " --experience " + path;
  }
  std::string quoted = "'";
  for (char c : path) {
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return " --experience " + quoted + "'";
}

// What a resume does with each node whose definition changed (after the chain's landed writes
// are known); `changes` (definition_changes of --json) gets the counts as "landed".
std::string changedNodeNote(const run::ChangedNode& node, const std::string& path) {
  const std::string id = "node \"" + node.node_id + "\"";
  if (node.landed == 0) {
    return "oe: " + id + " changed and nothing of it had landed: it runs with its new definition";
  }
  const std::string writes = node.landed == 1 ? "its write that had landed is"
                                              : "its " + std::to_string(node.landed) +
                                                    " writes that had landed are";
  // `oe run` takes the folder as its argument, where the other commands take --experience.
  std::string folder = experienceFlag(path);
  if (!folder.empty()) {
    folder.erase(0, std::string_view(" --experience").size());
  }
  return "oe: " + id + " changed; " + writes +
         " kept (those calls are not run or applied again; any other runs with the new "
         "definition). To run it again entirely: oe run" + folder + " --from " + node.node_id;
}

// The final state, each value on one line and cut when long: the summary is for reading, and
// `oe state FIELD` prints a whole value.
void printFinalState(const spec::Experience& experience, const Json& state,
                     const std::string& path) {
  constexpr size_t kMaxValue = 200;
  constexpr size_t kShown = 160;
  bool any = false;
  for (const auto& field : experience.state.fields) {
    auto it = state.find(field.name);
    if (it == state.end()) {
      continue;
    }
    const std::string value = it->dump();
    std::cout << "  " << field.name << ": ";
    if (value.size() <= kMaxValue) {
      std::cout << value << '\n';
    } else {
      std::cout << oneLine(value, kShown) << " (" << value.size() << " chars; `oe state "
                << field.name << experienceFlag(path) << "` prints it all)\n";
    }
    any = true;
  }
  if (!any) {
    std::cout << "  (empty)\n";
  }
}

// --events-fd: `oe mcp` reads the events of the run it started from this fd, for its progress
// notifications. The fd is not passed on to the programs the run starts.
events::Listener eventsToFd(int fd, events::Listener next) {
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  return [next = std::move(next),
          out = std::make_shared<mcp::LineWriter>(fd)](const events::Event& event) {
    if (next) {
      next(event);
    }
    // Only what oe mcp reads crosses (the run's start and end, each node's end): the other
    // events of a node would cost a write each for nothing (docs/mcp.md). The log's own line
    // crosses, never parsed.
    const std::string_view name = event.type();
    if (name.starts_with("run.") || name == "node.finished" || name == "node.failed" ||
        name == "node.skipped") {
      out->writeLine(event.line());  // a reader gone away turns it off; the run goes on
    }
  };
}

// The live view's nodes: the experience's, with their phases' titles (reference §10 groups the
// dashboard by phase).
std::vector<view::NodeInfo> viewNodes(const spec::Experience& experience) {
  std::vector<view::NodeInfo> nodes;
  nodes.reserve(experience.nodes.size());
  for (const auto& node : experience.nodes) {
    view::NodeInfo info{node.id, node.kind, node.phase.value_or(""), "", node.for_each.has_value()};
    for (const auto& phase : experience.phases) {
      if (phase.id == info.phase) {
        info.phase_title = phase.title.value_or(phase.id);
        break;
      }
    }
    nodes.push_back(std::move(info));
  }
  return nodes;
}

// The failed or cancelled calls of a summary, one line per node and error: a for_each's items
// that ended alike share a line ("each (3 calls): cancelled"), so the lines add up to the count.
void printCalls(std::string_view what, const std::vector<run::NodeFailure>& calls) {
  constexpr size_t kListed = 10;
  size_t lines = 0;
  for (size_t i = 0; i < calls.size();) {
    size_t same = 1;
    while (i + same < calls.size() && calls[i + same].node_id == calls[i].node_id &&
           calls[i + same].error == calls[i].error) {
      ++same;
    }
    if (lines == kListed) {
      std::cout << what << ": ... and " << calls.size() - i << " more\n";
      return;
    }
    std::cout << what << ": " << calls[i].node_id;
    if (same > 1) {
      std::cout << " (" << same << " calls)";
    }
    std::cout << ": " << oneLine(calls[i].error) << '\n';
    ++lines;
    i += same;
  }
}

int exitCodeOf(const run::RunSummary& s) {
  switch (s.status) {
    case run::RunStatus::kSuccess:
      return kExitOk;
    case run::RunStatus::kInterrupted:
      return 128 + (s.signal != 0 ? s.signal : SIGINT);  // as a shell reports a killed command
    default:
      return kExitFailed;
  }
}

// `oe run PATH` of a path that holds no experience is a bad invocation (exit 2), said and refused
// before anything runs; an experience that does not validate is a failed run (exit 1).
bool namesAnExperience(const std::string& path) {
  const auto yaml = spec::resolveExperiencePath(path);
  std::error_code ec;
  if (std::filesystem::is_regular_file(yaml, ec)) {
    return true;
  }
  if (std::filesystem::is_directory(path, ec)) {
    std::cerr << "oe: " << path << " is not an experience: the folder has no experience.yaml. "
              << "Pass an experience's folder or its yaml file (`oe init NAME` creates one)\n";
  } else if (std::filesystem::exists(path, ec)) {
    std::cerr << "oe: " << path << " is not an experience: pass a folder with an "
              << "experience.yaml, or a .yaml file\n";
  } else {
    std::cerr << "oe: " << yaml.string() << " does not exist; pass an experience's folder or its "
              << "yaml file\n";
  }
  return false;
}

// `resume`: the run resumed, or empty for `oe run`; `path`: the experience as the user named it.
int execute(const RunArgs& a, const std::string& path, Json run_args,
            const std::string& resumed_from, const std::string& chain_id = {},
            llm::Usage prior_usage = {}, const std::optional<Json>& stored_pin = {}) {
  run::RunOptions options;
  options.llm.env = llm::Environment::fromProcess();
  options.llm.provider_flag = a.llm;
  if (!a.llm_record.empty()) {
    options.llm.record_file = a.llm_record;
  }
  if (!a.llm_replay.empty()) {
    options.llm.replay_file = a.llm_replay;
  }
  if (!parseBudget(a, options.budget_override) || !checkLlmFlags(a, options.llm)) {
    return kExitUsage;
  }
  options.prior_usage = prior_usage;
  options.args = std::move(run_args);
  options.reuse_cache = !a.no_cache;
  options.resumed_from = resumed_from;
  options.chain_id = chain_id;
  options.fresh = a.fresh;
  options.wait_for_lock = a.wait;
  options.on_lock_wait = [](const std::string& holder) {
    std::cerr << "oe: waiting for " << holder << " to finish with this state store (--wait)\n";
  };
  options.from_node = a.from_node;
  options.only_node = a.only_node;
  if (!a.concurrency.empty()) {
    size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(a.concurrency, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != a.concurrency.size() || value < 1) {
      std::cerr << "oe: --concurrency must be a positive integer\n";
      return kExitUsage;
    }
    options.concurrency = value;
  }
  StderrLog log_sink;
  plugins::PluginRegistry sinked(&log_sink);
  // A replay answers the CLIs of cli-agent nodes from the recording: they need not be installed.
  auto experience = loadValidated(path, sinked, a.strict, /*for_run=*/true,
                                  /*starts_programs=*/a.llm_replay.empty());
  if (!experience) {
    return kExitFailed;
  }
  if (!checkSelection(a, *experience)) {
    return kExitUsage;
  }
  options.store_url = resolveStore(a.store, &experience->raw);
  if (!options.store_url.empty() && !pg::isUrl(options.store_url)) {
    std::cerr << "oe: --store (or OE_STORE, runtime.store) takes a PostgreSQL URL "
                 "(postgresql://...), not \""
              << options.store_url
              << "\"; to move the SQLite state file, set state.store in experience.yaml\n";
    return kExitUsage;
  }
  // OE_WORKERS=1 sends every run through the queue, as --workers does (a deployment where
  // machines of workers serve every run sets it once).
  const char* workers_env = std::getenv("OE_WORKERS");  // NOLINT(concurrency-mt-unsafe): read only
  options.workers = a.workers || (workers_env != nullptr && std::string_view(workers_env) == "1");
  if (options.workers && !resolveStoreUrl(options.store_url, "oe: --workers",
                                          " to hand node attempts to `oe worker` processes")) {
    return kExitUsage;
  }
  Json changes;
  if (!resumed_from.empty()) {
    changes = definitionChanges(*experience, resumed_from, stored_pin, sinked);
    if (changes.is_object()) {
      for (const auto& id : changes["changed"]) {
        options.changed_nodes.push_back(id.get<std::string>());
      }
    }
  }
  // Progress on stderr: the live view on a terminal (or under --tui), else a line per event.
  std::unique_ptr<view::LiveView> live;
  std::unique_ptr<Progress> progress;
  if (!a.quiet && !a.json && !a.no_tui && (a.tui || view::LiveView::wanted(STDERR_FILENO))) {
    auto started = view::LiveView::start(STDERR_FILENO, view::Dashboard(viewNodes(*experience)));
    if (started) {
      live = std::move(*started);
    } else if (a.tui) {
      std::cerr << "oe: warning: --tui: " << started.error().message
                << "; showing plain progress lines\n";
    }
  }
  // Before the run starts: on the terminal above the live view, else on stderr.
  std::function<void(const std::string&)> say = [](const std::string& line) {
    std::cerr << line << '\n';
  };
  if (live) {
    say = [v = live.get()](const std::string& line) { v->printAbove(line); };
  }
  options.on_changed_nodes = [&changes, &say, &path](const std::vector<run::ChangedNode>& nodes) {
    Json landed = Json::object();
    for (const auto& node : nodes) {
      say(changedNodeNote(node, path));
      landed[node.node_id] = node.landed;
    }
    changes["landed"] = std::move(landed);
  };
  if (live) {
    options.on_event = [v = live.get()](const events::Event& event) { v->onEvent(event); };
    log_sink.divertTo([v = live.get()](std::string line) { v->printAbove(std::move(line)); });
    options.on_lock_wait = [v = live.get()](const std::string& holder) {
      v->printAbove("oe: waiting for " + holder + " to finish with this state store (--wait)");
    };
  } else if (!a.quiet && !a.json) {
    progress = std::make_unique<Progress>();
    options.on_event = [p = progress.get()](const events::Event& event) { p->onEvent(event); };
  }
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
  if (live) {
    live->finish();  // the final frame stays above the summary
    log_sink.divertTo(nullptr);
  }
  progress.reset();  // no "still running" line after the summary
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
  const auto& s = *summary;
  const auto& failures = s.failures;
  const bool resumable =
      s.status == run::RunStatus::kInterrupted || s.stop_reason == "budget_exhausted";
  if (a.json) {
    Json failed = Json::array();
    for (const auto& f : failures) {
      failed.push_back({{"node_id", f.node_id}, {"error", f.error}});
    }
    Json cancelled = Json::array();
    for (const auto& c : s.cancellations) {
      cancelled.push_back({{"node_id", c.node_id}, {"error", c.error}});
    }
    Json out = {{"run_id", s.run_id},
                {"status", run::toString(s.status)},
                {"final_state", s.final_state},
                {"nodes",
                 {{"ran", s.ran},
                  {"cached", s.cached},
                  {"failed", s.failed},
                  {"cancelled", s.cancelled},
                  {"skipped", s.skipped},
                  {"reused", s.reused}}},
                {"failures", std::move(failed)},
                {"cancelled", std::move(cancelled)},
                {"warnings", s.warnings}};
    if (!s.stop_reason.empty()) {
      out["reason"] = s.stop_reason;
    }
    if (s.signal != 0) {
      out["signal"] = s.signal;
    }
    if (!s.chain_id.empty()) {
      out["chain_id"] = s.chain_id;
    }
    if (s.usage.calls > 0) {
      out["usage"] = s.usage.toJson();
    }
    if (!changes.is_null()) {
      out["definition_changes"] = changes;
    }
    std::cout << out.dump(2) << '\n';
  } else {
    // The counts are calls (an item of a for_each is one), as the lines below list them.
    std::cout << "run " << s.run_id << ": " << run::toString(s.status) << " in " << ms << " ms ("
              << s.ran << " ran, " << s.cached << " cached, " << s.failed << " failed, ";
    if (s.cancelled > 0) {
      std::cout << s.cancelled << " cancelled, ";
    }
    std::cout << s.skipped << " skipped)\n";
    printCalls("failed", failures);
    printCalls("cancelled", s.cancellations);
    if (!failures.empty() || !s.cancellations.empty()) {
      std::cout << "errors in full: oe inspect " << s.run_id << experienceFlag(path) << '\n';
    }
    constexpr size_t kWarnings = 10;
    for (size_t i = 0; i < s.warnings.size() && i < kWarnings; ++i) {
      std::cout << "warning: " << s.warnings[i] << '\n';
    }
    if (s.warnings.size() > kWarnings) {
      std::cout << "warning: ... and " << s.warnings.size() - kWarnings
                << " more, each a run.warning in " << s.event_log.string() << '\n';
    }
    if (s.held_back_by_default_concurrency > 0) {
      std::cout << "note: one node ran at a time (runtime.concurrency defaults to 1) while up to "
                << s.held_back_by_default_concurrency
                << " more were ready; set runtime.concurrency (or --concurrency N) to run "
                   "independent nodes in parallel\n";
    }
    if (s.usage.calls > 0) {
      char cost[32];
      std::snprintf(cost, sizeof cost, "%.4f", s.usage.cost_usd);
      std::cout << "llm: " << s.usage.calls << " calls, " << s.usage.input_tokens << " in + "
                << s.usage.output_tokens << " out tokens, $" << cost << '\n';
    }
    if (!s.stop_reason.empty()) {
      std::cout << "stopped: " << s.stop_reason << '\n';
    }
    if (s.stop_reason == "budget_exhausted") {
      std::cout << "raise runtime.budget (or pass --max-tokens / --max-cost-usd) and ";
    }
    if (resumable) {
      std::cout << "run `oe resume " << s.run_id << experienceFlag(path) << "` to continue\n";
    }
    std::cout << "events: " << s.event_log.string() << '\n' << "final state:\n";
    printFinalState(*experience, s.final_state, path);
  }
  if (a.evolve && s.status == run::RunStatus::kSuccess) {
    // Reference §9.2: evolve after a success; its failures only warn. Its output goes to
    // stderr under --json, which keeps stdout one JSON document.
    EvolveOptions evolve_options;
    evolve_options.experience = path;
    evolve_options.run_id = s.run_id;
    evolve_options.llm = options.llm;
    if (const int code = evolve(evolve_options, a.json ? std::cerr : std::cout); code != kExitOk) {
      std::cerr << "oe: warning: --evolve: evolving run " << s.run_id
                << " failed (the message above says why); the run itself succeeded\n";
    }
  }
  return exitCodeOf(s);
}

void addCommonFlags(CLI::App& cmd, RunArgs& a) {
  addStoreOption(cmd, a.store);
  // Kept as text and parsed here, for a message that names the flag; the help says what it takes.
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
    if (!namesAnExperience(a->path)) {
      exit_code = kExitUsage;
      return;
    }
    exit_code = execute(*a, a->path, std::move(args), "");
  });
}

// `oe resume` on a PostgreSQL store: the run from oe_runs, its args, chain and prior usage from
// its lines in oe_events.
int resumeFromStore(const RunArgs& a, const std::string& store) {
  auto conn = openStore(store);
  if (!conn) {
    std::cerr << "oe: " << conn.error().message << '\n';
    return kExitFailed;
  }
  auto run = resolveStoreRun(**conn, a.run_id, a.last, a.experience);
  if (!run) {
    return kExitUsage;
  }
  auto log = pgstore::readRunEvents(**conn, run->run_id);
  if (!log) {
    std::cerr << "oe: cannot resume run " << run->run_id << ": " << log.error().message << '\n';
    return kExitFailed;
  }
  for (const auto& warning : log->warnings) {
    std::cerr << "oe: warning: " << warning << '\n';
  }
  Json args = Json::object();
  if (!log->events.empty() && stringField(log->events.front(), "type") == "run.started") {
    args = log->events.front().value("args", Json::object());
  } else {
    std::cerr << "oe: run " << run->run_id
              << " has no run.started in the store's events; resuming with no args\n";
  }
  const std::string chain_id = run->chain_id.empty() ? run->run_id : run->chain_id;
  RunArgs with_store = a;
  with_store.store = store;
  return execute(with_store, a.experience, std::move(args), run->run_id, chain_id,
                 priorUsage(log->events), run->pin);
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
  cmd->callback([a, &exit_code] {
    // A PostgreSQL store: the run, its chain and its usage come from the database, so a
    // resume works on another machine than the one that ran it.
    // runtime.store from the yaml, loaded quietly (execute() reports its diagnostics).
    const auto quiet = spec::loadExperience(spec::resolveExperiencePath(a->experience));
    const std::string store =
        resolveStore(a->store, quiet.experience ? &quiet.experience->raw : nullptr);
    if (pg::isUrl(store)) {
      exit_code = resumeFromStore(*a, store);
      return;
    }
    auto run = resolveRun(a->experience, a->run_id, a->last);
    if (!run) {
      exit_code = kExitUsage;
      return;
    }
    auto log = events::readEventLog(run->log);
    if (!log) {
      std::cerr << "oe: cannot resume run " << run->id << ": " << log.error().message << '\n';
      exit_code = kExitFailed;
      return;
    }
    for (const auto& warning : log->warnings) {
      std::cerr << "oe: warning: " << warning << '\n';
    }
    Json args = Json::object();
    // The chain is named by its first run; a log from before chains were recorded started one.
    std::string chain_id = run->id;
    if (!log->events.empty() && stringField(log->events.front(), "type") == "run.started") {
      const Json& started = log->events.front();
      args = started.value("args", Json::object());
      if (auto it = started.find("chain_id");
          it != started.end() && it->is_string() && !it->get<std::string>().empty()) {
        chain_id = it->get<std::string>();
      }
    } else {
      std::cerr << "oe: " << run->log.string()
                << " does not start with run.started; resuming with no args\n";
    }
    exit_code =
        execute(*a, a->experience, std::move(args), run->id, chain_id, priorUsage(log->events));
  });
}

}  // namespace oe::cli

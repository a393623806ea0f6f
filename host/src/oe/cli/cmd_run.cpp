// `oe run [path]` and `oe resume <run-id>`: execute an experience and print its final state.
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/events/event_log.hpp"
#include "oe/run/run.hpp"

namespace oe::cli {
namespace {

struct RunArgs {
  std::string path = ".";
  std::string args_json = "{}";
  std::string concurrency;
  bool no_cache = false;
  bool json = false;
  bool quiet = false;
  bool strict = false;
  std::string run_id;        // resume: the run to continue
  std::string from_node;
  std::string only_node;
  std::string experience = ".";
};

// Live progress on stderr: one line per finished, failed, skipped or retried node.
void printProgress(const Json& event) {
  const std::string type = event.value("type", "");
  const std::string node = event.value("node_id", "");
  if (type == "node.finished") {
    std::cerr << "  ok      " << node << '\n';
  } else if (type == "node.failed") {
    std::cerr << "  FAILED  " << node << ": " << event.value("error", "") << '\n';
  } else if (type == "node.skipped") {
    std::cerr << "  skipped " << node << " (" << event.value("reason", "") << ")\n";
  } else if (type == "node.retry") {
    std::cerr << "  retry   " << node << " after attempt " << event.value("attempt", 0) << " in "
              << event.value("delay_ms", 0) << " ms: " << event.value("error", "") << '\n';
  } else if (type == "node.activity") {
    std::cerr << "          " << node << ": " << event.value("activity", "") << '\n';
  } else if (type == "node.log") {
    std::cerr << "  log     " << node << ": " << event.value("message", "") << '\n';
  }
}

// Compares the resumed run's pinned definition with the experience as it is now, and says on
// stderr which nodes changed (they, and what depends on them, run again; the rest replays).
Json definitionChanges(const spec::Experience& experience, const std::string& run_id) {
  const auto pin_path = run::workspaceDir(experience) / "runs" / (run_id + ".pin.json");
  std::ifstream in(pin_path);
  Json before = Json::parse(in, nullptr, false);
  if (!in || before.is_discarded()) {
    std::cerr << "oe: run " << run_id << " has no readable definition pin (" << pin_path.string()
              << "); nodes whose inputs changed run again, the rest replays from the cache\n";
    return nullptr;
  }
  Json diff = run::diffPins(before, run::definitionPin(experience));
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
    std::cerr << ". Those run again, and whatever their new outputs reach; everything else "
                 "replays from the cache.\n";
  }
  return diff;
}

int execute(const RunArgs& a, const std::filesystem::path& path, Json run_args,
            const std::string& resumed_from) {
  run::RunOptions options;
  options.args = std::move(run_args);
  options.use_cache = !a.no_cache;
  options.resumed_from = resumed_from;
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
  if (!a.quiet && !a.json) {
    options.on_event = printProgress;
  }
  StderrLog log_sink;
  plugins::PluginRegistry sinked(&log_sink);
  auto experience = loadValidated(path, sinked, a.strict);
  if (!experience) {
    return kExitFailed;
  }
  Json changes;
  if (!resumed_from.empty()) {
    changes = definitionChanges(*experience, resumed_from);
  }
  const auto start = std::chrono::steady_clock::now();
  auto summary = run::runExperience(*experience, sinked, options);
  if (!summary) {
    std::cerr << "oe: " << summary.error().message << '\n';
    return kExitFailed;
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  const auto& s = *summary;
  if (a.json) {
    Json out = {{"run_id", s.run_id},
                {"status", run::toString(s.status)},
                {"final_state", s.final_state},
                {"nodes",
                 {{"ran", s.ran},
                  {"cached", s.cached},
                  {"failed", s.failed},
                  {"skipped", s.skipped},
                  {"reused", s.reused}}}};
    if (!s.stop_reason.empty()) {
      out["reason"] = s.stop_reason;
    }
    if (!changes.is_null()) {
      out["definition_changes"] = changes;
    }
    std::cout << out.dump(2) << '\n';
  } else {
    std::cout << "run " << s.run_id << ": " << run::toString(s.status) << " in " << ms << " ms ("
              << s.ran << " ran, " << s.cached << " cached, " << s.failed << " failed, "
              << s.skipped << " skipped)\n";
    if (!s.stop_reason.empty()) {
      std::cout << "stopped: " << s.stop_reason << '\n';
    }
    std::cout << "events: " << s.event_log.string() << '\n' << "final state:\n";
    printState(std::cout, *experience, s.final_state);
  }
  return s.status == run::RunStatus::kSuccess ? kExitOk : kExitFailed;
}

void addCommonFlags(CLI::App& cmd, RunArgs& a) {
  cmd.add_option("--concurrency", a.concurrency, "Nodes run at once (overrides runtime.concurrency)");
  cmd.add_flag("--no-cache", a.no_cache, "Run every node; neither read nor write the node cache");
  cmd.add_flag("--json", a.json, "Print {run_id, status, final_state} as JSON, no progress");
  cmd.add_flag("-q,--quiet", a.quiet, "No per-node progress on stderr");
  cmd.add_flag("--strict", a.strict, "Treat validation warnings (unknown keys) as errors");
}

}  // namespace

void addRunCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Run an experience (a folder with experience.yaml, or the yaml)");
  cmd->add_option("path", a->path, "Experience folder or yaml file")->capture_default_str();
  cmd->add_option("--args", a->args_json, "Run-level args as a JSON object; they reach every node");
  auto* from = cmd->add_option("--from", a->from_node,
                               "Run this node and everything downstream; take the rest from the "
                               "current state and the cache without executing it");
  cmd->add_option("--only", a->only_node, "Run this one node against the current state")
      ->excludes(from);
  addCommonFlags(*cmd, *a);
  cmd->callback([a, &exit_code] {
    Json args = Json::parse(a->args_json, nullptr, false);
    if (args.is_discarded() || !args.is_object()) {
      std::cerr << "oe: --args must be valid JSON (an object, e.g. --args '{\"name\":\"World\"}')\n";
      exit_code = kExitUsage;
      return;
    }
    exit_code = execute(*a, a->path, std::move(args), "");
  });
}

void addResumeCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "resume", "Run an experience again with a past run's args; finished nodes replay from the cache");
  cmd->add_option("run-id", a->run_id, "The run to resume")->required();
  cmd->add_option("--experience", a->experience, "Experience folder")->capture_default_str();
  addCommonFlags(*cmd, *a);
  cmd->callback([a, &exit_code] {
    auto yaml = spec::resolveExperiencePath(a->experience);
    const auto log_path = yaml.parent_path() / ".openexpertise" / "runs" / (a->run_id + ".jsonl");
    auto log = events::readEventLog(log_path);
    if (!log) {
      std::cerr << "oe: cannot resume run " << a->run_id << ": " << log.error().message << '\n';
      exit_code = kExitFailed;
      return;
    }
    for (const auto& warning : log->warnings) {
      std::cerr << "oe: warning: " << warning << '\n';
    }
    Json args = Json::object();
    if (!log->events.empty() && log->events.front().value("type", "") == "run.started") {
      args = log->events.front().value("args", Json::object());
    } else {
      std::cerr << "oe: " << log_path.string()
                << " does not start with run.started; resuming with no args\n";
    }
    exit_code = execute(*a, a->experience, std::move(args), a->run_id);
  });
}

}  // namespace oe::cli

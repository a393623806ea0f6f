// `oe run [path]` and `oe resume <run-id>`: execute an experience and print its final state.
#include <chrono>
#include <cstdio>
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
  std::string llm;         // --llm anthropic|openai
  std::string llm_record;  // --llm-record FILE
  std::string llm_replay;  // --llm-replay FILE
  std::string max_tokens;
  std::string max_cost_usd;
};

// What the runs a resumed run continues already spent on LLM calls: the chain's earlier total
// (usage_before in run.started) plus every node.tokens event of the log.
llm::Usage priorUsage(const std::vector<Json>& events) {
  llm::Usage total;
  for (const auto& event : events) {
    const std::string type = event.value("type", "");
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
            const std::string& resumed_from, llm::Usage prior_usage = {}) {
  run::RunOptions options;
  options.llm.env = llm::Environment::fromProcess();
  options.llm.provider_flag = a.llm;
  if (!a.llm_record.empty()) {
    options.llm.record_file = a.llm_record;
  }
  if (!a.llm_replay.empty()) {
    options.llm.replay_file = a.llm_replay;
  }
  if (!parseBudget(a, options.budget_override)) {
    return kExitUsage;
  }
  options.prior_usage = prior_usage;
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
  auto experience = loadValidated(path, sinked, a.strict, /*for_run=*/true);
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
    if (s.usage.calls > 0) {
      out["usage"] = s.usage.toJson();
    }
    if (!changes.is_null()) {
      out["definition_changes"] = changes;
    }
    std::cout << out.dump(2) << '\n';
  } else {
    std::cout << "run " << s.run_id << ": " << run::toString(s.status) << " in " << ms << " ms ("
              << s.ran << " ran, " << s.cached << " cached, " << s.failed << " failed, "
              << s.skipped << " skipped)\n";
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
      std::cout << "raise runtime.budget (or pass --max-tokens / --max-cost-usd) and run `oe "
                   "resume "
                << s.run_id << "` to continue\n";
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
  cmd.add_option("--llm", a.llm, "LLM provider: anthropic or openai (default: from the API keys set)");
  auto* record = cmd.add_option("--llm-record", a.llm_record,
                                "Append every LLM request and response to this JSONL file");
  cmd.add_option("--llm-replay", a.llm_replay,
                 "Answer LLM calls from a recording, without network; a request not in it fails "
                 "its node")
      ->excludes(record);
  cmd.add_option("--max-tokens", a.max_tokens,
                 "Token budget of the run (overrides runtime.budget.max_tokens)");
  cmd.add_option("--max-cost-usd", a.max_cost_usd,
                 "Cost budget of the run in USD (overrides runtime.budget.max_cost_usd)");
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
    exit_code = execute(*a, a->experience, std::move(args), a->run_id, priorUsage(log->events));
  });
}

}  // namespace oe::cli

// `oe evolve --evaluate`: a candidate copy run with the evaluated run's args, the original's
// node cache and the evolve command's LLM settings, and its evidence against that run.
#include "oe/evolve/evaluate.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "oe/events/event_log.hpp"
#include "oe/run/run.hpp"
#include "oe/spec/loader.hpp"
#include "oe/spec/workspace.hpp"

namespace oe::evolve {
namespace fs = std::filesystem;

namespace {

// ms since the epoch of the event's timestamp; -1 if it has none or it is malformed.
int64_t tsMs(const Json& event) {
  const auto ts = event.find("ts");
  return ts != event.end() && ts->is_string() ? events::parseIsoMs(ts->get<std::string>()) : -1;
}

std::string usd(double cost) {
  char text[32];
  std::snprintf(text, sizeof text, "$%.4f", cost);
  return text;
}

std::string shortJson(const Json& value) {
  constexpr size_t kMax = 60;
  std::string text = value.dump();
  return text.size() <= kMax ? text : text.substr(0, kMax) + "...";
}

}  // namespace

Baseline baselineOf(const std::vector<Json>& events, const Json& state_diff) {
  Baseline b;
  b.status = "unfinished";
  int64_t start = -1;
  for (const auto& event : events) {
    const std::string type = stringField(event, "type");
    if (type == "run.started") {
      b.args = event.value("args", Json::object());
      start = tsMs(event);
    } else if (type == "run.finished") {
      b.status = stringField(event, "status", "unfinished");
      const int64_t end = tsMs(event);
      b.ms = start >= 0 && end >= start ? end - start : -1;
    } else if (type == "node.tokens") {
      b.usage.input_tokens += event.value("input_tokens", int64_t{0});
      b.usage.output_tokens += event.value("output_tokens", int64_t{0});
      b.usage.cost_usd += event.value("cost_usd", 0.0);
      b.usage.calls += 1;
    }
  }
  for (const auto& entry : state_diff) {
    if (entry.is_object() && entry.contains("field") && entry["field"].is_string()) {
      b.state[entry["field"].get<std::string>()] = entry.value("after", Json());
    }
  }
  return b;
}

std::string Evaluation::line(const Baseline& baseline) const {
  std::string text = status + " (run " + run_id + ": " + std::to_string(ran) + " ran, " +
                     std::to_string(cached) + " cached, " + std::to_string(failed) +
                     " failed) in " + std::to_string(ms) + " ms (evaluated run: " +
                     (baseline.ms >= 0 ? std::to_string(baseline.ms) + " ms" : "unknown") + ", " +
                     baseline.status + "); tokens " + std::to_string(baseline.usage.tokens()) +
                     " -> " + std::to_string(usage.tokens()) + ", cost " +
                     usd(baseline.usage.cost_usd) + " -> " + usd(usage.cost_usd) + "; state: ";
  if (state_changes.empty()) {
    text += "the same final values";
  } else {
    std::string changes;
    for (const auto& c : state_changes) {
      // "?": the evaluated run's state diff has no value for it (it did not write it, or the
      // state store no longer holds its history).
      changes += (changes.empty() ? "" : ", ") + c["field"].get<std::string>() + " " +
                 (c.value("baseline_known", true) ? shortJson(c["baseline"]) : "?") + " -> " +
                 shortJson(c["candidate"]);
    }
    text += changes;
  }
  if (!failures.empty()) {
    std::string list;
    for (const auto& f : failures) {
      list += (list.empty() ? "" : "; ") + f;
    }
    text += "; failures: " + list;
  }
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

Json Evaluation::toJson() const {
  Json out = Json::object();
  out["run_id"] = run_id;
  out["folder"] = folder.string();
  out["status"] = status;
  out["nodes"] = {{"ran", ran}, {"cached", cached}, {"failed", failed}};
  out["failures"] = failures;
  out["ms"] = ms;
  out["usage"] = usage.toJson();
  out["state_changes"] = state_changes;
  return out;
}

Result<Evaluation> evaluate(const std::vector<FileChange>& changes, const fs::path& yaml_path,
                            const fs::path& folder, const plugins::PluginRegistry& registry,
                            const llm::Settings& llm, const Baseline& baseline) {
  if (auto written = writeCandidate(changes, yaml_path, folder); !written) {
    return written.error();
  }
  // The original's node cache: nodes the proposal leaves alone (same definition, same inputs)
  // replay from it instead of running (and paying) again.
  const fs::path original_cache = spec::workspaceDir(yaml_path) / "cache";
  const fs::path candidate_workspace = spec::workspaceDir(folder / yaml_path.filename());
  std::error_code ec;
  if (fs::is_directory(original_cache, ec)) {
    fs::create_directories(candidate_workspace, ec);
    fs::copy(original_cache, candidate_workspace / "cache", fs::copy_options::recursive, ec);
    if (ec) {
      return makeError("cannot copy the node cache " + original_cache.string() + " to " +
                       folder.string() + ": " + ec.message());
    }
  }
  auto loaded = spec::loadExperience(folder / yaml_path.filename());
  if (!loaded.experience) {
    return makeError("the candidate in " + folder.string() + " does not load");
  }
  // The same keys as the original's runs (whose cache was copied), mcp.json and the like included.
  spec::attachReadFiles(*loaded.experience, run::kindCatalog(registry));
  run::RunOptions options;
  options.args = baseline.args.is_object() ? baseline.args : Json::object();
  options.llm = llm;
  const auto start = std::chrono::steady_clock::now();
  auto summary = run::runExperience(*loaded.experience, registry, options);
  if (!summary) {
    return summary.error();
  }
  Evaluation e;
  e.ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
             .count();
  e.run_id = summary->run_id;
  e.folder = folder;
  e.status = std::string(run::toString(summary->status));
  e.ran = summary->ran;
  e.cached = summary->cached;
  e.failed = summary->failed;
  for (const auto& f : summary->failures) {
    e.failures.push_back(f.node_id + ": " + f.error);
  }
  e.usage = summary->usage;
  // Every field either side has a value for, in the candidate's declaration order.
  for (const auto& field : loaded.experience->state.fields) {
    const auto before = baseline.state.find(field.name);
    const auto after = summary->final_state.find(field.name);
    const bool has_before = before != baseline.state.end();
    const bool has_after = after != summary->final_state.end();
    if (!has_before && !has_after) {
      continue;
    }
    const Json b = has_before ? *before : Json();
    const Json a = has_after ? *after : Json();
    if (!has_before || b != a) {
      e.state_changes.push_back({{"field", field.name},
                                 {"baseline", b},
                                 {"candidate", a},
                                 {"baseline_known", has_before}});
    }
  }
  return e;
}

}  // namespace oe::evolve

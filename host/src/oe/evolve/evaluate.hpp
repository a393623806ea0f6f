// `oe evolve --evaluate`: a validated proposal run for real. Its changes are applied to a copy
// of the experience that starts with a copy of the original workspace's node cache (so nodes
// the proposal does not change replay instead of running), it is run with the evaluated run's
// args and the evolve command's LLM settings (a --llm-replay recording answers the calls whose
// requests did not change), and the evidence is compared with the evaluated run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/evolve/proposals.hpp"
#include "oe/llm/ledger.hpp"
#include "oe/llm/settings.hpp"
#include "oe/plugins/registry.hpp"

namespace oe::evolve {

// What the evaluated run did, from its log and state diff.
struct Baseline {
  Json args = Json::object();   // run.started args
  Json state = Json::object();  // field -> value after the run, for the fields it wrote
  std::string status;           // run.finished status ("unfinished" without one)
  int64_t ms = -1;              // run.started to run.finished; -1 when unknown
  llm::Usage usage;             // its node.tokens events
};
[[nodiscard]] Baseline baselineOf(const std::vector<Json>& events, const Json& state_diff);

struct Evaluation {
  std::string run_id;
  std::filesystem::path folder;  // the candidate's copy, kept for inspection
  std::string status;            // success | partial | failed | interrupted
  size_t ran = 0;
  size_t cached = 0;
  size_t failed = 0;
  std::vector<std::string> failures;  // "node: error"
  int64_t ms = 0;
  llm::Usage usage;
  Json state_changes = Json::array();  // [{field, baseline, candidate}] where they differ

  // "**oe evaluation:** ..." without the prefix: status, nodes, time, tokens and cost against
  // the baseline, and the state fields whose final value differs.
  [[nodiscard]] std::string line(const Baseline& baseline) const;
  [[nodiscard]] Json toJson() const;
};

// Writes the candidate into `folder` (a fresh copy of the experience with `changes` applied and
// <workspace>/cache copied from the original), runs it with the baseline's args and `llm`, and
// compares. The error is a set-up failure (copy, load, a run that could not start); a failed
// run is an Evaluation with its failures.
Result<Evaluation> evaluate(const std::vector<FileChange>& changes,
                            const std::filesystem::path& yaml_path,
                            const std::filesystem::path& folder,
                            const plugins::PluginRegistry& registry, const llm::Settings& llm,
                            const Baseline& baseline);

}  // namespace oe::evolve

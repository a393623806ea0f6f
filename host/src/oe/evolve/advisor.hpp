// The evolution advisor's inputs (reference §8.1: the YAML, the run's events, the per-field state
// diff of the run) and its one in-process call: the `evolution` node kind, created from the
// plugin registry and invoked once with a host context whose oe.llm/1 is the given LlmService,
// so runtime.limits, the budget and --llm-record/--llm-replay apply as in a run.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/evolve/proposals.hpp"
#include "oe/llm/llm_service.hpp"
#include "oe/plugins/host_context.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/spec/experience.hpp"

namespace oe::evolve {

// [{field, before, after}] for every declared field the run wrote, in state.schema order:
// before = the first of its rows' value_old (null when the field had no value), after = the
// last value_new, over the run's rows of state_history with D17 appends expanded back to whole
// lists. Opens the store read-side; a run holding it is waited for by no one: the caller says.
Result<Json> stateDiff(const std::filesystem::path& db_path, const spec::StateSpec& schema,
                       std::string_view run_id);

// The node kind's args: {experience_yaml, run_events, state_diff, run_id}.
[[nodiscard]] Json advisorArgs(std::string experience_yaml, Json run_events, Json state_diff,
                               std::string_view run_id);

struct AdvisorResult {
  std::vector<Proposal> proposals;
  llm::Usage usage;  // what the call spent (node.tokens), for the summary
};

// Creates a node of kind `evolution` (from whichever plugin provides it) with `node_spec` (its
// id, and optional model / max_tokens / prompt) and invokes it once with `args`. Its log lines
// and activity go to `sink` under the node id. The error names the missing plugin or carries
// the plugin's message (a refused budget, a replay miss, a provider error).
Result<AdvisorResult> askAdvisor(const plugins::PluginRegistry& registry, llm::LlmService& llm,
                                 const Json& node_spec, const Json& args,
                                 const std::filesystem::path& experience_dir,
                                 plugins::LogSink& sink);

}  // namespace oe::evolve

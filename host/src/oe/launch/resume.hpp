// Where `oe resume` picks a run up, as data: the run's args, the chain it continues, what the
// chain already spent on LLM calls and the definition it ran (its pin), read from its event log
// (file store) or from oe_runs and oe_events (PostgreSQL, so a resume works on another machine
// than the one that ran it); and which nodes changed since.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/llm/ledger.hpp"
#include "oe/pg/connection.hpp"
#include "oe/pgstore/run_record.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/runs/run_history.hpp"
#include "oe/spec/experience.hpp"

namespace oe::launch {

struct ResumePoint {
  std::string run_id;    // the run resumed
  std::string chain_id;  // the chain it continues, named by its first run
  Json args = Json::object();
  llm::Usage prior_usage;          // what the chain spent before (priorUsage)
  std::optional<Json> stored_pin;  // the pin a PostgreSQL store recorded
  // What a front end says before the run, each after "oe: " (a warning starts "warning: "): a
  // torn line of the log, a log without run.started (resumed with no args).
  std::vector<std::string> notes;
};

// What the runs a resumed run continues already spent on LLM calls: the chain's earlier total
// (usage_before in run.started) plus every node.tokens event of the log.
[[nodiscard]] llm::Usage priorUsage(const std::vector<Json>& events);

// The resume point of `run` from its event log; a log from before chains were recorded starts
// its own chain. The error: the log cannot be read.
Result<ResumePoint> resumePointOf(const runs::RunRecord& run);

// The same for `run` of a PostgreSQL store, from its lines in oe_events.
Result<ResumePoint> resumePointInStore(pg::Connection& conn, const pgstore::RunInfo& run);

// The pin of run `run_id` (runs/<run-id>.pin.json beside its log, else `stored_pin`) against the
// experience as it is now with `plugins`: run::diffPins' {changed, added, removed}. The error:
// no readable pin (a resume then runs again the nodes whose inputs changed, the rest replays).
Result<Json> definitionChanges(const spec::Experience& experience, const std::string& run_id,
                               const std::optional<Json>& stored_pin,
                               const plugins::PluginRegistry& plugins);

}  // namespace oe::launch

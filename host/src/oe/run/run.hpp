// Running an experience: the public entry point of the run engine (docs/run-engine.md).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/llm/ledger.hpp"
#include "oe/llm/settings.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/spec/experience.hpp"

namespace oe::run {

// kInterrupted: stopped by SIGINT/SIGTERM (RunSummary::signal says which); `oe resume` continues.
enum class RunStatus { kSuccess, kPartial, kFailed, kInterrupted };
[[nodiscard]] std::string_view toString(RunStatus status);

struct RunOptions {
  Json args = Json::object();             // run-level --args (D1: they reach every node)
  std::optional<int> concurrency;         // --concurrency; wins over runtime.concurrency
  bool use_cache = true;                  // --no-cache turns it off
  std::string run_id;                     // empty: a new UUID v4
  std::optional<std::filesystem::path> state_db;  // override of the state file (tests, nested runs)
  std::string resumed_from;               // set by `oe resume`: recorded in run.started
  std::function<void(const Json& event)> on_event;  // live progress (the CLI prints it)
  // --from NODE: run NODE and everything downstream of it; --only NODE: run NODE alone. Every
  // other node is not executed: its edge_output comes from the cache, the state is as it is.
  std::string from_node;
  std::string only_node;
  // The LLM service (docs/llm.md): --llm, --llm-record/--llm-replay and the environment; the
  // experience's runtime.limits/budget/prices are applied on top by runExperience, then
  // `budget_override` (--max-tokens / --max-cost-usd) wins over runtime.budget.
  llm::Settings llm;
  llm::Budget budget_override;
  llm::Usage prior_usage;  // what the runs this one resumes spent (the budget covers them)
  // The chain of runs this one continues (issue 10): `oe resume X` passes X's chain id (the
  // run id of the chain's first run); empty for a fresh `oe run`, which starts a chain named
  // by its own run id. A write that already landed in the chain is not applied again.
  std::string chain_id;
  bool fresh = false;          // --fresh: start from an empty state (the cache still serves)
  bool wait_for_lock = false;  // --wait: wait for a run holding the state store, not refuse
  // With wait_for_lock, called once (with who holds the store) before waiting for it.
  std::function<void(const std::string& holder)> on_lock_wait;
};

// A node (or for_each item) that failed, with its error as the log has it.
struct NodeFailure {
  std::string node_id;
  std::string error;
};

struct RunSummary {
  std::string run_id;
  RunStatus status = RunStatus::kSuccess;
  Json final_state = Json::object();
  std::filesystem::path event_log;
  size_t ran = 0;      // node calls that executed and succeeded
  size_t cached = 0;   // node calls replayed from the cache
  size_t failed = 0;   // nodes that failed
  size_t skipped = 0;  // nodes skipped (predecessor or `when`)
  size_t reused = 0;   // not selected by --from/--only: taken from the cache, not executed
  std::string stop_reason;  // why the run stopped early (fail_run, interrupted,
                            // budget_exhausted), else empty
  llm::Usage usage;         // this run's LLM calls
  llm::Usage usage_total;   // with the runs it resumes
  int signal = 0;           // SIGINT or SIGTERM when status is kInterrupted, else 0
  std::string chain_id;     // the chain of runs this run belongs to (see RunOptions::chain_id)
  std::vector<NodeFailure> failures;  // in the order they failed
  std::vector<std::string> warnings;  // run.warning events (e.g. a for_each over an unset field)
};

// Runs a loaded and validated experience. Errors here are set-up failures (state file cannot be
// opened, a kind has no plugin, ...); node failures are part of the summary, not errors.
Result<RunSummary> runExperience(const spec::Experience& experience,
                                 const plugins::PluginRegistry& plugins, const RunOptions& options);

// <experience dir>/.openexpertise
[[nodiscard]] std::filesystem::path workspaceDir(const spec::Experience& experience);

// The experience's state database: `state.store` relative to its folder (D14), else
// <workspace>/state.sqlite.
[[nodiscard]] std::filesystem::path statePath(const spec::Experience& experience);

// The definition a run ran (issue 3, pinning): the SHA-256 of the experience file and, per node,
// of its spec plus the content of every file it names. Written next to the run's log as
// runs/<run-id>.pin.json by runExperience.
[[nodiscard]] Json definitionPin(const spec::Experience& experience);

// Nodes whose definition differs between two pins: {"changed": [...], "added": [...],
// "removed": [...]}, each in the current experience's declaration order (removed: the old one's).
[[nodiscard]] Json diffPins(const Json& before, const Json& after);

}  // namespace oe::run

// Running an experience: the public entry point of the run engine (docs/run-engine.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/events/event.hpp"
#include "oe/llm/ledger.hpp"
#include "oe/llm/settings.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/secrets/secret_set.hpp"
#include "oe/spec/experience.hpp"
#include "oe/spec/validate.hpp"

namespace oe::llm {
class LlmService;
}
namespace oe::state {
struct WriteMeta;
}

namespace oe::run {

namespace engine {
class Run;
}

// How a run that is part of another (a nested experience) is stopped from outside: by its
// parent's call being cancelled (Ctrl-C, timeout_ms, fail_run). Any thread. A stop that comes
// before the run is attached stops it as soon as it is.
class StopHandle {
 public:
  void stop(const std::string& reason);
  // The engine's side: the run to stop, from its start to its end.
  void attach(engine::Run* run);
  void detach();

 private:
  std::mutex mutex_;
  engine::Run* run_ = nullptr;
  std::optional<std::string> reason_;
};

// What a nested run (docs/kinds-experience.md) takes from the run it is part of; the defaults
// are a top-level run's.
struct Nesting {
  std::string parent_run_id;   // recorded in the child's run.started and run.finished
  std::string parent_node_id;
  int depth = 0;               // 0: a top-level run
  // The experience files of the runs above this one, the top one first (canonical paths).
  std::vector<std::filesystem::path> ancestry;
  // The top run's LLM service: its budget, runtime.limits and recording cover the child's calls
  // (the child's own runtime block is not applied to it). Null: the run makes its own.
  llm::LlmService* llm = nullptr;
  // The parent's secrets (docs/policy.md, "Secrets"): a value the parent handed down in the
  // child's args is redacted in the child's log and state too. Null: none.
  std::shared_ptr<const secrets::SecretSet> secrets;
  std::shared_ptr<StopHandle> stop;
  // state_scope shared: the parent's state when the child starts, written into the child's
  // store first; then every delta the child applies goes to `forward_write` first, which writes
  // the fields the parent declares to the parent's store (blocking) and returns the fields the
  // child must not apply again (they had landed in the parent's chain before).
  Json seed_state;
  std::function<Result<std::vector<std::string>>(const Json& delta, const state::WriteMeta& meta)>
      forward_write;
  // Approvals (docs/policy.md, "Approvals"): a nested run asks in the top run's approvals file,
  // under the top run's chain, keyed by the path of node ids from the top ("nest/review"), so
  // the top run parks with it and `oe approve TOP nest/review` decides it.
  std::string approval_store;  // approvals::Store::open's `where`: a URL or the SQLite file
  std::string approval_chain;
  std::string approval_run_id;
  std::string approval_prefix;  // "nest/" (empty for the top run)
};

// The most runs deep a nested experience may go (the top run is depth 0).
using spec::kMaxNestingDepth;

// kInterrupted: stopped by SIGINT/SIGTERM (RunSummary::signal says which); `oe resume` continues.
// kWaiting: parked on an approval nobody has decided (docs/policy.md, "Approvals"); `oe approve`
// / `oe reject` decide it and continue the run, `oe resume` continues it once decided.
enum class RunStatus { kSuccess, kPartial, kFailed, kInterrupted, kWaiting };
[[nodiscard]] std::string_view toString(RunStatus status);

// A node whose definition changed since the run `oe resume` continues (diffPins' "changed"),
// and how many of its writes had landed in the chain: those are kept as they are (the calls
// that made them are not run or applied again); its other calls run with the new definition.
struct ChangedNode {
  std::string node_id;
  size_t landed = 0;
};

struct RunOptions {
  Json args = Json::object();             // run-level --args (D1: they reach every node)
  std::optional<int> concurrency;         // --concurrency; wins over runtime.concurrency
  bool use_cache = true;                  // false: no node cache at all (throwaway runs)
  // --no-cache turns it off: every call runs rather than reuse a cached output; outputs are
  // still stored, so that a resume replays what landed instead of running it again (a call
  // run again may hand its successors something else; docs/durability.md).
  bool reuse_cache = true;
  std::string run_id;                     // empty: a new UUID v4
  std::optional<std::filesystem::path> state_db;  // override of the state file (tests, nested runs)
  std::string resumed_from;               // set by `oe resume`: recorded in run.started
  // Live progress (the CLI prints it): the log's events and a few live-only ones (node.items,
  // node.log), from any thread; look at event.type() before event.json() (events/event.hpp).
  events::Listener on_event;
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
  // oe resume: the nodes whose definition changed since the run it resumes; once the chain's
  // landed writes are loaded (before run.started), on_changed_nodes gets each with its count.
  std::vector<std::string> changed_nodes;
  std::function<void(const std::vector<ChangedNode>&)> on_changed_nodes;
  bool fresh = false;          // --fresh: start from an empty state (the cache still serves)
  bool wait_for_lock = false;  // --wait: wait for a run holding the state store, not refuse
  // With wait_for_lock, called once (with who holds the store) before waiting for it.
  std::function<void(const std::string& holder)> on_lock_wait;
  Nesting nesting;  // a nested run's link to its parent (oe.subrun/1-draft)
  // --store / OE_STORE / runtime.store, resolved by the CLI: a PostgreSQL URL (pg::isUrl) puts
  // the state, the cache, a copy of the events and the run's record in that database (scope:
  // pgstore::storeScope), and is the work queue of --workers; empty (or a path) = SQLite as
  // before. A nested run stays on SQLite.
  std::string store_url;
  // --workers (with a PostgreSQL store_url): node attempts go to the work queue, run by `oe
  // worker` processes, instead of this process's thread pool (docs/scale-out.md).
  bool workers = false;
  // How long a call that timed out (timeout_ms) may take to stop once cancelled before the run
  // gives it up and goes on (docs/abi.md, "Timeouts and calls that do not stop").
  std::chrono::milliseconds cancel_grace{10000};
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
  // Counted per call: a for_each item, a pipeline stage's item, a loop iteration is one.
  size_t ran = 0;        // calls that executed and succeeded
  size_t cached = 0;     // calls replayed from the cache
  size_t failed = 0;     // calls that failed (each is in `failures`)
  size_t cancelled = 0;  // calls the run stopped: not failed (each is in `cancellations`)
  size_t skipped = 0;    // nodes skipped (predecessor or `when`)
  size_t reused = 0;   // not selected by --from/--only: taken from the cache, not executed
  std::string stop_reason;  // why the run stopped early (fail_run, interrupted,
                            // budget_exhausted), else empty
  llm::Usage usage;         // this run's LLM calls
  llm::Usage usage_total;   // with the runs it resumes
  int signal = 0;           // SIGINT or SIGTERM when status is kInterrupted, else 0
  std::string chain_id;     // the chain of runs this run belongs to (see RunOptions::chain_id)
  std::vector<NodeFailure> failures;  // in the order they failed
  // Calls cancelled because the run was stopping (Ctrl-C, SIGTERM, fail_run elsewhere, a
  // nested run's parent stopped), waiting for a retry then, refused by the LLM budget, or done
  // but not applied (D16 order): `oe resume` runs them. The error says which.
  std::vector<NodeFailure> cancellations;
  std::vector<std::string> waiting;   // kWaiting: the nodes parked on an approval
  std::vector<std::string> warnings;  // run.warning events (e.g. a for_each over an unset field)
  // Neither runtime.concurrency nor --concurrency was set (upstream's default of 1 applied) and
  // up to this many ready main-pass nodes waited at once for the one slot; 0 otherwise.
  size_t held_back_by_default_concurrency = 0;
};

// Runs a loaded and validated experience. Errors here are set-up failures (state file cannot be
// opened, a kind has no plugin, ...); node failures are part of the summary, not errors.
Result<RunSummary> runExperience(const spec::Experience& experience,
                                 const plugins::PluginRegistry& plugins, const RunOptions& options);

// What the loaded plugins say about their kinds (names and spec schemas), for validation.
[[nodiscard]] spec::KindCatalog kindCatalog(const plugins::PluginRegistry& registry);

// The folder of the experience's stores: spec::workspaceDir of its file (docs/storage.md).
[[nodiscard]] std::filesystem::path workspaceDir(const spec::Experience& experience);

// The experience's state database: `state.store` relative to its folder (D14), else
// <workspace>/state.sqlite.
[[nodiscard]] std::filesystem::path statePath(const spec::Experience& experience);

// The definition a run ran (issue 3, pinning): the SHA-256 of the experience file and, per node,
// of its spec plus what its cache key covers as far as the definition fixes it (engine::pinFiles:
// the files it names and imports, the files its literal args name, its cache.inputs, and its
// kind's plugin when `plugins` is given). Written next to the run's log as
// runs/<run-id>.pin.json by runExperience.
[[nodiscard]] Json definitionPin(const spec::Experience& experience,
                                 const plugins::PluginRegistry* plugins = nullptr);

// Nodes whose definition differs between two pins: {"changed": [...], "added": [...],
// "removed": [...]}, each in the current experience's declaration order (removed: the old one's).
[[nodiscard]] Json diffPins(const Json& before, const Json& after);

}  // namespace oe::run

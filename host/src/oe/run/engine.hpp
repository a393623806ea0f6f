// The run engine's coordinator (D5), shared by its parts: the Run class owns a run's state, and
// its members are defined one seam per file: scheduler.cpp (the ready queue and its limits, the
// predecessor and `when` checks at a node's start), control_flow.cpp (for_each, pipelines,
// loops), node_executor.cpp (cache lookup and replay, plugin call, retries, timeouts) with
// call_host.cpp (the Call's host services), call_request.cpp (args, write and cache keys, the
// request) and apply_output.cpp (the output applied to state, cache and successors),
// run_lifecycle.cpp (prepare, execute, cancel, finish and status). All scheduling, state writes
// and event appends happen on the coordinator thread (the one calling runExperience); plugin
// calls run on a worker pool, or inline when nothing else could run.
// Internal to oe_run: nothing outside host/src/oe/run includes it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <boost/asio/post.hpp>

#include "oe/approvals/approval_store.hpp"
#include "oe/cache/cache_store.hpp"
#include "oe/events/event_log.hpp"
#include "oe/expr/args_template.hpp"
#include "oe/expr/condition.hpp"
#include "oe/graph/dag.hpp"
#include "oe/llm/llm_service.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/queue/dispatcher.hpp"
#include "oe/run/control_flow.hpp"
#include "oe/run/invoke_pool.hpp"
#include "oe/run/node_executor.hpp"
#include "oe/run/pin.hpp"
#include "oe/run/ready_queue.hpp"
#include "oe/run/run.hpp"
#include "oe/sandbox/connect_proxy.hpp"
#include "oe/secrets/secret_set.hpp"
#include "oe/state/state_store.hpp"
#include "oe/workspace/worktree.hpp"

namespace oe::run::engine {

namespace asio = boost::asio;

constexpr size_t kMaxPoolThreads = 64;
// Calls a run gives up (after timeout_ms and the grace, Run::abandon) before it stops starting
// work: each keeps its thread until the plugin returns, if ever.
constexpr size_t kMaxAbandonedCalls = 8;

// kWaiting: parked on an approval nobody has decided yet (the run ends `waiting`).
enum class Outcome { kPending, kRunning, kSucceeded, kFailed, kSkipped, kWaiting };

class Run;
struct NodeRuntime;

// The node context given to create (node.h): valid until the node's instances are destroyed.
// It logs as the node; services that need an invocation (events, state) are refused.
class NodeContext final : public oe_host_ctx {
 public:
  NodeContext(Run& run, const NodeRuntime& node);
  ~NodeContext() override { closeHandle(); }
  NodeContext(const NodeContext&) = delete;
  NodeContext& operator=(const NodeContext&) = delete;
  void log(oe_log_level level, std::string_view message) override;
  plugins::EventBudget* eventBudget() override { return &budget_; }

 private:
  Run& run_;
  const NodeRuntime& node_;
  plugins::EventBudget budget_;  // its lines go to the run's log too
};

struct NodeRuntime {
  const spec::NodeSpec* spec = nullptr;
  uint32_t index = 0;
  const plugins::LoadedKind* kind = nullptr;
  expr::ArgsTemplate args;
  std::vector<expr::Condition> conditions;  // `when` of incoming edges
  // nodeJson() of a node kept as a DOM only (a run's nodes have their text), while it can run.
  std::unique_ptr<std::string> raw_dump;
  std::vector<uint32_t> file_ids;  // the files the node names (D4), in the run's FileTable
  bool files_known = false;
  bool key_warned = false;  // said once that its calls cannot be cached (Run::keyCall)
  Json edge_inputs;      // null until a predecessor hands something over (no allocation per node)
  bool main = true;      // false for pipeline stages and loop bodies (they run after the main pass)
  bool selected = true;  // false: outside --from/--only, reused from the cache, never executed
  uint32_t unmet = 0;
  // A main node with an edge from a pipeline stage or a loop body: how many of those pipelines
  // and loops it still waits for (docs/decisions.md).
  uint32_t flow_unmet = 0;
  Outcome outcome = Outcome::kPending;
  // Node instances: one shared instance for reentrant kinds, else a free list.
  std::vector<oe_node*> instances;
  std::vector<oe_node*> idle;
  std::unique_ptr<NodeContext> context;  // made with the first instance
  std::unique_ptr<ForEachRun> each;      // only while a for_each node runs its items
  // `workspace: worktree`: the worktrees of its repository (owned by the Run); null without.
  workspace::Worktrees* worktrees = nullptr;
  // `${secret:NAME}` (docs/policy.md, "Secrets"): the names its definition references (sorted),
  // looked up on its first call of a run that has secrets; empty for every other node.
  std::vector<std::string> secret_names;
  bool secrets_known = false;
};

class Run {
 public:
  Run(const spec::Experience& exp, const RunOptions& options, state::StateStore& store,
      events::EventLog& log, cache::CacheStore* cache, llm::LlmService* llm)
      : exp_(exp), options_(options), store_(store), log_(log), cache_(cache), llm_(llm) {}

  // The kinds come from the registry's table; the unit tests pass a table of in-process kinds
  // (a LoadedKind without a library: create gets a null oe_plugin*).
  Result<void> prepare(const plugins::PluginRegistry& plugins) {
    registry_ = &plugins;
    return prepare(plugins.kinds());
  }
  Result<void> prepare(const std::map<std::string, plugins::LoadedKind, std::less<>>& kinds);
  // Some call changed the files its args name (Run::storeInCache): repin() then holds them as
  // the run left them (its definition files stay as the run read them).
  [[nodiscard]] bool dataFilesChanged() const { return data_files_changed_; }
  // The pin again, after the run. A finished node's file list is freed, so its ids come from
  // the table again (by text, so the same ids).
  Json repin() {
    return buildPin(exp_, [this](size_t i) {
      NodeRuntime& node = nodes_[i];
      return pinFiles(file_table_, file_table_.idsOf(*node.spec), *node.spec, node.kind);
    });
  }
  // definitionPin() from the digests this run computes anyway for its cache keys.
  Json pin() {
    return buildPin(exp_, [this](size_t i) {
      NodeRuntime& node = nodes_[i];
      return pinFiles(file_table_, fileIds(node), *node.spec, node.kind);
    });
  }
  RunSummary execute();
  void destroyInstances();
  void destroyInstances(NodeRuntime& node);
  // The run's secrets (docs/policy.md, "Secrets"), before prepare: substituted into what a
  // plugin gets at the last moment, redacted out of what it hands back; `key` is the store's
  // key of the keyed digest the cache keys of the nodes that use a secret carry.
  void setSecrets(std::shared_ptr<const secrets::SecretSet> secrets, std::string key) {
    secrets_ = secrets && !secrets->empty() ? std::move(secrets) : nullptr;
    secret_key_ = std::move(key);
  }
  // Null when the run has none.
  [[nodiscard]] const secrets::SecretSet* secretSet() const { return secrets_.get(); }

  // Called from worker threads through Call (call_host.cpp).
  void logFromNode(const NodeRuntime& node, oe_log_level level, std::string_view message);
  oe_status llmFromPlugin(Call& call, std::string_view request_json, std::string& out);
  oe_status limitFromPlugin(Call& call, std::string_view name, oe_host_buf* out_slot);
  // oe.cli-replay/1-draft: the LLM service's beginCli / finishCli for the call's node.
  oe_status cliBeginFromPlugin(Call& call, std::string_view request_json, std::string& out);
  oe_status cliFinishFromPlugin(Call& call, std::string_view request_json,
                                std::string_view outcome_json, std::string& out_error);
  oe_status emitFromPlugin(const Call& call, std::string_view type, std::string_view fields);
  // oe.subrun/1-draft (nested.cpp): runs a nested experience on the calling worker thread.
  oe_status subrunFromPlugin(Call& call, std::string_view request_json, std::string& out);

  // What the crash handler says of a call into a plugin (plugins/crash_guard.hpp): the run's id
  // and its log's descriptor. Read on worker threads; both are fixed for the run's life.
  [[nodiscard]] const std::string& runId() const { return log_.runId(); }
  [[nodiscard]] int eventLogFd() const { return log_.fd(); }

  // Any thread: gives up an attempt in the work queue (--workers); its callback reports it.
  void cancelRemote(uint64_t ticket) { dispatcher_->cancel(ticket); }

  // Any thread: stops the run as a signal would (a nested run whose parent call is cancelled),
  // with `reason` as the stop reason.
  void requestStop(std::string reason);

 private:
  // The ready queue and its limits (scheduler.cpp).
  void pump();
  void startNode(NodeRuntime& node);
  void finishNode(NodeRuntime& node, bool ok);
  void skipNode(NodeRuntime& node, std::string_view reason);
  // Whether the node's `when` conditions hold: decided once per chain of runs and recorded
  // (StateStore::recordDecision); an error when the decision could not be stored.
  Result<bool> whenHolds(const NodeRuntime& node);
  void releaseSuccessors(NodeRuntime& node);
  void mainPassDone();

  // Approvals (approval_gate.cpp, docs/policy.md "Approvals"). Before a node with `approval:`
  // (or kind approval) starts: kProceed once approved (a gate gets the decision in `extra`),
  // kParked when nobody has decided yet (the node waits, the run ends `waiting`), kRefused when
  // it was rejected or expired (the node failed, following its on_error).
  enum class Gate { kProceed, kParked, kRefused };
  Gate approvalGate(NodeRuntime& node, Json& extra);
  // The same for one item of a pipeline stage or one iteration of a loop body (`extra` holds
  // its $item/$index/$pipeline or $iter/$loop): asked under the item's write key
  // ("stage@pipeline#2", "body@loop#0"). kRefused: that item's call failed (logged, counted,
  // settled as failed; fail_run or an expired on_timeout: fail stopped the run); the caller
  // goes on as after a failed call. kParked: parked (parkRepeated), the caller starts nothing
  // more and the run ends `waiting`.
  Gate itemApprovalGate(NodeRuntime& node, Json& extra, const Json& edge_inputs);
  // What both ask: the chain's decision on `key`, asking (and parking) when there is none.
  struct Asked {
    Gate gate = Gate::kProceed;
    std::string error;      // kRefused: why, as the node's failure
    bool stop_run = false;  // kRefused by an expired deadline under on_timeout: fail
  };
  Asked askApproval(NodeRuntime& node, const std::string& key, Json& extra,
                    const Json& edge_inputs);
  // A refused question is the node's failure (`item`: of that item or iteration, else -1):
  // logged and counted, and fail_run, or an expired on_timeout: fail, stops the run.
  void failRefused(NodeRuntime& node, const Asked& asked, int64_t item);
  // What `show:` presents, as it is now: {entry: value}, plus the item ($item/$index or
  // $iter) a stage's or loop body's question is about.
  Json approvalShown(const NodeRuntime& node, const Json& extra, const Json& edge_inputs);
  Result<approvals::Store*> approvalStore();
  // The pipelines, then the loops, run one after the other once the ready queue drains (a
  // "unit" numbers them: pipelines first). unitDone releases the main nodes that waited for
  // the unit and runs them before the next unit.
  void runUnit(size_t unit);
  void unitDone(size_t unit);

  // Control flow (control_flow.cpp).
  void pumpForEach(NodeRuntime& node);
  void runPipeline(size_t pipeline_index);
  void runPipelineItem(size_t pipeline_index, size_t item_index, size_t stage_index,
                       Json prev_output, std::shared_ptr<Json> items);
  void runLoop(size_t loop_index, int iteration);
  // A stage's or loop body's call ended: a node called once per item or iteration is failed
  // once any call failed (so what waits for it is skipped), else succeeded.
  void settleRepeated(NodeRuntime& node, bool ok);
  // A stage or loop body parked on an approval (itemApprovalGate): the run ends `waiting`.
  void parkRepeated();
  // D16: runs `settle` now, or, for a for_each item under runtime.deterministic, once every item
  // before it has settled, so array_append fields fill in item order whatever the completion
  // order. `settle` returns false when it did not settle the item (it will come back).
  // `ok`: the outcome is a success (its output is to be applied).
  void inItemOrder(Call& call, bool ok, std::function<bool()> settle);
  // A run.warning event for `id` (a node or a pipeline), kept for the summary too.
  void warn(std::string_view id, std::string message);

  // Nested runs (nested.cpp). With state_scope shared, on the coordinator: a nested run's
  // delta, the fields this run declares written to its store under `parent_key`/<the child's
  // write key>; returns the fields that had already landed (not written again).
  Result<std::vector<std::string>> forwardWrite(const Call& call, const std::string& parent_key,
                                                const Json& delta,
                                                const state::WriteMeta& child_meta);
  // The loaded kinds' names and schemas, for validating a nested experience (built once).
  const spec::KindCatalog& catalog();

  // Runs `work` on the coordinator and returns its result: at once when called there (an
  // inline call's nested run), else posted and waited for (a nested run's shared-state access
  // from a worker thread; the coordinator keeps serving its queue until every call returned).
  template <class Work>
  auto onCoordinator(Work&& work) -> decltype(work()) {
    if (std::this_thread::get_id() == coordinator_) {
      return work();
    }
    std::packaged_task<decltype(work())()> task(std::forward<Work>(work));
    auto result = task.get_future();
    asio::post(io_, [&task] { task(); });
    return result.get();
  }

  // Node execution (node_executor.cpp; keyCall, keyOf and fileIds in call_request.cpp;
  // applyOutput, checkWrites, storeInCache and dropItem in apply_output.cpp).
  void startCall(NodeRuntime& node, Json extra_args, Json edge_inputs,
                 std::function<void(bool, const Json*)> done);
  void attempt(const std::shared_ptr<Call>& call);
  // --workers: the attempt goes to the work queue; its result comes back through invokeDone.
  void attemptRemote(const std::shared_ptr<Call>& call, std::string request);
  // timeout_ms: the timer that cancels the call, and after options_.cancel_grace gives it up.
  void armTimeout(const std::shared_ptr<Call>& call);
  // A call still in the plugin's invoke after its timeout and grace: failed as timed out, while
  // its thread, its instance and its late answer are left behind (docs/abi.md, "Timeouts").
  void abandon(const std::shared_ptr<Call>& call);
  // The create config of a node (node.h): {"experience_dir":..., "node":...}, and "sandbox"
  // when a policy is in force for it (policy_runtime.cpp).
  std::string createConfig(NodeRuntime& node) {
    return "{\"experience_dir\":" + experience_dir_json_ + ",\"node\":" + nodeJson(node) +
           sandboxMember(node) + "}";
  }
  // `,"sandbox":{"exe":..., "confinement":...}` for a node with a policy in force, else "".
  // Starts the node's filtering proxy for a network allow-list (once per node and run).
  std::string sandboxMember(NodeRuntime& node);
  // `workspace: worktree` (workspace_runtime.cpp). prepareWorkspaces finds each such node's
  // repository (an error when there is none). planWorktree sets the call's worktree and returns
  // the request's `,"workdir":"..."` context member ("" for a node without one). runInWorktree
  // runs `invoke` between making the worktree and capturing and removing it (on the attempt's
  // thread); worktreeOutput adds the diff to a succeeded attempt's output and logs node.diff;
  // worktreeNote is what a failed attempt's error says about the worktree it kept.
  Result<void> prepareWorkspaces();
  std::string planWorktree(NodeRuntime& node, Call& call);
  bool runInWorktree(Call& call, const std::function<bool()>& invoke);
  void worktreeOutput(Call& call, Json& output);
  // A cache replay of such a node: its node.diff again (the artifact is the one it captured).
  void replayedDiff(const Call& call, const Json& edge_output);
  void logDiff(const Call& call, Json fields);
  static std::string worktreeNote(const Call& call);
  // Logs policy.applied for an attempt of a node with a policy in force (no-op otherwise).
  void logPolicyApplied(const NodeRuntime& node, int attempt);
  void reuseFromCache(const std::shared_ptr<Call>& call);
  void invokeDone(const std::shared_ptr<Call>& call);
  void attemptFailed(const std::shared_ptr<Call>& call, std::string message);
  bool applyOutput(Call& call, const Json& output, bool from_cache, std::string* error);
  // A delta's fields outside the node's declared `writes`: a warning (once per node and field),
  // or, under runtime.strict_writes, false with the error that refuses the whole write.
  bool checkWrites(const NodeRuntime& node, const Json& delta, std::string* error);
  // The call's output as its cache entry (state_delta, edge_output, metrics).
  void storeInCache(Call& call, const Json& output);
  // Ends a for_each item whose output is not applied (Call::drop), as a cancelled item.
  void dropItem(Call& call);
  // A call that did not succeed: its node.failed event (`cancelled`: stopped by the run, not
  // failed) and its count and line in the summary.
  void settleFailure(const Call& call, const std::string& error, bool cancelled);
  // The run is stopping, or a signal or stop has come whose cancelAll has not run yet.
  bool stopping();
  Result<oe_node*> acquireInstance(NodeRuntime& node);
  void releaseInstance(NodeRuntime& node, oe_node* instance);
  const std::vector<uint32_t>& fileIds(NodeRuntime& node);
  // The call's cache key (docs/durability.md, "What the cache key covers"), its data files, and
  // whether it may be cached at all (cache: false, a kind flagged OE_NODE_KIND_NOT_CACHEABLE, a
  // data folder too large to hash: said once per node).
  void keyCall(NodeRuntime& node, Call& call);
  std::string keyOf(NodeRuntime& node, const Call& call,
                    const std::vector<cache::FileDigest>& data_files);

  // Lifecycle (run_lifecycle.cpp).
  void finishRun();
  void cancelAll(std::string reason);
  void stopForBudget();

  // The position of node `id` in exp_.nodes (and nodes_).
  [[nodiscard]] std::optional<uint32_t> indexOf(std::string_view id) const {
    const spec::NodeSpec* node = exp_.findNode(id);
    if (node == nullptr) {
      return std::nullopt;
    }
    return static_cast<uint32_t>(node - exp_.nodes.data());
  }
  const std::string& nodeJson(NodeRuntime& node) {
    if (!node.spec->text.empty()) {
      return node.spec->text;
    }
    if (!node.raw_dump) {
      node.raw_dump = std::make_unique<std::string>(cache::canonicalJson(node.spec->raw));
    }
    return *node.raw_dump;
  }
  void emitLocal(Json event) {
    if (secrets_) {
      secrets_->redact(event);
    }
    if (options_.on_event) {
      options_.on_event(events::Event(std::move(event)));
    }
  }
  [[nodiscard]] std::string nodeLabel(const NodeRuntime& node) const {
    return "node \"" + node.spec->id + "\" (kind " + node.spec->kind + ")";
  }

  const spec::Experience& exp_;
  const RunOptions& options_;
  state::StateStore& store_;
  events::EventLog& log_;
  cache::CacheStore* cache_;
  llm::LlmService* llm_;
  const plugins::PluginRegistry* registry_ = nullptr;  // null in unit tests: no nested runs
  std::thread::id coordinator_;                        // the thread running execute()
  std::once_flag catalog_once_;
  spec::KindCatalog catalog_;
  graph::Dag dag_;
  std::vector<NodeRuntime> nodes_;
  Json run_args_;
  std::string experience_dir_json_;
  // Per node with a policy in force: its confinement (made once), and the proxies of the nodes
  // with a network allow-list, alive until the run ends (policy_runtime.cpp).
  std::mutex policy_mutex_;
  std::unordered_map<uint32_t, std::string> sandbox_members_;
  // A private folder (0700) for the proxies' sockets, removed after they stopped.
  struct PrivateDir {
    std::string path;
    PrivateDir() = default;
    PrivateDir(const PrivateDir&) = delete;
    PrivateDir& operator=(const PrivateDir&) = delete;
    ~PrivateDir();
  };
  PrivateDir proxy_dir_;
  // One per repository that a node's worktrees come from; the chain's id names their folder.
  std::vector<std::unique_ptr<workspace::Worktrees>> worktrees_;
  std::string chain_id_;
  std::vector<std::unique_ptr<sandbox::ConnectProxy>> proxies_;
  // The run's secrets (null without any) and the store's key for their keyed digests.
  std::shared_ptr<const secrets::SecretSet> secrets_;
  std::string secret_key_;
  // The secrets a node's definition references (empty without secrets_), and what a plugin
  // gets of a node that references some: its definition and bundle args with the values in.
  const std::vector<std::string>& secretNames(NodeRuntime& node);
  [[nodiscard]] std::string withSecrets(std::string_view json_text) const {
    return secrets_->substitute(json_text, /*json_string=*/true);
  }
  [[nodiscard]] Json secretArgs(const NodeRuntime& node, const Call& call) const;
  // The secrets a file of a node's definition (a prompt file) references, read once per run.
  const std::vector<std::string>& secretsInFile(const std::string& rel_path);
  std::unordered_map<std::string, std::vector<std::string>> secret_file_names_;

  asio::io_context io_;
  std::unique_ptr<InvokePool> pool_;
  // The timers of abandoned calls, whose threads may outlive the run: destroyed with the run,
  // before io_ (a timer outliving its io_context would be undefined).
  std::vector<std::unique_ptr<asio::steady_timer>> retired_timers_;
  // The calls given up: their threads hold them past the run, so the run takes back what of
  // theirs belongs to it (a retry's timer) when it ends.
  std::vector<std::shared_ptr<Call>> abandoned_;
  // --workers: where attempts go instead of pool_ (null without it). Destroyed before io_.
  std::unique_ptr<queue::Dispatcher> dispatcher_;
  ReadyQueue ready_;  // main-pass nodes whose predecessors are done, and the concurrency limit
  int calls_in_flight_ = 0;
  std::vector<std::shared_ptr<Call>> active_calls_;
  std::vector<std::shared_ptr<Call>> waiting_calls_;  // failed attempts waiting for their retry
  // The call running inline on this thread, so a signal can cancel it, and whether a signal came
  // (both guarded by inline_mutex_): a call that goes inline after the signal thread looked is
  // cancelled by attempt() itself, since the coordinator, blocked in it, cannot run cancelAll.
  std::mutex inline_mutex_;
  Call* inline_call_ = nullptr;
  bool signalled_ = false;
  // The SIGINT/SIGTERM that came (guarded by inline_mutex_), set before the inline call is
  // cancelled: that call's completion can be queued ahead of the signal's cancelAll and finish the
  // run, which must still be `interrupted` (finishRun reads it).
  int pending_signal_ = 0;
  // The reason of a requestStop (guarded by inline_mutex_), for the same race as pending_signal_.
  std::string pending_stop_reason_;
  bool cancelling_ = false;
  bool main_done_ = false;
  // The default concurrency of 1 is in force (neither runtime.concurrency nor --concurrency), and
  // the most ready nodes seen waiting for its one slot: the summary's hint (RunSummary).
  bool default_concurrency_ = false;
  size_t most_held_back_ = 0;
  bool finished_ = false;
  RunSummary summary_;
  bool any_success_ = false;
  bool any_failure_ = false;
  std::vector<std::string> cache_hits_;  // keys replayed, recorded once at the end (touch)
  FileTable file_table_{exp_.dir};
  bool data_files_changed_ = false;
  bool force_selected_ = false;  // --from/--only: selected nodes execute even on a cache hit
  // Per loop: how many of its iterations had landed in the chain this run continues.
  std::vector<int> loop_landed_;
  // "node\nfield" of each write outside a node's `writes` already warned about.
  std::unordered_set<std::string> outside_writes_;
  // Per unit (pipelines, then loops): the main nodes waiting for it; the unit to run next.
  std::vector<std::vector<uint32_t>> unit_waiters_;
  size_t next_unit_ = 0;
  // The approvals file (opened at the first node that asks) and the nodes parked on it.
  std::unique_ptr<approvals::Store> approvals_;
  std::vector<std::string> parked_;
};

}  // namespace oe::run::engine

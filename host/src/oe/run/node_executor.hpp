// Node execution: one call of a node (or of a for_each item, pipeline stage, loop iteration),
// from its bundle through the cache lookup and replay, the plugin call with its timeout, and the
// retries, to the output applied to the state. The Run members that do it are in
// node_executor.cpp (the call and its attempts), call_host.cpp (the Call as the plugin's host
// context), call_request.cpp (the bundle's args, write key, cache key and request) and
// apply_output.cpp (the output applied); what can be decided without a run is here, as functions.
#pragma once

#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/cache/cache_store.hpp"
#include "oe/common/json.hpp"
#include "oe/llm/llm_service.hpp"
#include "oe/plugins/crash_guard.hpp"
#include "oe/plugins/event_budget.hpp"
#include "oe/plugins/host_context.hpp"
#include "oe/plugins/plugin_library.hpp"
#include "oe/run/run.hpp"
#include "oe/spec/experience.hpp"
#include "oe/workspace/worktree.hpp"

namespace oe::run::engine {

class Run;
struct NodeRuntime;
class LimitSlot;

// Everything one plugin call needs; also the oe_host_ctx the plugin sees during the call.
struct Call final : oe_host_ctx {
  Run* run = nullptr;
  NodeRuntime* node = nullptr;
  Json extra_args;   // $item/$index/$pipeline/$iter/$loop
  Json edge_inputs;  // what predecessors (or the previous pipeline stage) handed over
  Json state_view;   // the node's `reads`, frozen at dispatch
  Json args;
  // args with the values of the secrets its node's own `args:` wrote, for the prompt services
  // of an attempt of a node that uses one (null otherwise): in memory for the call only.
  Json args_with_secrets;
  [[nodiscard]] const Json& promptArgs() const {
    return args_with_secrets.is_null() ? args : args_with_secrets;
  }
  std::string args_json;   // canonical dumps of args, state_view and edge_inputs (cache key
  std::string state_json;  // and request share them)
  std::string edges_json;
  std::string cache_key;
  // The call's identity in its chain of runs (writeKey: "node", "node#3", "stage@p#1", ...).
  std::string write_key;
  // A nested experience this call ran parked on approvals (nested.cpp): their keys
  // ("node/child"); the call's node parks with it instead of failing (attemptFailed).
  std::vector<std::string> parked_in;
  // The files its args name and its cache.inputs match, as they were when it was keyed: after a
  // run that changed them, the output is also stored under the key of the files as it left
  // them (Run::storeInCache).
  std::vector<cache::FileDigest> data_files;
  bool names_paths = false;  // some arg may name a file of the experience (FileTable)
  // Under runtime.deterministic, a run that stopped after an earlier item failed: this item's
  // output is not applied (it would land out of item order) but kept in the cache.
  bool drop = false;
  // The run stopped while this call waited for a retry: cancelled, not failed.
  bool stopped = false;
  int attempt = 0;
  oe_node* instance = nullptr;
  // What the last invocation wrote, moved here when it returned (Call::invoke).
  oe_writer response;
  oe_writer error;
  oe_status status = OE_OK;
  std::atomic<bool> cancelled{false};
  // Under --workers: the dispatcher's ticket of the attempt in the work queue (0: run here), and
  // whether its result has come back (then a cancel is too late, as after kReturned).
  uint64_t remote = 0;
  std::atomic<bool> remote_done{false};
  bool timed_out = false;
  // Where the plugin call is; guarded by phase_mutex, so the kind's cancel reaches the plugin
  // only while invoke runs (node.h's contract), never before it starts or after it returned.
  // kAbandoned: the run gave the call up after its timeout and grace (Run::abandon); whatever
  // invoke returns then is discarded, on its own thread, touching nothing of the run.
  enum class Phase { kQueued, kInvoking, kReturned, kAbandoned };
  std::mutex phase_mutex;
  Phase phase = Phase::kQueued;
  std::thread::id invoking_thread;  // where invoke runs, while kInvoking
  // What the crash handler reports while invoke runs (on the invoking thread's stack); an
  // abandon takes the event log from it, as the run may close its log before invoke returns.
  plugins::CrashScope* crash_scope = nullptr;
  // Invocations started on this call (its attempts): one that returns after a later one started
  // was abandoned, even if the later one has moved the phase on since.
  uint64_t invocations = 0;
  // Under --workers: the attempt was given up; its result, when it comes, is dropped.
  std::atomic<bool> remote_abandoned{false};
  std::unique_ptr<boost::asio::steady_timer> timer;
  // Continuation on the coordinator: success flag and the edge_output (null when absent).
  std::function<void(bool ok, const Json* edge_output)> done;

  llm::CallUsage llm_usage;  // written by oe.llm/1 on the worker thread during the attempt
  // `workspace: worktree` (workspace_runtime.cpp): the attempt's worktree, planned on the
  // coordinator and made, captured and removed on the attempt's thread around the invoke; the
  // diff it captured; whether it was kept (a failed attempt) and why it could not be made.
  std::optional<workspace::Worktree> worktree;
  std::optional<workspace::DiffSummary> diff;
  bool worktree_kept = false;
  // The nested runs running in this attempt (oe.subrun/1-draft), under phase_mutex: each adds
  // itself when it starts and goes when it ends; requestCancel stops them. A call that ran one is
  // not stored in the cache (its key does not cover the child's files; the child's own nodes are
  // cached), set on the worker thread. Also set, before the call, by Run::keyCall for a call
  // that is never cached: it is then neither looked up nor stored.
  std::vector<std::shared_ptr<StopHandle>> children;
  bool uncacheable = false;

  // The runtime.limits slots (oe.limits/1-draft) the plugin holds in this attempt; what it still
  // holds when invoke returns is given back then, so a forgetful plugin cannot starve the run.
  std::mutex slots_mutex;
  std::vector<LimitSlot*> slots;
  void giveBackSlots();

  // Runs the plugin's invoke for this attempt on the calling thread, unless the call was
  // cancelled before it started (then status is OE_CANCELLED and the plugin is not called).
  // False when the run abandoned the call meanwhile: then nothing of the run may be touched.
  bool invoke(const std::string& request);
  // Marks the call cancelled and, if its invoke is running, asks the plugin to stop (the kind's
  // cancel). Any thread. True when this was the first request and the call had not returned yet.
  bool requestCancel();

  Call() = default;
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;
  ~Call() override { closeHandle(); }

  void log(oe_log_level level, std::string_view message) override;
  oe_status emitEvent(std::string_view type, std::string_view fields_json) override;
  oe_status stateGet(std::string_view field, std::string& out_json) override;
  [[nodiscard]] bool isCancelled() const override { return cancelled.load(); }
  plugins::EventBudget* eventBudget() override { return &event_budget; }
  plugins::EventBudget event_budget;  // per invocation (reset when it starts)
  oe_status llmComplete(std::string_view request_json, std::string& out) override;
  oe_status acquireLimit(std::string_view name, oe_host_buf* out_slot) override;
  oe_status cliReplayBegin(std::string_view request_json, std::string& out) override;
  oe_status cliReplayFinish(std::string_view request_json, std::string_view outcome_json,
                            std::string& out_error) override;
  oe_status renderPrompt(std::string_view template_text, std::string& out) override;
  oe_status promptValues(uint32_t indent, std::string& out) override;
  oe_status runSubExperience(std::string_view request_json, std::string& out) override;
  // {...state_view, ...edge_inputs, ...args}: what a prompt's placeholders see (reference §2.1).
  [[nodiscard]] Json promptValueMap() const;
};

// oe.prompt/1, shared by a run's calls and `oe worker`'s: what a prompt's placeholders see,
// {...state_view, ...edge_inputs, ...args} (reference §2.1), and the same as values_json text in
// upstream's key order (the reads, the edge inputs, the args).
[[nodiscard]] Json promptValueMap(const Json& state_view, const Json& edge_inputs,
                                  const Json& args);
[[nodiscard]] std::string promptValuesJson(const std::vector<std::string>& reads,
                                           const Json& state_view, const Json& edge_inputs,
                                           const Json& args, int indent);

// D1: the args a node sees: the run's --args, then the node's own args (resolved against the
// state), then what the control flow injects ($item, $index, ...); a later one wins per key.
[[nodiscard]] Json bundleArgs(const Json& run_args, Json node_args, const Json& extra_args);

// A state write's identity in its chain of runs: the node id, plus the item the control flow
// injected: "node#3" (for_each item 3), "stage@pipeline#2" (pipeline item 2), "body@loop#1"
// (loop iteration 1). `extra` holds what was injected ($index, $pipeline, $loop, $iter).
[[nodiscard]] std::string writeKey(std::string_view node_id, const Json& extra);
// The item a call is of (the events' "item"): a for_each's or pipeline's $index, a loop's
// $iter; -1 for a node's only call.
[[nodiscard]] int64_t itemOf(const Call& call);
// The node a write key belongs to: "each" for "each#3", "stage" for "stage@p#1", "exp" for a
// nested run's "exp#0/child".
[[nodiscard]] std::string_view writeKeyNode(std::string_view write_key);

// The request of one invocation (reference §3.3); every part but the context is already JSON.
// `context_extra`: members appended to the context, each with its leading comma (the
// `,"workdir":"..."` of an attempt in a worktree).
[[nodiscard]] std::string invokeRequest(std::string_view node_json, const Call& call,
                                        std::string_view run_id, std::string_view node_id,
                                        std::string_view experience_dir_json,
                                        std::string_view context_extra = {});

// host.h's rule for emit_event: "node.activity", "node.tokens" or "<plugin_id>.<name>", the name
// of [A-Za-z0-9_.-], and never another type in the host's run., node. or state. namespaces. A
// kind without a plugin (the unit tests') may use the first two only.
[[nodiscard]] bool pluginEventTypeAllowed(std::string_view type, std::string_view plugin_id);

// The message of an invocation that returned `status` (not OE_OK) with `error_text` written.
[[nodiscard]] std::string invocationError(oe_status status, const std::string& error_text,
                                          std::string_view kind);

// The host's own account of a node's LLM calls fills the output's metrics the plugin did not
// report (tokens_in, tokens_out, cost_usd); a value the plugin reported stays.
void addLlmMetrics(Json& output, const llm::Usage& used);

// on_error: retry gives `attempts` attempts in all; after attempt `attempt` failed, whether
// another one follows.
[[nodiscard]] inline bool retriesAfter(const spec::OnError& policy, int attempt) {
  return policy.policy == spec::ErrorPolicy::kRetry && attempt < policy.attempts;
}

// The wait before the attempt after attempt `attempt` (1-based) failed. Linear unless
// exponential is asked for (reference §3.3): base*n or base*2^(n-1).
[[nodiscard]] int64_t retryDelayMs(const spec::OnError& policy, int attempt);

}  // namespace oe::run::engine

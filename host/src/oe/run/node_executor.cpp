// Node execution: a call started (its bundle, the cache lookup and replay, or the reuse of a node
// outside --from/--only), the node's instances, each attempt (inline, on the pool, or in the work
// queue under --workers) with its timeout, the plugin's answer taken in, and a failed attempt
// retried with its backoff, given up after its timeout and grace, or settled as failed.
// The call's host side is call_host.cpp; its request and cache key call_request.cpp; the output
// applied to the state, the cache and the successors apply_output.cpp.
#include "oe/run/node_executor.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <chrono>

#include "oe/run/engine.hpp"

namespace oe::run::engine {

std::string invocationError(oe_status status, const std::string& error_text,
                            std::string_view kind) {
  if (!error_text.empty()) {
    return error_text;
  }
  return status == OE_CANCELLED ? "cancelled"
                                : "the " + std::string(kind) + " plugin failed with status " +
                                      std::to_string(status) + " and no message";
}

void addLlmMetrics(Json& output, const llm::Usage& used) {
  Json& metrics = output["metrics"];
  if (!metrics.is_object()) {
    metrics = Json::object();
  }
  metrics.emplace("tokens_in", used.input_tokens);
  metrics.emplace("tokens_out", used.output_tokens);
  metrics.emplace("cost_usd", used.cost_usd);
}

int64_t retryDelayMs(const spec::OnError& policy, int attempt) {
  const int64_t base = policy.base_ms;
  return policy.backoff == spec::Backoff::kExponential
             ? base * (int64_t{1} << std::min(attempt - 1, 30))
             : base * attempt;
}

void Run::startCall(NodeRuntime& node, Json extra_args, Json edge_inputs,
                    std::function<void(bool, const Json*)> done) {
  auto call = std::make_shared<Call>();
  call->run = this;
  call->node = &node;
  call->extra_args = std::move(extra_args);
  call->edge_inputs = std::move(edge_inputs);
  if (call->edge_inputs.is_null()) {
    call->edge_inputs = Json::object();  // a node no predecessor handed anything to
  }
  call->done = std::move(done);
  if (node.selected) {
    log_.nodeReady(node.spec->id, node.spec->phase);
  }

  // Bundle (reference §3.3): reads -> state_view; D1 args = run args, node args, injected keys.
  call->state_view = Json::object();
  for (const auto& field : node.spec->reads) {
    if (const Json* value = store_.field(field)) {
      call->state_view[field] = *value;
    }
  }
  call->args = bundleArgs(run_args_, node.args.resolve(store_), call->extra_args);
  // Dumped once: the same text goes into the cache key and into the plugin's request.
  call->args_json = cache::canonicalJson(call->args);
  call->state_json = cache::canonicalJson(call->state_view);
  call->edges_json = cache::canonicalJson(call->edge_inputs);
  call->write_key = writeKey(node.spec->id, call->extra_args);

  if (!node.selected) {
    reuseFromCache(call);
    return;
  }
  if (cache_ != nullptr) {
    keyCall(node, *call);
    std::optional<Json> hit;
    std::string replayed;  // the entry replayed when it is not the call's own key's
    if (!force_selected_ && !call->uncacheable) {
      if (options_.reuse_cache) {
        hit = cache_->get(call->cache_key);
      }
      if (!hit) {
        // A call whose write landed earlier in this chain is done (docs/durability.md): when
        // its key changed since (the state it reads was written again later in the run it
        // resumes, by a loop's next iterations say, or its definition changed), it replays
        // the output it landed from, so what it hands on is what it handed on then. Under
        // --no-cache too: that is the chain's own output, not a reuse.
        if (const std::string* landed = store_.landedInput(call->write_key);
            landed != nullptr && !landed->empty() &&
            (!options_.reuse_cache || *landed != call->cache_key)) {
          hit = cache_->get(*landed);
          if (hit) {
            replayed = *landed;
          }
        }
      }
    }
    if (hit) {
      inItemOrder(*call, /*ok=*/true, [this, call, hit = std::move(*hit),
                                       replayed = std::move(replayed)]() mutable {
        if (call->drop) {
          dropItem(*call);  // already in the cache
          return true;
        }
        std::string replay_error;
        if (!applyOutput(*call, hit, true, &replay_error)) {
          // D12: a replay that fails is a miss; the node runs.
          log_.nodeStarted(call->node->spec->id, call->node->spec->phase, itemOf(*call));
          attempt(call);
          return false;
        }
        ++summary_.cached;
        cache_hits_.push_back(replayed.empty() ? call->cache_key : std::move(replayed));
        Json edge_output;
        const bool has_edge = hit.contains("edge_output");
        if (has_edge) {
          edge_output = hit["edge_output"];
          replayedDiff(*call, edge_output);
        }
        // Posted, not called: a for_each of cached items must not recurse once per item.
        asio::post(io_, [call, has_edge, edge_output = std::move(edge_output)] {
          auto finish = std::move(call->done);
          finish(true, has_edge ? &edge_output : nullptr);
        });
        return true;
      });
      return;
    }
  }
  log_.nodeStarted(node.spec->id, node.spec->phase, itemOf(*call));
  attempt(call);
}

void Run::reuseFromCache(const std::shared_ptr<Call>& call) {
  NodeRuntime& node = *call->node;
  ++summary_.reused;
  std::optional<Json> hit;
  if (cache_ != nullptr) {
    keyCall(node, *call);
    if (!call->uncacheable) {
      hit = cache_->get(call->cache_key);
    }
  }
  Json edge_output;
  const bool has_edge = hit && hit->contains("edge_output");
  if (has_edge) {
    edge_output = (*hit)["edge_output"];
    for (uint32_t succ : dag_.succs[node.index]) {
      nodes_[succ].edge_inputs[node.spec->id] = edge_output;
    }
  } else if (!hit) {
    Json warning = {{"type", "node.log"},
                    {"node_id", node.spec->id},
                    {"level", "warn"},
                    {"message",
                     "not selected and not in the cache: its successors get no "
                     "edge_output from it (run it once without --from/--only)"}};
    emitLocal(std::move(warning));
  }
  asio::post(io_, [call, has_edge, edge_output = std::move(edge_output)] {
    auto finish = std::move(call->done);
    finish(true, has_edge ? &edge_output : nullptr);
  });
}

Result<oe_node*> Run::acquireInstance(NodeRuntime& node) {
  const bool reentrant = (node.kind->kind->flags & OE_NODE_KIND_REENTRANT) != 0;
  if (reentrant && !node.instances.empty()) {
    return node.instances.front();
  }
  if (!reentrant && !node.idle.empty()) {
    oe_node* instance = node.idle.back();
    node.idle.pop_back();
    return instance;
  }
  oe_writer err;
  oe_node* instance = nullptr;
  // A node that uses a secret gets its value in its create config (a cli-agent's `env:`, say):
  // in memory only, never in what is stored.
  const std::string config = secrets_ && !secretNames(node).empty()
                                 ? withSecrets(createConfig(node))
                                 : createConfig(node);
  if (!node.context) {
    node.context = std::make_unique<NodeContext>(*this, node);
  }
  const plugins::CrashScope crash_scope("create", plugins::pluginIdOf(*node.kind), node.spec->kind,
                                        node.spec->id, node.spec->id, runId(), eventLogFd());
  const oe_status status = node.kind->kind->create(
      node.kind->library ? node.kind->library->self() : nullptr,
      node.kind->descriptor != nullptr ? node.kind->descriptor : node.kind->kind,
      oe_str{config.data(), config.size()}, node.context->handle(), &instance, &err);
  if (status != OE_OK || instance == nullptr) {
    return makeError(err.data.empty()
                         ? "the " + node.spec->kind + " plugin could not create the node (status " +
                               std::to_string(status) + ")"
                         : err.data);
  }
  node.instances.push_back(instance);
  return instance;
}

void Run::releaseInstance(NodeRuntime& node, oe_node* instance) {
  if ((node.kind->kind->flags & OE_NODE_KIND_REENTRANT) == 0) {
    node.idle.push_back(instance);
  }
}

void Run::destroyInstances() {
  for (auto& node : nodes_) {
    destroyInstances(node);
  }
}

void Run::destroyInstances(NodeRuntime& node) {
  for (oe_node* instance : node.instances) {
    node.kind->kind->destroy(instance);
  }
  node.instances = {};
  node.idle = {};
  // The create context goes with the last instance (its handle is closed, so a plugin that kept
  // it is refused, not handed freed memory); a node that runs again makes a new one.
  node.context.reset();
}

void Run::attempt(const std::shared_ptr<Call>& call) {
  NodeRuntime& node = *call->node;
  ++call->attempt;
  call->response.data.clear();
  call->error.data.clear();
  call->timed_out = false;
  logPolicyApplied(node, call->attempt);
  if (dispatcher_ && node.spec->kind != "experience" && node.worktrees == nullptr) {
    // A nested experience needs this process's services (its store, its plugins' registry),
    // and a worktree this machine's repository: they run here; every other kind goes to the
    // work queue.
    attemptRemote(call, invokeRequest(nodeJson(node), *call, log_.runId(), node.spec->id,
                                      experience_dir_json_));
    return;
  }
  auto instance = acquireInstance(node);
  if (!instance) {
    attemptFailed(call, instance.error().message);
    return;
  }
  call->instance = *instance;
  const std::string workdir = planWorktree(node, *call);
  std::string request;
  if (secrets_ && !secretNames(node).empty()) {
    // The last moment: the values go into the request the plugin reads, and nowhere else (the
    // call's args, its cache key and its events keep `${secret:NAME}`).
    call->args_with_secrets = secretArgs(node, *call);
    std::string args_json = cache::canonicalJson(call->args_with_secrets);
    std::swap(args_json, call->args_json);
    request = invokeRequest(withSecrets(nodeJson(node)), *call, log_.runId(), node.spec->id,
                            experience_dir_json_, workdir);
    std::swap(args_json, call->args_json);
  } else {
    request = invokeRequest(nodeJson(node), *call, log_.runId(), node.spec->id,
                            experience_dir_json_, workdir);
  }
  ++calls_in_flight_;
  active_calls_.push_back(call);

  call->phase = Call::Phase::kQueued;
  // One lambda, not a std::function chosen per call: the usual attempt (no worktree) must not pay
  // a heap allocation for the wrapper on the inline path.
  auto invoke = [this, call, request = std::move(request)] {
    if (call->worktree) {
      return runInWorktree(*call, [&call, &request] { return call->invoke(request); });
    }
    return call->invoke(request);
  };
  const auto timeout = node.spec->timeout_ms;
  // Inline when nothing else could run meanwhile: saves the thread hand-off (35-70 µs here),
  // which dominates cheap nodes. Ready nodes cannot start while the concurrency limit is
  // reached (a fan-out under concurrency 1), so they do not prevent it. A node with a timeout
  // always goes to the pool so the coordinator stays free to fire the timer.
  const bool nothing_else_could_start = ready_.nothingElseCouldStart();
  const bool inline_call = !timeout && calls_in_flight_ == 1 && nothing_else_could_start &&
                           (!node.spec->for_each || node.spec->for_each->concurrency <= 1);
  if (inline_call) {
    {
      std::lock_guard lock(inline_mutex_);
      inline_call_ = call.get();
      if (signalled_) {
        call->requestCancel();  // the signal came before the call was here to see it
      }
    }
    (void)invoke();  // never abandoned: an inline call has no timeout
    {
      std::lock_guard lock(inline_mutex_);
      inline_call_ = nullptr;
    }
    asio::post(io_, [this, call] { invokeDone(call); });
    return;
  }
  armTimeout(call);
  pool_->post([this, call, invoke = std::move(invoke)] {
    if (invoke()) {
      asio::post(io_, [this, call] { invokeDone(call); });
    }
    // else abandoned (Run::abandon): the run has gone on, and `this` may be gone.
  });
}

void Run::armTimeout(const std::shared_ptr<Call>& call) {
  const auto timeout = call->node->spec->timeout_ms;
  if (!timeout) {
    return;
  }
  call->timer = std::make_unique<asio::steady_timer>(io_, std::chrono::milliseconds(*timeout));
  call->timer->async_wait([this, call](const boost::system::error_code& ec) {
    if (ec || !call->requestCancel()) {
      return;
    }
    call->timed_out = true;  // read on this thread, in invokeDone
    // A plugin that ignores the cancel does not hold the run: after the grace the call is given
    // up (invokeDone cancels this timer when the call comes back in time).
    call->timer->expires_after(options_.cancel_grace);
    call->timer->async_wait([this, call](const boost::system::error_code& grace_ec) {
      if (!grace_ec) {
        abandon(call);
      }
    });
  });
}

void Run::abandon(const std::shared_ptr<Call>& call) {
  NodeRuntime& node = *call->node;
  if (call->remote != 0) {
    if (call->remote_done.load() || call->remote_abandoned.exchange(true)) {
      return;  // its result is in, or on its way to invokeDone
    }
  } else {
    std::lock_guard lock(call->phase_mutex);
    if (call->phase != Call::Phase::kInvoking) {
      return;  // it returned: invokeDone is queued
    }
    call->phase = Call::Phase::kAbandoned;
    if (call->crash_scope != nullptr) {
      call->crash_scope->forgetEventLog();
    }
    if (node.kind->library) {
      node.kind->library->adoptAbandoned(node.kind->kind, call->instance);
    }
    pool_->giveUp(call->invoking_thread);
  }
  if (call->remote == 0) {
    // From here the call's thread touches nothing of the run: its context is closed (a host
    // function still running with it finishes first), the slots it holds are given back, and
    // its instance leaves the node's pool, never to be reused or destroyed by this run.
    call->closeHandle();
    call->giveBackSlots();
    std::erase(node.instances, call->instance);
    std::erase(node.idle, call->instance);
    call->instance = nullptr;
  }
  retired_timers_.push_back(std::move(call->timer));  // its handler is running: keep it alive
  abandoned_.push_back(call);
  --calls_in_flight_;
  active_calls_.erase(std::find(active_calls_.begin(), active_calls_.end(), call));
  const auto grace_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.cancel_grace);
  attemptFailed(call, "Node \"" + node.spec->id + "\" timed out after " +
                          std::to_string(*node.spec->timeout_ms) + " ms (timeout_ms) and did not "
                          "stop within " + std::to_string(grace_ms.count()) +
                          " ms of being cancelled: oe gave the call up (the " + node.spec->kind +
                          " plugin may still be running it; what it answers will be ignored). "
                          "Raise timeout_ms, or have the plugin return soon after is_cancelled "
                          "turns true");
  if (abandoned_.size() == kMaxAbandonedCalls && !cancelling_) {
    // Each abandoned call keeps a thread until it returns, if ever: a run that keeps leaving
    // them behind stops, so what it leaves is bounded.
    any_failure_ = true;
    cancelAll(std::to_string(kMaxAbandonedCalls) + " plugin calls did not stop when cancelled; "
              "the run stops starting work so that no more are left running");
  }
}

void Run::attemptRemote(const std::shared_ptr<Call>& call, std::string request) {
  NodeRuntime& node = *call->node;
  ++calls_in_flight_;
  active_calls_.push_back(call);
  call->instance = nullptr;
  call->remote_done = false;
  queue::NewAttempt attempt;
  attempt.run_id = log_.runId();
  attempt.node_id = node.spec->id;
  attempt.call_key = call->write_key;
  attempt.attempt = call->attempt;
  attempt.queue = node.spec->queue.value_or("default");
  attempt.kind = node.spec->kind;
  attempt.config = createConfig(node);
  attempt.request = std::move(request);
  // A worker stores the entry under this key: none for a call that is never cached.
  attempt.cache_key = call->uncacheable ? std::string() : call->cache_key;
  attempt.timeout_ms = node.spec->timeout_ms;
  // The result comes back on the dispatcher's thread and is applied here, on the coordinator,
  // by the same invokeDone as a local call's: state, events, cache, retries, item order.
  call->remote = dispatcher_->submit(std::move(attempt), [this, call](const queue::Finished& f) {
    call->remote_done = true;
    asio::post(io_, [this, call, f] {
      if (call->remote_abandoned.load()) {
        return;  // given up after its timeout and grace: the run went on without it
      }
      const auto status = static_cast<oe_status>(f.result_status);
      call->status = f.ok ? OE_OK : status != OE_OK ? status : OE_INTERNAL;
      call->response.data = f.response;
      call->error.data = f.error;
      if (!f.events.empty()) {
        // The plugin's events, logged here as a local attempt's are (stamped now: a worker's
        // node.activity reaches the log when its attempt is collected, not as it happens).
        const Json events = Json::parse(f.events, nullptr, false);
        for (const Json& event : events.is_array() ? events : Json::array()) {
          const std::string type = stringField(event, "type");
          if (type.empty()) {  // also what is not an object
            continue;
          }
          Json fields = event;
          for (const char* own : {"type", "run_id", "node_id", "ts"}) {
            fields.erase(own);
          }
          (void)log_.nodeEvent(type, call->node->spec->id, fields.dump());
        }
      }
      if (!f.llm_usage.empty()) {
        // What the worker's LLM calls used: the node's metrics and the run's summary count it
        // (the chain's shared budget was charged by the worker already).
        call->llm_usage.usage = llm::Usage::fromJson(Json::parse(f.llm_usage, nullptr, false));
        if (llm_ != nullptr) {
          llm_->countRemoteUsage(call->llm_usage.usage);
        }
      }
      invokeDone(call);
    });
  });
  armTimeout(call);
}

void Run::invokeDone(const std::shared_ptr<Call>& call) {
  NodeRuntime& node = *call->node;
  --calls_in_flight_;
  active_calls_.erase(std::find(active_calls_.begin(), active_calls_.end(), call));
  if (call->timer) {
    call->timer->cancel();
  }
  if (call->instance != nullptr) {  // none for an attempt a worker ran
    releaseInstance(node, call->instance);
  }
  call->instance = nullptr;
  if (secrets_) {
    // A tool that printed a secret, a CLI that echoed one: what the plugin answered is redacted
    // before anything of it reaches the state, the cache, the events or the summary.
    secrets_->redact(call->response.data);
    secrets_->redact(call->error.data);
  }

  if (call->timed_out) {
    attemptFailed(call, "Node \"" + node.spec->id + "\" timed out after " +
                            std::to_string(*node.spec->timeout_ms) +
                            " ms (timeout_ms); raise timeout_ms or make the node faster" +
                            worktreeNote(*call));
    return;
  }
  if (call->status != OE_OK) {
    attemptFailed(call, invocationError(call->status, call->error.data, node.spec->kind) +
                            worktreeNote(*call));
    return;
  }
  Json output = Json::parse(call->response.data, nullptr, false);
  if (output.is_discarded()) {
    std::string head = call->response.data.substr(0, 200);
    attemptFailed(call, nodeLabel(node) + ": the plugin's response is not JSON: " + head);
    return;
  }
  worktreeOutput(*call, output);
  if (call->llm_usage.usage.calls > 0 && output.is_object()) {
    // The host's own account of the node's LLM calls fills what the plugin did not report.
    addLlmMetrics(output, call->llm_usage.usage);
  }
  inItemOrder(*call, /*ok=*/true, [this, call, output = std::move(output)]() mutable {
    if (call->drop) {
      // Paid for: kept in the cache (a valid state_delta object only), so the resume does not
      // pay again; a replay that then fails to apply runs live (D12).
      if (output.is_object() && output.contains("state_delta") &&
          output["state_delta"].is_object()) {
        storeInCache(*call, output);
      }
      dropItem(*call);
      return true;
    }
    std::string error;
    if (!applyOutput(*call, output, false, &error)) {
      attemptFailed(call, std::move(error));  // a retry, or the failure settled in this slot
      return false;
    }
    ++summary_.ran;
    Json edge_output;
    const bool has_edge = output.contains("edge_output");
    if (has_edge) {
      edge_output = std::move(output["edge_output"]);
    }
    auto finish = std::move(call->done);
    finish(true, has_edge ? &edge_output : nullptr);
    return true;
  });
}

void Run::settleFailure(const Call& call, const std::string& error, bool cancelled) {
  const spec::NodeSpec& spec = *call.node->spec;
  log_.nodeFailed(spec.id, error, spec.phase, cancelled, itemOf(call));
  if (cancelled) {
    ++summary_.cancelled;
    summary_.cancellations.push_back(NodeFailure{spec.id, error});
  } else {
    ++summary_.failed;
    summary_.failures.push_back(NodeFailure{spec.id, error});
  }
}

bool Run::stopping() {
  if (cancelling_) {
    return true;
  }
  // A signal or stop whose cancelAll is still queued behind this call's completion.
  std::lock_guard lock(inline_mutex_);
  return signalled_;
}

void Run::attemptFailed(const std::shared_ptr<Call>& call, std::string message) {
  if (secrets_) {
    // Every way a call fails ends here: a plugin's create error that quotes its config, too.
    secrets_->redact(message);
  }
  NodeRuntime& node = *call->node;
  const spec::OnError& policy = node.spec->on_error;
  if (!call->parked_in.empty() && !cancelling_) {
    if (node.main && !node.each) {
      // Its nested experience parked on approvals: this node parks with it, neither failed
      // nor done (its successors wait), and the run ends `waiting` (approval_gate.cpp).
      node.outcome = Outcome::kWaiting;
      parked_.insert(parked_.end(), call->parked_in.begin(), call->parked_in.end());
      (void)log_.nodeEvent("approval.waiting", node.spec->id,
                           Json{{"nested", call->parked_in}}.dump());
      ready_.finished();
      asio::post(io_, [this] { pump(); });
      return;
    }
    if (!node.main) {
      // A pipeline stage or loop body: the pipeline or loop stops at this item and the run
      // ends `waiting`, as when the stage itself asks (control_flow.cpp); the continuation
      // runs this item again, and its nested run finds the decisions.
      parked_.insert(parked_.end(), call->parked_in.begin(), call->parked_in.end());
      (void)log_.nodeEvent("approval.waiting", node.spec->id,
                           Json{{"nested", call->parked_in}, {"key", call->write_key}}.dump());
      parkRepeated();
      return;
    }
    message +=
        ": a for_each item cannot park on an approval; put the approval on the for_each "
        "node (asked once before its items) or on a main-pass node";
  }
  if (call->llm_usage.budget_refused) {
    // Not the node's fault and not worth a retry: the run stops starting work, lets the calls
    // in flight finish (their spend is already reserved), and `oe resume` continues it.
    any_failure_ = true;
    stopForBudget();
    inItemOrder(*call, /*ok=*/false, [this, call, message = std::move(message)] {
      const std::string error = message +
                                "; raise runtime.budget (or pass --max-tokens / --max-cost-usd) "
                                "and run `oe resume " +
                                log_.runId() + "`";
      // Stopped by the budget, not failed: the run stops cleanly and a resume runs it.
      settleFailure(*call, error, /*cancelled=*/true);
      auto finish = std::move(call->done);
      finish(false, nullptr);
      return true;
    });
    return;
  }
  if (!cancelling_ && retriesAfter(policy, call->attempt)) {
    const int64_t delay = retryDelayMs(policy, call->attempt);
    // Logged (an oe addition; upstream only sleeps): `oe inspect --html` draws the failed
    // attempts, and a failure that a retry hid stays visible. Only a failing call pays for it.
    (void)log_.nodeEvent(
        "node.retry", node.spec->id,
        Json{{"attempt", call->attempt}, {"error", message}, {"delay_ms", delay}}.dump(
            -1, ' ', false, Json::error_handler_t::replace));
    call->cancelled = false;
    call->timer = std::make_unique<asio::steady_timer>(io_, std::chrono::milliseconds(delay));
    ++calls_in_flight_;  // the pending retry counts as work in flight
    waiting_calls_.push_back(call);
    call->timer->async_wait([this, call](const boost::system::error_code&) {
      --calls_in_flight_;
      waiting_calls_.erase(std::find(waiting_calls_.begin(), waiting_calls_.end(), call));
      if (cancelling_) {
        call->stopped = true;
        attemptFailed(call, "cancelled before retry");
        return;
      }
      attempt(call);
    });
    return;
  }
  if (policy.policy == spec::ErrorPolicy::kFailRun && !cancelling_) {
    // D7: cancel the remaining work and end the run `failed`.
    any_failure_ = true;
    cancelAll("node \"" + node.spec->id + "\" failed and policy=fail_run: " + message);
  }
  // Cancelled, not failed: the run was stopping (a signal, fail_run elsewhere, a nested run's
  // parent stopped) and the call ended cancelled, or it was waiting for a retry. A timeout is
  // the node's own failure.
  const bool cancelled =
      call->stopped || (call->status == OE_CANCELLED && !call->timed_out && stopping());
  inItemOrder(*call, /*ok=*/false, [this, call, cancelled, message = std::move(message)] {
    settleFailure(*call, message, cancelled);
    auto finish = std::move(call->done);
    finish(false, nullptr);
    return true;
  });
}

}  // namespace oe::run::engine

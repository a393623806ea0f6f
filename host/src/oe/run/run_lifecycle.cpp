// The run's lifecycle: prepare (the graph, the kinds, `when` conditions, --from/--only, the
// pool), execute (the coordinator loop and the signal watch), stopping early (fail_run, a
// signal, the LLM budget) and finishRun (D6/D7 status, flushes, run.finished).
#include "oe/run/run_lifecycle.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>

#include <algorithm>
#include <csignal>
#include <thread>

#include "oe/run/engine.hpp"

namespace oe::run::engine {

RunStatus decideStatus(bool stopped, bool any_success, bool any_failure, int signal) {
  if (signal != 0) {
    return RunStatus::kInterrupted;
  }
  if (stopped) {
    return RunStatus::kFailed;
  }
  if (!any_failure) {
    return RunStatus::kSuccess;
  }
  return any_success ? RunStatus::kPartial : RunStatus::kFailed;
}

Json finishedFields(const RunSummary& summary) {
  Json extra = {{"nodes",
                 {{"ran", summary.ran},
                  {"cached", summary.cached},
                  {"failed", summary.failed},
                  {"skipped", summary.skipped}}}};
  if (summary.cancelled > 0) {
    extra["nodes"]["cancelled"] = summary.cancelled;
  }
  if (summary.reused > 0) {
    extra["nodes"]["reused"] = summary.reused;
  }
  if (!summary.stop_reason.empty()) {
    extra["reason"] = summary.stop_reason;
  }
  return extra;
}

Result<void> Run::prepare(const std::map<std::string, plugins::LoadedKind, std::less<>>& kinds) {
  auto dag = graph::buildDag(exp_);
  if (!dag) {
    return dag.error();
  }
  dag_ = std::move(dag).value();
  run_args_ = options_.args.is_object() ? options_.args : Json::object();
  experience_dir_json_ = jsonQuoted(exp_.dir.string());

  nodes_.resize(exp_.nodes.size());
  for (uint32_t i = 0; i < exp_.nodes.size(); ++i) {
    NodeRuntime& node = nodes_[i];
    const spec::NodeSpec& spec = exp_.nodes[i];
    node.spec = &spec;
    node.index = i;
    const auto kind = kinds.find(spec.kind);
    node.kind = kind == kinds.end() ? nullptr : &kind->second;
    if (node.kind == nullptr) {
      return makeError("node \"" + spec.id + "\": no loaded plugin provides kind \"" + spec.kind +
                       "\"; run `oe plugins` to see the installed kinds");
    }
    node.args = expr::ArgsTemplate::view(spec.args);  // the spec outlives the run
    for (uint32_t edge_index : dag_.in_edges[i]) {
      const auto& edge = exp_.edges[edge_index];
      if (!edge.when) {
        continue;
      }
      auto condition = expr::Condition::compile(*edge.when);
      if (!condition) {
        return makeError("edge " + edge.from + " -> " + edge.to + ": when: " +
                         condition.error().message);
      }
      node.conditions.push_back(std::move(condition).value());
    }
  }
  if (auto workspaces = prepareWorkspaces(); !workspaces) {
    return workspaces;
  }
  for (const auto& pipeline : exp_.pipelines) {
    for (const auto& stage : pipeline.stages) {
      auto it = indexOf(stage);
      if (!it) {
        return makeError("Pipeline \"" + pipeline.id + "\" references unknown stage node \"" +
                         stage + "\"");
      }
      nodes_[*it].main = false;
    }
  }
  for (const auto& loop : exp_.loops) {
    auto it = indexOf(loop.body);
    if (!it) {
      return makeError("Loop \"" + loop.id + "\" references unknown body node \"" + loop.body + "\"");
    }
    if (!loop.until && !loop.max_iters) {
      return makeError("Loop \"" + loop.id + "\" must declare at least one of: until, max_iters");
    }
    nodes_[*it].main = false;
  }
  loop_landed_.assign(exp_.loops.size(), 0);
  if (!exp_.loops.empty()) {
    store_.forEachLanded([this](std::string_view key, std::string_view /*input_key*/) {
      noteLandedIteration(exp_.loops, key, loop_landed_);
    });
  }
  // An edge from a pipeline stage or a loop body to a main node makes that node wait for the
  // pipeline or loop to finish (upstream ran it in the main pass, before them; D19 in
  // docs/compatibility.md).
  const size_t pipelines = exp_.pipelines.size();
  unit_waiters_.assign(pipelines + exp_.loops.size(), {});
  std::vector<size_t> waits;
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    waits.clear();
    for (uint32_t pred : dag_.preds[i]) {
      if (nodes_[pred].main) {
        ++nodes_[i].unmet;
        continue;
      }
      const std::string& id = nodes_[pred].spec->id;
      for (size_t p = 0; p < pipelines; ++p) {
        const auto& stages = exp_.pipelines[p].stages;
        if (std::find(stages.begin(), stages.end(), id) != stages.end()) {
          waits.push_back(p);
        }
      }
      for (size_t l = 0; l < exp_.loops.size(); ++l) {
        if (exp_.loops[l].body == id) {
          waits.push_back(pipelines + l);
        }
      }
    }
    if (!nodes_[i].main || waits.empty()) {
      continue;
    }
    std::sort(waits.begin(), waits.end());
    waits.erase(std::unique(waits.begin(), waits.end()), waits.end());
    for (size_t unit : waits) {
      unit_waiters_[unit].push_back(i);
    }
    nodes_[i].flow_unmet = static_cast<uint32_t>(waits.size());
  }

  const std::string& pick = !options_.only_node.empty() ? options_.only_node : options_.from_node;
  if (!pick.empty()) {
    auto it = indexOf(pick);
    if (!it) {
      return makeError(std::string(options_.only_node.empty() ? "--from" : "--only") +
                       ": no node \"" + pick + "\" in " + exp_.file.string());
    }
    for (auto& node : nodes_) {
      node.selected = false;
    }
    // --from: the node and everything downstream of it (successors in the graph).
    std::vector<uint32_t> stack = {*it};
    while (!stack.empty()) {
      const uint32_t i = stack.back();
      stack.pop_back();
      if (nodes_[i].selected) {
        continue;
      }
      nodes_[i].selected = true;
      if (options_.only_node.empty()) {
        stack.insert(stack.end(), dag_.succs[i].begin(), dag_.succs[i].end());
      }
    }
    force_selected_ = true;
  }
  ready_.setConcurrency(options_.concurrency.value_or(exp_.runtime.concurrency.value_or(1)));
  default_concurrency_ = !options_.concurrency && !exp_.runtime.concurrency;
  int widest_for_each = 1;
  for (const auto& node : exp_.nodes) {
    if (node.for_each) {
      widest_for_each = std::max(widest_for_each, node.for_each->concurrency);
    }
  }
  const size_t threads = std::min<size_t>(
      kMaxPoolThreads,
      static_cast<size_t>(ready_.concurrency()) * static_cast<size_t>(widest_for_each));
  pool_ = std::make_unique<InvokePool>(std::max<size_t>(1, threads));
  if (options_.workers) {
    if (!pg::isUrl(options_.store_url)) {
      return makeError(
          "--workers hands the run's node attempts to `oe worker` processes through "
          "PostgreSQL: pass --store postgresql://... (or set OE_STORE)");
    }
    auto started = queue::Dispatcher::start(options_.store_url, log_.runId(),
                                            {.resumes = options_.resumed_from});
    if (!started) {
      return makeError("the work queue at " + pg::redact(options_.store_url) +
                       " cannot be used: " + started.error().message);
    }
    dispatcher_ = std::move(started).value();
  }
  return {};
}

void Run::requestStop(std::string reason) {
  {
    std::lock_guard lock(inline_mutex_);
    signalled_ = true;  // a call going inline after this is cancelled by attempt()
    // As for a signal: the cancelled call's completion can be queued ahead of the cancelAll
    // below and finish the run, which must still say why it stopped (finishRun reads it).
    if (pending_stop_reason_.empty()) {
      pending_stop_reason_ = reason;
    }
    if (inline_call_ != nullptr) {
      inline_call_->requestCancel();
    }
  }
  asio::post(io_, [this, reason = std::move(reason)]() mutable { cancelAll(std::move(reason)); });
}

RunSummary Run::execute() {
  summary_.run_id = log_.runId();
  coordinator_ = std::this_thread::get_id();
  for (uint32_t i : dag_.topo) {
    if (nodes_[i].main && nodes_[i].unmet == 0 && nodes_[i].flow_unmet == 0) {
      ready_.push(i);
    }
  }
  // Signals are watched on their own thread: the coordinator may be busy in an inline call,
  // which must be cancelled at once, not after it returns.
  // A nested run (depth > 0) is stopped through its parent's call, not by the signals.
  asio::io_context signal_io;
  asio::signal_set signals(signal_io);
  if (options_.nesting.depth == 0) {
    signals.add(SIGINT);
    signals.add(SIGTERM);
  }
  signals.async_wait([this](const boost::system::error_code& ec, int signal_number) {
    if (ec) {
      return;
    }
    {
      std::lock_guard lock(inline_mutex_);
      signalled_ = true;
      pending_signal_ = signal_number;
      if (inline_call_ != nullptr) {
        inline_call_->requestCancel();
      }
    }
    asio::post(io_, [this, signal_number] {
      if (!cancelling_) {
        summary_.signal = signal_number;  // a fail_run or budget stop under way keeps its status
      }
      cancelAll(signal_number == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)");
    });
  });
  std::thread signal_thread([&signal_io] { signal_io.run(); });
  asio::post(io_, [this] { pump(); });
  // Keeps run_one() blocking (not spinning) while the only work in flight is on the pool.
  auto work = asio::make_work_guard(io_);
  while (!finished_) {
    io_.run_one();
  }
  signals.cancel();
  signal_io.stop();
  signal_thread.join();
  pool_.reset();  // waits for the calls it still runs; abandoned ones are not its any more
  for (const auto& call : abandoned_) {
    call->timer.reset();  // a timer must not outlive io_; the call may outlive the run
  }
  return summary_;
}

void Run::finishRun() {
  if (finished_) {
    return;
  }
  {
    // A signal whose cancelAll is still queued behind the completion that ended the run.
    std::lock_guard lock(inline_mutex_);
    if (summary_.signal == 0 && !cancelling_) {
      summary_.signal = pending_signal_;
    }
    if (summary_.stop_reason.empty() && !pending_stop_reason_.empty()) {
      // A stop from outside (a nested run's parent call cancelled) whose cancelAll is queued.
      cancelling_ = true;
      summary_.stop_reason = pending_stop_reason_;
    }
  }
  // D6, plus D7: a run stopped by fail_run (or a signal) is `failed`.
  summary_.status = decideStatus(cancelling_, any_success_, any_failure_, summary_.signal);
  if (!parked_.empty() && !cancelling_ && summary_.signal == 0) {
    // Parked on approvals (approval_gate.cpp): not over, not failed; everything it did is
    // committed below like any run's end, and the process holds nothing while it waits.
    summary_.status = RunStatus::kWaiting;
    summary_.waiting = parked_;
  }
  summary_.final_state = store_.snapshot();
  summary_.held_back_by_default_concurrency = most_held_back_;
  Json extra = finishedFields(summary_);
  if (!summary_.waiting.empty()) {
    extra["waiting"] = summary_.waiting;
  }
  if (options_.nesting.depth > 0) {
    extra["parent_run_id"] = options_.nesting.parent_run_id;
    extra["parent_node_id"] = options_.nesting.parent_node_id;
  }
  if (llm_ != nullptr) {
    summary_.usage = llm_->runUsage();
    summary_.usage_total = llm_->totalUsage();
    if (summary_.usage.calls > 0) {
      extra["usage"] = summary_.usage.toJson();
    }
    if (options_.prior_usage.calls > 0) {
      extra["usage_total"] = summary_.usage_total.toJson();
    }
  }
  // The batched state rows and cache entries reach SQLite before run.finished, so a reader
  // that sees the run finished sees all it wrote. A failure loses nothing: the rows stay in
  // their journals, which the next open folds.
  // Failures here lose nothing, but the user is told, in the progress and in the summary.
  auto warn = [this](const std::string& message) {
    emitLocal(Json{{"type", "node.log"}, {"node_id", ""}, {"level", "warn"},
                   {"message", message}});
    summary_.warnings.push_back(message);
  };
  if (auto flushed = store_.flush(); !flushed) {
    warn(flushed.error().message);
  }
  // One transaction for all the run's hits, so `oe gc` keeps what this run replayed.
  if (cache_ != nullptr) {
    if (auto flushed = cache_->flush(); !flushed) {
      warn(flushed.error().message);
    }
    if (auto touched = cache_->touch(cache_hits_, log_.runId()); !touched) {
      warn(touched.error().message);
    }
  }
  log_.runFinished(toString(summary_.status), extra);
  if (auto failed = log_.writeError()) {
    warn(*failed + "; lines after it may be missing. The state and the cache are not "
         "affected, but `oe inspect` and `oe resume` read the log: free some space or fix its "
         "permissions");
  }
  finished_ = true;
}

void Run::stopForBudget() {
  if (cancelling_) {
    return;
  }
  cancelling_ = true;
  summary_.stop_reason = "budget_exhausted";
  ready_.clear();
  for (const auto& call : waiting_calls_) {
    call->timer->cancel();  // a retry would only meet the same budget
  }
  asio::post(io_, [this] { pump(); });
}

void Run::cancelAll(std::string reason) {
  if (cancelling_) {
    return;
  }
  cancelling_ = true;
  summary_.stop_reason = std::move(reason);
  ready_.clear();
  for (const auto& call : active_calls_) {
    call->requestCancel();
    if (call->timer) {
      call->timer->cancel();
    }
  }
  for (const auto& call : waiting_calls_) {
    call->timer->cancel();
  }
  asio::post(io_, [this] { pump(); });
}

}  // namespace oe::run::engine

// The main pass (D5): the ready queue, its concurrency limit, and what a node's end releases.
// A node whose predecessors are all done is queued; pump() starts queued nodes while the limit
// allows, and hands over to pipelines and loops once nothing is queued or in flight.
#include <boost/asio/post.hpp>

#include "oe/run/engine.hpp"

namespace oe::run::engine {

void Run::pump() {
  if (cancelling_) {
    if (calls_in_flight_ == 0 && !finished_) {
      finishRun();
    }
    return;
  }
  while (ready_.canStart()) {
    const uint32_t index = ready_.pop();
    startNode(nodes_[index]);
    if (cancelling_) {
      return;
    }
  }
  if (default_concurrency_ && !ready_.empty() && ready_.size() > most_held_back_) {
    most_held_back_ = ready_.size();  // independent nodes queue behind the one slot
  }
  if (ready_.drained() && !main_done_) {
    main_done_ = true;
    if (!parked_.empty()) {
      // Everything that could run has: the pipelines and loops run after the main pass, so
      // after the resume that continues it, as they would have in one uninterrupted run.
      finishRun();
      return;
    }
    mainPassDone();
  }
}

void Run::startNode(NodeRuntime& node) {
  // Predecessor check: any failed or skipped predecessor skips this node (reference §3.3).
  for (uint32_t pred : dag_.preds[node.index]) {
    const Outcome o = nodes_[pred].outcome;
    if (o == Outcome::kFailed || o == Outcome::kSkipped) {
      skipNode(node, "predecessor failed or skipped");
      return;
    }
  }
  Result<bool> held = true;
  if (!node.conditions.empty()) {
    held = whenHolds(node);
  }
  if (held && !*held) {
    skipNode(node, "when: condition false");
    return;
  }
  Json extra = Json::object();
  // Not for a node outside --from/--only: it is not executed, so nobody is asked about it.
  if (held && node.spec->approval && node.selected) {
    switch (approvalGate(node, extra)) {
      case Gate::kProceed:
        break;
      case Gate::kParked:
        return;  // not started: its successors wait with it, the run ends `waiting`
      case Gate::kRefused:
      default:
        return;  // failed as its on_error says (approvalGate did it)
    }
  }
  node.outcome = Outcome::kRunning;
  ready_.started();
  if (!held) {
    // Its decision could not be stored, so a resume could decide otherwise: the node fails
    // rather than run on a decision that would not survive a crash.
    const std::string error = "Node \"" + node.spec->id +
                              "\": its `when` decision could not be stored: " +
                              held.error().message +
                              ". Free the disk or fix the store, then `oe resume` the run";
    log_.nodeFailed(node.spec->id, error, node.spec->phase);
    ++summary_.failed;
    summary_.failures.push_back(NodeFailure{node.spec->id, error});
    finishNode(node, false);
    return;
  }
  if (node.spec->for_each) {
    std::optional<Json> items = resolveItems(node.spec->for_each->source, store_);
    const size_t count = items && items->is_array() ? items->size() : 0;
    if (options_.on_event) {
      // Live only, not in the log (whose lines are upstream's): the live view shows k/n.
      emitLocal(Json{{"type", "node.items"}, {"node_id", node.spec->id}, {"count", count}});
    }
    if (count == 0) {
      // Not an array: zero iterations, successors run (reference §3.5).
      if (auto warning = notAListWarning("node \"" + node.spec->id + "\": for_each",
                                         node.spec->for_each->source, items)) {
        warn(node.spec->id, std::move(*warning));
      }
      finishNode(node, true);
      return;
    }
    node.each = std::make_unique<ForEachRun>();
    node.each->items = std::move(*items);
    pumpForEach(node);
    return;
  }
  // Moved, not copied: every predecessor is done, so nothing adds to them any more.
  startCall(node, std::move(extra), std::move(node.edge_inputs),
            [this, &node](bool ok, const Json* /*edge_output*/) { finishNode(node, ok); });
}

Result<bool> Run::whenHolds(const NodeRuntime& node) {
  // Decided once per chain of runs, from the state at the moment the node was ready: a resume
  // finds the state moved on (later nodes, pipelines and loops wrote to it since), so it reads
  // back the decision that was made rather than decide again (docs/durability.md, "Decisions").
  const std::string key = "when:" + node.spec->id;
  if (const std::string* decided = store_.landedInput(key)) {
    return *decided == "held";
  }
  bool held = true;
  for (const auto& condition : node.conditions) {
    if (!condition.test(store_)) {
      held = false;
      break;
    }
  }
  if (auto recorded = store_.recordDecision(
          state::WriteMeta{log_.runId(), node.spec->id, key, held ? "held" : "not held"});
      !recorded) {
    return recorded.error();
  }
  return held;
}

void Run::finishNode(NodeRuntime& node, bool ok) {
  node.outcome = ok ? Outcome::kSucceeded : Outcome::kFailed;
  if (ok) {
    any_success_ = true;
  } else {
    any_failure_ = true;  // its calls were counted as they failed (or were cancelled)
  }
  ready_.finished();
  if (node.main) {
    // A main-pass node never runs again in this run: its plugin instances go now rather than
    // at the end, so memory does not hold one per node (stages and loop bodies keep theirs).
    destroyInstances(node);
    node.raw_dump.reset();
    node.file_ids = {};
  }
  releaseSuccessors(node);
  asio::post(io_, [this] { pump(); });
}

void Run::skipNode(NodeRuntime& node, std::string_view reason) {
  node.outcome = Outcome::kSkipped;
  ++summary_.skipped;
  log_.nodeSkipped(node.spec->id, reason, node.spec->phase);
  releaseSuccessors(node);
}

void Run::releaseSuccessors(NodeRuntime& node) {
  if (!node.main) {
    return;
  }
  for (uint32_t succ : dag_.succs[node.index]) {
    NodeRuntime& next = nodes_[succ];
    if (next.main && --next.unmet == 0 && next.flow_unmet == 0) {
      ready_.push(succ);
    }
  }
}

void Run::mainPassDone() { runUnit(next_unit_); }

void Run::runUnit(size_t unit) {
  const size_t pipelines = exp_.pipelines.size();
  if (unit < pipelines) {
    runPipeline(unit);
  } else if (unit < pipelines + exp_.loops.size()) {
    runLoop(unit - pipelines, 0);
  } else {
    finishRun();
  }
}

void Run::unitDone(size_t unit) {
  next_unit_ = unit + 1;
  bool released = false;
  for (uint32_t i : unit_waiters_[unit]) {
    NodeRuntime& node = nodes_[i];
    if (--node.flow_unmet == 0 && node.unmet == 0) {
      ready_.push(i);
      released = true;
    }
  }
  if (released && !cancelling_) {
    main_done_ = false;  // a main pass of what waited; when it drains, the next unit runs
    pump();
    return;
  }
  runUnit(next_unit_);
}

}  // namespace oe::run::engine

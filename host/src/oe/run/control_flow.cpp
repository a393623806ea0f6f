// Control flow: for_each items under their node's concurrency and, under
// runtime.deterministic, settled in item order (D16); pipelines (each item through the stages in
// turn) and loops (the body again until `until` holds or max_iters ran), after the main pass.
#include "oe/run/control_flow.hpp"

#include <algorithm>

#include "oe/expr/state_path.hpp"
#include "oe/run/engine.hpp"

namespace oe::run::engine {

std::optional<Json> resolveItems(std::string_view path, const expr::StateReader& state) {
  std::optional<Json> items;
  if (auto source = expr::StatePath::parse(path)) {
    items = source->resolve(state);
  }
  return items;
}

std::optional<std::string> notAListWarning(std::string_view what, std::string_view path,
                                           const std::optional<Json>& items) {
  if (items && items->is_array()) {
    return std::nullopt;
  }
  std::string message = std::string(what) + " " + std::string(path);
  if (!items || items->is_null()) {
    message += " is unset, so it ran zero times; write that field before it runs (or check "
               "the path)";
  } else {
    message += " is " + std::string(items->is_object() ? "an " : "a ") + items->type_name() +
               ", not a list, so it ran zero times";
  }
  return message;
}

void Run::warn(std::string_view id, std::string message) {
  (void)log_.nodeEvent("run.warning", id, Json{{"message", message}}.dump());
  summary_.warnings.push_back(std::move(message));
}

bool loopStops(const spec::LoopSpec& loop, int iteration, const expr::StateReader& state,
               bool landed) {
  const int max_iters = loop.max_iters.value_or(100);
  bool stop = iteration >= max_iters;
  if (!stop && !landed && loop.until) {
    auto condition = expr::Condition::compile(*loop.until);
    stop = !condition || condition->test(state);
  }
  return stop;
}

void noteLandedIteration(const std::vector<spec::LoopSpec>& loops, std::string_view key,
                         std::vector<int>& iterations) {
  // "body@loop#N"; a nested run's keys ("node/child@loop#N") are its own loops'.
  const size_t at = key.find('@');
  const size_t hash = key.rfind('#');
  if (at == std::string_view::npos || hash == std::string_view::npos || hash < at ||
      hash + 1 == key.size() || key.find('/') != std::string_view::npos) {
    return;
  }
  const std::string_view body = key.substr(0, at);
  const std::string_view id = key.substr(at + 1, hash - at - 1);
  int iteration = 0;
  for (const char c : key.substr(hash + 1)) {
    if (c < '0' || c > '9' || iteration > 100'000'000) {
      return;
    }
    iteration = iteration * 10 + (c - '0');
  }
  for (size_t i = 0; i < loops.size() && i < iterations.size(); ++i) {
    if (loops[i].id == id && loops[i].body == body) {
      iterations[i] = std::max(iterations[i], iteration + 1);
    }
  }
}

void Run::pumpForEach(NodeRuntime& node) {
  const size_t limit = static_cast<size_t>(std::max(1, node.spec->for_each->concurrency));
  ForEachRun& each = *node.each;
  while (!cancelling_ && each.canDispatch(limit)) {
    const size_t i = each.dispatch();
    Json extra = {{"$item", each.items[i]}, {"$index", i}};
    startCall(node, std::move(extra), node.edge_inputs, [this, &node](bool ok, const Json*) {
      ForEachRun& done = *node.each;
      if (done.itemDone(ok, cancelling_)) {
        finishNode(node, done.succeeded());
      } else {
        pumpForEach(node);
      }
    });
  }
}

void Run::inItemOrder(Call& call, bool ok, std::function<bool()> settle) {
  NodeRuntime& node = *call.node;
  if (!exp_.runtime.deterministic || !node.spec->for_each || !node.each ||
      !call.extra_args.contains("$index")) {
    settle();
    return;
  }
  // A run that stops while items wait for an earlier one that then fails (cancelled, refused by
  // the budget) must not land the later ones: the resumed run would append the earlier item
  // after them, and the list would not be in item order. They are not applied, but their
  // output goes to the cache, so the resume replays them in order without paying again.
  Call* item = &call;
  node.each->order.settle(
      call.extra_args["$index"].get<size_t>(),
      [this, item, ok, settle = std::move(settle)] {
        ForEachRun& each = *item->node->each;
        item->drop = ok && each.halted;  // settle() then keeps it in the cache, unapplied
        const bool consumed = settle();
        if (!ok && cancelling_) {
          each.halted = true;
        }
        return consumed;
      });
}

std::string stageChainStopped(const spec::PipelineSpec& pipeline, size_t item_index,
                              const Json& item, size_t stage_index) {
  std::string item_text = item.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (item_text.size() > 60) {
    size_t cut = 57;
    while (cut > 0 && (static_cast<unsigned char>(item_text[cut]) & 0xC0) == 0x80) {
      --cut;
    }
    item_text = item_text.substr(0, cut) + "...";
  }
  std::string skipped;
  for (size_t i = stage_index + 1; i < pipeline.stages.size(); ++i) {
    skipped += (skipped.empty() ? "\"" : ", \"") + pipeline.stages[i] + "\"";
  }
  return "pipeline \"" + pipeline.id + "\": item " + std::to_string(item_index) + " (" +
         item_text + ") stopped after stage \"" + pipeline.stages[stage_index] +
         "\", which returned no edge_output, so " +
         (pipeline.stages.size() - stage_index > 2 ? "stages " : "stage ") + skipped +
         " did not run for it; a stage hands the next one its edge_output (return one to go on)";
}

void Run::settleRepeated(NodeRuntime& node, bool ok) {
  if (!ok) {
    node.outcome = Outcome::kFailed;
    any_failure_ = true;
    return;
  }
  if (node.outcome != Outcome::kFailed) {
    node.outcome = Outcome::kSucceeded;
  }
  any_success_ = true;
}

void Run::parkRepeated() {
  // Pipelines and loops run one call at a time after the main pass, so nothing else is in
  // flight: the run ends `waiting` now (finishRun), and the continuing run replays what
  // landed and asks again here. Posted: the call that ended before this one is still unwinding.
  asio::post(io_, [this] { finishRun(); });
}

void Run::runPipeline(size_t pipeline_index) {
  if (cancelling_) {
    pump();
    return;
  }
  const auto& pipeline = exp_.pipelines[pipeline_index];
  std::optional<Json> items = resolveItems(pipeline.items, store_);
  if (!items || !items->is_array() || items->empty()) {
    if (auto warning = notAListWarning("pipeline \"" + pipeline.id + "\": items", pipeline.items,
                                       items)) {
      warn(pipeline.id, std::move(*warning));
    }
    unitDone(pipeline_index);
    return;
  }
  runPipelineItem(pipeline_index, 0, 0, nullptr, std::make_shared<Json>(std::move(*items)));
}

void Run::runPipelineItem(size_t pipeline_index, size_t item_index, size_t stage_index,
                          Json prev_output, std::shared_ptr<Json> items) {
  const auto& pipeline = exp_.pipelines[pipeline_index];
  if (cancelling_) {
    pump();
    return;
  }
  if (item_index >= items->size()) {
    unitDone(pipeline_index);
    return;
  }
  if (stage_index >= pipeline.stages.size()) {
    runPipelineItem(pipeline_index, item_index + 1, 0, nullptr, items);
    return;
  }
  NodeRuntime& stage = nodes_[*indexOf(pipeline.stages[stage_index])];
  Json edge_inputs = Json::object();
  if (stage_index > 0) {
    edge_inputs[pipeline.stages[stage_index - 1]] = std::move(prev_output);
  }
  Json extra = {{"$item", (*items)[item_index]}, {"$index", item_index}, {"$pipeline", pipeline.id}};
  // A stage that asks an approval asks before each item's call (approval_gate.cpp). Parked,
  // the pipeline stops at this item: the items after it run after the decision, in order, as
  // in one uninterrupted run. Refused, the item's chain ends as after a failed stage.
  if (stage.spec->approval && stage.selected) {
    const Gate gate = itemApprovalGate(stage, extra, edge_inputs);
    if (gate == Gate::kRefused) {
      runPipelineItem(pipeline_index, item_index + 1, 0, nullptr, items);
    }
    if (gate != Gate::kProceed) {
      return;
    }
  }
  startCall(stage, std::move(extra), std::move(edge_inputs),
            [this, pipeline_index, item_index, stage_index, items, &stage](bool ok, const Json* out) {
              // A stage that failed for one item stays failed: the main nodes that wait for
              // the pipeline through it are skipped, as a for_each node's successors are.
              settleRepeated(stage, ok);
              if (ok && out != nullptr) {
                runPipelineItem(pipeline_index, item_index, stage_index + 1, *out, items);
                return;
              }
              // A failure, or a stage without edge_output, ends this item's chain (§3.5); the
              // latter silently upstream, so oe says it when a stage was left out.
              const auto& stages = exp_.pipelines[pipeline_index].stages;
              if (ok && stage_index + 1 < stages.size()) {
                warn(exp_.pipelines[pipeline_index].id,
                     stageChainStopped(exp_.pipelines[pipeline_index], item_index,
                                       (*items)[item_index], stage_index));
              }
              runPipelineItem(pipeline_index, item_index + 1, 0, nullptr, items);
            });
}

void Run::runLoop(size_t loop_index, int iteration) {
  if (cancelling_) {
    pump();
    return;
  }
  const auto& loop = exp_.loops[loop_index];
  // A resumed loop goes on where it was: the iterations whose writes landed replay (their
  // outputs as they were, not applied again) without asking `until`, which the state now,
  // written by later iterations, would answer differently.
  const bool landed = iteration < loop_landed_[loop_index];
  if (loopStops(loop, iteration, store_, landed)) {
    unitDone(exp_.pipelines.size() + loop_index);
    return;
  }
  NodeRuntime& body = nodes_[*indexOf(loop.body)];
  Json extra = {{"$iter", iteration}, {"$loop", loop.id}};
  // A body that asks an approval asks before each iteration (approval_gate.cpp). Parked, the
  // loop stops at this iteration until the decision; refused, the iteration failed, which stops
  // the loop as any failed iteration does.
  if (body.spec->approval && body.selected) {
    const Gate gate = itemApprovalGate(body, extra, body.edge_inputs);
    if (gate == Gate::kRefused) {
      unitDone(exp_.pipelines.size() + loop_index);
    }
    if (gate != Gate::kProceed) {
      return;
    }
  }
  startCall(body, std::move(extra), body.edge_inputs,
            [this, loop_index, iteration, &body](bool ok, const Json*) {
              settleRepeated(body, ok);
              if (ok) {
                runLoop(loop_index, iteration + 1);
              } else {
                unitDone(exp_.pipelines.size() + loop_index);  // a failed iteration stops it
              }
            });
}

}  // namespace oe::run::engine

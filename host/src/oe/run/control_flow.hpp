// Control flow beyond the ready queue: for_each items (their dispatch under the node's
// concurrency and, under runtime.deterministic, the order their outcomes settle in), pipeline
// items and loop iterations. The Run members that drive them are in control_flow.cpp.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/expr/state_reader.hpp"
#include "oe/spec/experience.hpp"

namespace oe::run::engine {

// D16 (runtime.deterministic): item outcomes waiting for the items before them. An outcome is a
// function that applies it and says whether it consumed the slot (a failed cache replay runs
// live instead, and comes back to the same slot later).
class ItemOrder {
 public:
  // Runs `outcome` for item `index` once every item before it has settled, and then whatever it
  // unblocks, in index order.
  void settle(size_t index, std::function<bool()> outcome) {
    parked_.emplace(index, std::move(outcome));
    while (!parked_.empty() && parked_.begin()->first == next_apply_) {
      auto next = std::move(parked_.begin()->second);
      parked_.erase(parked_.begin());
      if (!next()) {
        break;  // the item runs live and comes back to this slot
      }
      ++next_apply_;
    }
  }
  // The item whose outcome is to be applied next.
  [[nodiscard]] size_t nextToApply() const { return next_apply_; }
  [[nodiscard]] size_t parked() const { return parked_.size(); }

 private:
  size_t next_apply_ = 0;
  std::map<size_t, std::function<bool()>> parked_;
};

// The bookkeeping of one for_each node's items, only for a node that has for_each (most have
// not: ~130 bytes saved per node of the run).
struct ForEachRun {
  Json items;
  size_t next_item = 0;
  size_t items_done = 0;
  size_t items_in_flight = 0;
  bool any_item_failed = false;
  // runtime.deterministic and the run is stopping (a signal, fail_run, the budget): an item
  // did not succeed, so no later item may land before it; a resume runs them in order.
  bool halted = false;
  ItemOrder order;

  // Another item is left and the node's `concurrency` allows it to start now.
  [[nodiscard]] bool canDispatch(size_t limit) const {
    return next_item < items.size() && items_in_flight < limit;
  }
  // The index of the item to start; it counts as in flight until itemDone.
  size_t dispatch() {
    ++items_in_flight;
    return next_item++;
  }
  // One item ended. True when the node is finished: every item is done, or the run is
  // cancelling and no item is in flight any more (the rest never start).
  bool itemDone(bool ok, bool cancelling) {
    --items_in_flight;
    ++items_done;
    if (!ok) {
      any_item_failed = true;
    }
    return items_done == items.size() || (cancelling && items_in_flight == 0);
  }
  // The node succeeds when no item failed.
  [[nodiscard]] bool succeeded() const { return !any_item_failed; }
};

// The list a for_each `source` or a pipeline's `items` names; nullopt when the text is not a
// `$.path` or the field is unset. Whatever is not a non-empty array runs zero times (§3.5).
[[nodiscard]] std::optional<Json> resolveItems(std::string_view path,
                                               const expr::StateReader& state);

// Unlike upstream, a for_each source or pipeline `items` that is unset or not a list says so
// instead of vanishing: the warning for `what` ("node \"x\": for_each") over `path`, or
// nullopt when `items` is a list (an empty list is a legitimate zero iterations).
[[nodiscard]] std::optional<std::string> notAListWarning(std::string_view what,
                                                         std::string_view path,
                                                         const std::optional<Json>& items);

// The warning for a pipeline item whose chain stopped after stage `stage_index` because it
// returned no edge_output (upstream stops it silently, §3.5): the pipeline, the item (its index
// and its value, cut to ~60 bytes), the stage, and the stages that did not run.
[[nodiscard]] std::string stageChainStopped(const spec::PipelineSpec& pipeline, size_t item_index,
                                            const Json& item, size_t stage_index);

// A loop stops before iteration `iteration` (0-based) once max_iters (default 100) iterations
// ran, or when its `until` holds (an `until` that does not compile stops it too). `landed`:
// the iteration's write landed in the chain of runs being resumed, so the loop went on past
// it then; its `until` is not asked again of the state now, which is the interrupted run's
// last state, written by the iterations after it.
[[nodiscard]] bool loopStops(const spec::LoopSpec& loop, int iteration,
                             const expr::StateReader& state, bool landed = false);

// For a resumed loop: `key` is a write that landed in the chain; when it is iteration N of one
// of `loops` ("body@loop#N"), that loop had finished at least N + 1 iterations, which
// `iterations` (one entry per loop) is raised to.
void noteLandedIteration(const std::vector<spec::LoopSpec>& loops, std::string_view key,
                         std::vector<int>& iterations);

}  // namespace oe::run::engine

// The ready queue of the main pass (D5) and its concurrency limit: which node starts next, and
// whether another may start now. Header-only: the scheduler calls it once or twice per node, and
// each call is one deque or counter operation that must stay inlined.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>

namespace oe::run::engine {

class ReadyQueue {
 public:
  // `concurrency`: how many main-pass nodes may be in flight at once (at least 1).
  explicit ReadyQueue(int concurrency = 1) : concurrency_(std::max(1, concurrency)) {}

  void setConcurrency(int concurrency) { concurrency_ = std::max(1, concurrency); }
  [[nodiscard]] int concurrency() const { return concurrency_; }

  // A node whose predecessors are all done; nodes start in the order they became ready.
  void push(uint32_t node) { ready_.push_back(node); }
  // A ready node is waiting and the limit allows one more in flight.
  [[nodiscard]] bool canStart() const { return !ready_.empty() && in_flight_ < concurrency_; }
  // The oldest ready node, taken off the queue. It only counts as in flight once started()
  // says so: a node skipped at its start never occupies a slot.
  uint32_t pop() {
    const uint32_t node = ready_.front();
    ready_.pop_front();
    return node;
  }
  void started() { ++in_flight_; }
  void finished() { --in_flight_; }
  // A run that stops starting work drops what is waiting (the nodes in flight finish).
  void clear() { ready_.clear(); }

  [[nodiscard]] bool empty() const { return ready_.empty(); }
  [[nodiscard]] size_t size() const { return ready_.size(); }
  [[nodiscard]] int inFlight() const { return in_flight_; }
  // Nothing waits and nothing runs: the main pass is over.
  [[nodiscard]] bool drained() const { return ready_.empty() && in_flight_ == 0; }
  // No ready node could start before the call about to be made returns (nothing is waiting, or
  // the limit is reached), so the call may run inline on the coordinator.
  [[nodiscard]] bool nothingElseCouldStart() const {
    return ready_.empty() || in_flight_ >= concurrency_;
  }

 private:
  std::deque<uint32_t> ready_;
  int concurrency_ = 1;
  int in_flight_ = 0;
};

}  // namespace oe::run::engine

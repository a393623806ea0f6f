// The main pass's ready queue alone: start order, the concurrency limit, and the inline rule.
#include "oe/run/ready_queue.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "engine_fixture.hpp"

namespace oe::run::engine {
namespace {

std::vector<uint32_t> startAll(ReadyQueue& queue) {
  std::vector<uint32_t> order;
  while (queue.canStart()) {
    order.push_back(queue.pop());
    queue.started();
  }
  return order;
}

TEST(ReadyQueue, NodesStartInTheOrderTheyBecameReady) {
  ReadyQueue queue(8);
  queue.push(3);
  queue.push(1);
  queue.push(2);
  EXPECT_EQ(startAll(queue), (std::vector<uint32_t>{3, 1, 2}));
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.inFlight(), 3);
}

TEST(ReadyQueue, TheConcurrencyLimitHoldsBackReadyNodes) {
  ReadyQueue queue(2);
  for (uint32_t i = 0; i < 5; ++i) {
    queue.push(i);
  }
  EXPECT_EQ(startAll(queue), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(queue.size(), 3u);
  EXPECT_FALSE(queue.canStart());
  queue.finished();
  EXPECT_EQ(startAll(queue), (std::vector<uint32_t>{2}));
  queue.finished();
  queue.finished();
  EXPECT_EQ(startAll(queue), (std::vector<uint32_t>{3, 4}));
  EXPECT_FALSE(queue.drained());
  queue.finished();
  queue.finished();
  EXPECT_TRUE(queue.drained());
}

TEST(ReadyQueue, ANodeSkippedAtItsStartTakesNoSlot) {
  ReadyQueue queue(1);
  queue.push(7);
  queue.push(8);
  ASSERT_TRUE(queue.canStart());
  EXPECT_EQ(queue.pop(), 7u);  // skipped: never started()
  ASSERT_TRUE(queue.canStart());
  EXPECT_EQ(queue.pop(), 8u);
  queue.started();
  EXPECT_EQ(queue.inFlight(), 1);
}

TEST(ReadyQueue, ConcurrencyIsAtLeastOne) {
  ReadyQueue queue(0);
  EXPECT_EQ(queue.concurrency(), 1);
  queue.setConcurrency(-4);
  EXPECT_EQ(queue.concurrency(), 1);
  queue.setConcurrency(6);
  EXPECT_EQ(queue.concurrency(), 6);
  queue.push(1);
  queue.push(2);
  EXPECT_EQ(startAll(queue).size(), 2u);
}

TEST(ReadyQueue, NothingElseCouldStartWhenEmptyOrAtTheLimit) {
  ReadyQueue queue(2);
  EXPECT_TRUE(queue.nothingElseCouldStart());  // nothing waits
  queue.push(1);
  queue.push(2);
  queue.push(3);
  (void)queue.pop();
  queue.started();
  EXPECT_FALSE(queue.nothingElseCouldStart());  // node 2 could start beside node 1
  (void)queue.pop();
  queue.started();
  EXPECT_TRUE(queue.nothingElseCouldStart());  // node 3 waits for a slot
}

TEST(ReadyQueue, ClearDropsWhatWaitsButNotWhatRuns) {
  ReadyQueue queue(1);
  queue.push(1);
  queue.push(2);
  (void)queue.pop();
  queue.started();
  queue.clear();
  EXPECT_TRUE(queue.empty());
  EXPECT_FALSE(queue.drained());
  queue.finished();
  EXPECT_TRUE(queue.drained());
}

}  // namespace
}  // namespace oe::run::engine

// The scheduler's Run members (scheduler.cpp) with the queue, through the in-process engine.

namespace oe::run::engine::testing {
namespace {

using Scheduler = EngineTest;

TEST_F(Scheduler, ADependentNodeStartsAfterItsPredecessorsInOrder) {
  const RunSummary summary = run(R"(name: chain
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - { id: c, kind: fake }
    - { id: a, kind: fake }
    - { id: b, kind: fake }
  edges: [ { from: a, to: b }, { from: b, to: c } ]
)");
  EXPECT_EQ(summary.status, RunStatus::kSuccess);
  EXPECT_EQ(summary.ran, 3u);
  std::vector<std::string> order;
  for (const Json& call : recorder_.calls) {
    order.push_back(call["node"]);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(recorder_.max_in_flight, 1);
}

TEST_F(Scheduler, ConcurrencyLetsReadyNodesRunTogether) {
  // Each call waits until both have arrived: with a limit of 1 the run would stall 10 s per
  // node and max_in_flight would stay 1.
  const RunSummary summary = run(R"(name: pair
version: 0.1.0
state: { schema: {} }
runtime: { concurrency: 2 }
graph:
  nodes:
    - { id: a, kind: fake, args: { await: 2 } }
    - { id: b, kind: fake, args: { await: 2 } }
  edges: []
)");
  EXPECT_EQ(summary.status, RunStatus::kSuccess);
  EXPECT_EQ(recorder_.max_in_flight, 2);
}

TEST_F(Scheduler, FailedPredecessorsAndFalseWhenSkipNodes) {
  const RunSummary summary = run(R"(name: skips
version: 0.1.0
state: { schema: { flag: { type: boolean } } }
graph:
  nodes:
    - { id: bad, kind: fake, args: { no_delta: true } }
    - { id: after_bad, kind: fake }
    - { id: gate, kind: fake }
    - { id: gated, kind: fake }
    - { id: free, kind: fake }
  edges:
    - { from: bad, to: after_bad }
    - { from: gate, to: gated, when: '$.flag == true' }
)");
  EXPECT_EQ(summary.status, RunStatus::kPartial);
  EXPECT_EQ(summary.failed, 1u);
  EXPECT_EQ(summary.skipped, 2u);
  EXPECT_TRUE(callsOf("after_bad").empty());
  EXPECT_TRUE(callsOf("gated").empty());
  EXPECT_EQ(callsOf("free").size(), 1u);
  ASSERT_EQ(eventsOf("node.skipped", "gated").size(), 1u);
  EXPECT_EQ(eventsOf("node.skipped", "after_bad").size(), 1u);
}

}  // namespace
}  // namespace oe::run::engine::testing

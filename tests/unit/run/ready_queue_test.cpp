// The main pass's ready queue alone: start order, the concurrency limit, and the inline rule.
#include "oe/run/ready_queue.hpp"

#include <gtest/gtest.h>

#include <vector>

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

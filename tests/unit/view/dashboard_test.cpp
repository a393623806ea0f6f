// The live view's reducer: upstream's TUI semantics (reference §10) plus for_each k/n.
#include "oe/view/dashboard.hpp"

#include <gtest/gtest.h>

#include "unit/view/run_event.hpp"

namespace oe::view {
namespace {

using test::runEvent;

Dashboard threeNodes() {
  return Dashboard({{"seed", "tool", "prep", "Preparation", false},
                    {"each", "agent", "work", "", true},
                    {"sum", "tool", "work", "", false}});
}

TEST(Dashboard, GroupsNodesByPhaseInOrderOfFirstNode) {
  const Dashboard d = threeNodes();
  ASSERT_EQ(d.groups().size(), 2u);
  EXPECT_EQ(d.groups()[0].title, "Preparation");
  EXPECT_EQ(d.groups()[1].title, "work");  // no title: the phase id
  EXPECT_EQ(d.groups()[1].total, 2u);
  EXPECT_EQ(d.groups()[1].count(NodeStatus::kPending), 2u);
  EXPECT_EQ(d.runStatus(), "starting");
}

TEST(Dashboard, FollowsARunThroughItsStatuses) {
  Dashboard d = threeNodes();
  d.apply(runEvent("run.started"));
  EXPECT_EQ(d.runStatus(), "running");
  EXPECT_EQ(d.runId(), "0123456789abcdef");
  d.apply(runEvent("node.started", "seed"));
  EXPECT_EQ(d.nodes()[0].status, NodeStatus::kRunning);
  EXPECT_EQ(d.groups()[0].running_head, 0u);
  d.apply(runEvent("node.activity", "seed", {{"activity", "reading\x1b[31m files\nsecond line"}}));
  EXPECT_EQ(d.nodes()[0].activity, "reading [31m files ...");  // no escape reaches the terminal
  d.apply(runEvent("node.finished", "seed"));
  EXPECT_EQ(d.nodes()[0].status, NodeStatus::kDone);
  EXPECT_EQ(d.groups()[0].running_head, kNoNode);
  d.apply(runEvent("node.failed", "sum", {{"error", "boom"}}));
  EXPECT_EQ(d.nodes()[2].status, NodeStatus::kFailed);
  EXPECT_EQ(d.nodes()[2].error, "boom");
  EXPECT_EQ(d.groups()[1].failed, std::vector<uint32_t>{2});
  EXPECT_EQ(d.settled(), 2u);
  d.apply(runEvent("node.skipped", "each", {{"reason", "predecessor failed or skipped"}}));
  EXPECT_EQ(d.nodes()[1].status, NodeStatus::kSkipped);
  d.apply(runEvent("run.finished", "", {{"status", "partial"}}));
  EXPECT_EQ(d.runStatus(), "finished: partial");
  EXPECT_TRUE(d.finished());
  EXPECT_EQ(d.settled(), 3u);
  ASSERT_GE(d.feed().size(), 3u);
  EXPECT_EQ(d.feed().back(), "skipped each (predecessor failed or skipped)");
}

TEST(Dashboard, ACacheReplayIsCachedNotDone) {
  Dashboard d = threeNodes();
  d.apply(runEvent("node.finished", "seed", {{"cached", true}}));
  EXPECT_EQ(d.nodes()[0].status, NodeStatus::kCached);
  EXPECT_EQ(d.nodes()[0].calls, 0);  // never started: no negative count of calls
  EXPECT_EQ(d.feed().back(), "cached  seed");
}

TEST(Dashboard, TokensAddUpPerNodeAndInTotal) {
  Dashboard d = threeNodes();
  d.apply(runEvent("node.tokens", "seed",
                   {{"input_tokens", 100}, {"output_tokens", 20}, {"cost_usd", 0.5}}));
  d.apply(runEvent("node.tokens", "seed", {{"input_tokens", 5}, {"output_tokens", 1}}));
  d.apply(runEvent("node.tokens", "sum",
                   {{"input_tokens", 7}, {"output_tokens", 3}, {"cost_usd", 0.25}}));
  d.apply(runEvent("node.tokens", "ghost", {{"input_tokens", 1000}}));  // unknown nodes are ignored
  EXPECT_EQ(d.nodes()[0].input_tokens, 105);
  EXPECT_EQ(d.nodes()[0].output_tokens, 21);
  EXPECT_DOUBLE_EQ(d.nodes()[0].cost_usd, 0.5);
  EXPECT_EQ(d.inputTokens(), 112);
  EXPECT_EQ(d.outputTokens(), 24);
  EXPECT_DOUBLE_EQ(d.costUsd(), 0.75);
}

TEST(Dashboard, ForEachCountsItemsAndSettlesWithTheLast) {
  Dashboard d = threeNodes();
  d.apply(runEvent("node.items", "each", {{"count", 3}}));
  d.apply(runEvent("node.started", "each"));
  d.apply(runEvent("node.started", "each"));
  EXPECT_EQ(d.nodes()[1].status, NodeStatus::kRunning);
  EXPECT_EQ(d.nodes()[1].calls, 2);
  d.apply(runEvent("node.finished", "each"));
  d.apply(runEvent("node.finished", "each", {{"cached", true}}));
  EXPECT_EQ(d.nodes()[1].items_done, 2);
  EXPECT_EQ(d.nodes()[1].status, NodeStatus::kRunning);
  d.apply(runEvent("node.failed", "each", {{"error", "item 2 broke"}}));
  EXPECT_EQ(d.nodes()[1].items_failed, 1);
  EXPECT_EQ(d.nodes()[1].status, NodeStatus::kFailed);  // any failed item fails the node
  EXPECT_EQ(d.groups()[1].count(NodeStatus::kRunning), 0u);
}

TEST(Dashboard, AnEmptyForEachIsDone) {
  Dashboard d = threeNodes();
  d.apply(runEvent("node.items", "each", {{"count", 0}}));
  EXPECT_EQ(d.nodes()[1].status, NodeStatus::kDone);
}

TEST(Dashboard, ReadyAndStateWritesChangeNothing) {
  Dashboard d = threeNodes();
  const uint64_t before = d.version();
  d.apply(runEvent("node.ready", "seed"));
  d.apply(runEvent("state.write", "seed", {{"field", "x"}}));
  d.apply(Json::array());  // not an event at all
  EXPECT_EQ(d.version(), before);
  EXPECT_EQ(d.nodes()[0].status, NodeStatus::kPending);
}

TEST(Dashboard, RunningListKeepsStartOrderAcrossRemovals) {
  std::vector<NodeInfo> infos;
  for (int i = 0; i < 5; ++i) {
    infos.push_back({"n" + std::to_string(i), "tool", "", "", false});
  }
  Dashboard d(infos);
  for (int i = 0; i < 5; ++i) {
    d.apply(runEvent("node.started", "n" + std::to_string(i)));
  }
  d.apply(runEvent("node.finished", "n0"));
  d.apply(runEvent("node.finished", "n2"));
  d.apply(runEvent("node.finished", "n4"));
  std::vector<uint32_t> running;
  for (uint32_t i = d.groups()[0].running_head; i != kNoNode; i = d.nodes()[i].next_running) {
    running.push_back(i);
  }
  EXPECT_EQ(running, (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(d.groups()[0].running_tail, 3u);
}

TEST(Dashboard, TheFeedKeepsOnlyTheNewest) {
  std::vector<NodeInfo> infos{{"a", "tool", "", "", false}};
  Dashboard d(infos);
  for (size_t i = 0; i < Dashboard::kFeedSize + 10; ++i) {
    d.apply(runEvent("node.activity", "a", {{"activity", "step " + std::to_string(i)}}));
  }
  EXPECT_EQ(d.feed().size(), Dashboard::kFeedSize);
  EXPECT_EQ(d.feed().back(), "        a: step " + std::to_string(Dashboard::kFeedSize + 9));
}

}  // namespace
}  // namespace oe::view

// The live view's frame: what the terminal shows for a dashboard and a screen size.
#include "oe/view/frame.hpp"

#include <gtest/gtest.h>

#include "oe/view/text.hpp"
#include "unit/view/run_event.hpp"

namespace oe::view {
namespace {

using test::runEvent;

std::string joined(const std::vector<std::string>& lines) {
  std::string all;
  for (const auto& line : lines) {
    all += line + "\n";
  }
  return all;
}

void expectFits(const std::vector<std::string>& lines, FrameSize size) {
  EXPECT_LE(lines.size(), size.rows - 1);
  for (const auto& line : lines) {
    EXPECT_LE(displayWidth(line), size.columns - 1) << line;
  }
}

TEST(Frame, ASmallRunShowsEveryNodeByPhase) {
  Dashboard d({{"seed", "tool", "prep", "Preparation", false},
               {"each", "agent", "work", "Work", true},
               {"sum", "tool", "work", "Work", false}});
  d.apply(runEvent("run.started"));
  d.apply(runEvent("node.finished", "seed"));
  d.apply(runEvent("node.items", "each", {{"count", 5}}));
  d.apply(runEvent("node.started", "each"));
  d.apply(runEvent("node.finished", "each"));
  d.apply(runEvent("node.finished", "each"));
  d.apply(runEvent("node.activity", "each", {{"activity", "asking the model"}}));
  d.apply(runEvent("node.tokens", "each",
                   {{"input_tokens", 120}, {"output_tokens", 30}, {"cost_usd", 0.0123}}));
  const FrameSize size{100, 30};
  const auto lines = renderFrame(d, size, 12'345);
  expectFits(lines, size);
  ASSERT_GE(lines.size(), 6u);
  EXPECT_EQ(lines[0],
            "oe run 01234567  running  12.3s  1/3 nodes  tokens 120 in / 30 out  $0.0123");
  EXPECT_EQ(lines[1], "Preparation  1/1  1 ok");
  EXPECT_EQ(lines[2], "  ok     seed tool");
  EXPECT_EQ(lines[3], "Work  0/2  1 running  1 waiting");
  EXPECT_EQ(lines[4], "  run    each agent      2/5 120/30 tok $0.0123  asking the model");
  EXPECT_EQ(lines[5], "  wait   sum  tool");
  const std::string all = joined(lines);
  EXPECT_NE(all.find("recent:\n"), std::string::npos);
  EXPECT_NE(all.find("  ok      each\n"), std::string::npos);
}

TEST(Frame, NoPhaseMeansNoGroupLine) {
  Dashboard d({{"greet", "tool", "", "", false}});
  d.apply(runEvent("run.started"));
  d.apply(runEvent("node.started", "greet"));
  d.apply(runEvent("node.finished", "greet"));
  d.apply(runEvent("run.finished", "", {{"status", "success"}}));
  const auto lines = renderFrame(d, {80, 24}, 400);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0], "oe run 01234567  finished: success  0.4s  1/1 nodes");
  EXPECT_EQ(lines[1], "  ok     greet tool");
}

TEST(Frame, ManyNodesCollapseToCountsAndWhatRuns) {
  std::vector<NodeInfo> infos;
  for (int i = 0; i < 10'000; ++i) {
    infos.push_back({"node-" + std::to_string(i), "tool", i < 5000 ? "a" : "b", "", false});
  }
  Dashboard d(infos);
  d.apply(runEvent("run.started"));
  for (int i = 0; i < 4000; ++i) {
    d.apply(runEvent("node.finished", "node-" + std::to_string(i)));
  }
  for (int i = 4000; i < 4004; ++i) {
    d.apply(runEvent("node.started", "node-" + std::to_string(i)));
  }
  d.apply(runEvent("node.failed", "node-17", {{"error", "it broke"}}));
  const FrameSize size{100, 20};
  const auto lines = renderFrame(d, size, 61'000);
  expectFits(lines, size);
  const std::string all = joined(lines);
  EXPECT_NE(all.find("1m01s  4000/10000 nodes"), std::string::npos) << all;
  EXPECT_NE(all.find("a  4000/5000  4 running  3999 ok  1 failed  996 waiting"), std::string::npos)
      << all;
  EXPECT_NE(all.find("b  0/5000  5000 waiting"), std::string::npos) << all;
  EXPECT_NE(all.find("  run    node-4003"), std::string::npos) << all;
  EXPECT_NE(all.find("  FAILED node-17 "), std::string::npos) << all;
  EXPECT_EQ(all.find("  ok     node-"), std::string::npos) << all;  // done nodes are counted
}

TEST(Frame, ManyPhasesSayHowManyMore) {
  std::vector<NodeInfo> infos;
  for (int i = 0; i < 100; ++i) {
    infos.push_back({"n" + std::to_string(i), "tool", "p" + std::to_string(i), "", false});
  }
  Dashboard d(infos);
  const FrameSize size{80, 12};
  const auto lines = renderFrame(d, size, 0);
  expectFits(lines, size);
  EXPECT_NE(joined(lines).find("more phases"), std::string::npos) << joined(lines);
}

TEST(Frame, EveryLineFitsAnySize) {
  Dashboard d({{"a-node-with-a-rather-long-identifier-indeed", "cli-agent", "", "", false},
               {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", "agent", "", "", false}});
  d.apply(runEvent("run.started"));
  d.apply(runEvent("node.started", "a-node-with-a-rather-long-identifier-indeed"));
  d.apply(runEvent("node.activity", "a-node-with-a-rather-long-identifier-indeed",
                   {{"activity", std::string(500, 'x') + "\xe6\x97\xa5\xe6\x97\xa5"}}));
  d.apply(runEvent("node.started", "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"));
  d.apply(runEvent("node.activity", "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
                   {{"activity", "\xf0\x9f\x9a\x80\xf0\x9f\x9a\x80\xf0\x9f\x9a\x80 launching"}}));
  for (size_t cols = 2; cols < 90; cols += 7) {
    for (size_t rows = 2; rows < 12; ++rows) {
      const auto lines = renderFrame(d, {cols, rows}, 5'000);
      expectFits(lines, {cols, rows});
      ASSERT_FALSE(lines.empty());
    }
  }
}

TEST(Frame, ElapsedText) {
  EXPECT_EQ(elapsedText(0), "0.0s");
  EXPECT_EQ(elapsedText(59'999), "59.9s");
  EXPECT_EQ(elapsedText(125'000), "2m05s");
  EXPECT_EQ(elapsedText(3'720'000), "1h02m");
}

}  // namespace
}  // namespace oe::view

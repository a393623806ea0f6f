// `oe inspect`'s timeline of a run, read from its events: a line per node with its status and
// counts, and nested runs read from their logs only when expanded.
#include "oe/runs/timeline.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "support/temp_dir.hpp"

namespace oe::runs {
namespace {

Json event(const std::string& type, const std::string& node, const std::string& ts,
           Json extra = Json::object()) {
  Json e = std::move(extra);
  e["type"] = type;
  e["ts"] = ts;
  if (!node.empty()) {
    e["node_id"] = node;
  }
  return e;
}

TEST(Timeline, OneLinePerNodeInTheOrderTheLogNamesThem) {
  const std::vector<Json> events = {
      event("run.started", "", "2026-01-01T00:00:00.000Z"),
      event("node.ready", "b", "2026-01-01T00:00:00.010Z"),
      event("node.started", "b", "2026-01-01T00:00:00.020Z"),
      event("node.finished", "b", "2026-01-01T00:00:00.120Z"),
      event("node.ready", "a", "2026-01-01T00:00:00.200Z"),
      event("node.finished", "a", "2026-01-01T00:00:00.210Z"),  // no node.started: a cache hit
      event("node.skipped", "c", "2026-01-01T00:00:00.300Z", {{"reason", "when is false"}}),
      event("run.finished", "", "2026-01-01T00:00:01.000Z", {{"status", "success"}}),
  };
  const Timeline t = timelineOf(events, "r1", /*expand=*/false);
  EXPECT_EQ(t.run_id, "r1");
  EXPECT_EQ(t.status, "success");
  EXPECT_EQ(t.duration_ms, 1000);
  ASSERT_EQ(t.nodes.size(), 3U);
  EXPECT_EQ(t.nodes[0].id, "b");
  EXPECT_EQ(t.nodes[0].status, "success");
  EXPECT_EQ(t.nodes[0].durationMs(), 110);
  EXPECT_EQ(t.nodes[1].id, "a");
  EXPECT_EQ(t.nodes[1].status, "cached");
  EXPECT_EQ(t.nodes[2].status, "skipped");
  EXPECT_EQ(t.nodes[2].detail, "when is false");
  EXPECT_EQ(t.nodes[2].durationMs(), -1);
}

TEST(Timeline, AFailureOutranksCancelsAndSuccessesOfTheSameNode) {
  const std::vector<Json> events = {
      event("node.ready", "each", "2026-01-01T00:00:00.000Z"),
      event("node.ready", "each", "2026-01-01T00:00:00.000Z"),
      event("node.ready", "each", "2026-01-01T00:00:00.000Z"),
      event("node.failed", "each", "2026-01-01T00:00:00.100Z",
            {{"cancelled", true}, {"error", "cancelled"}}),
      event("node.failed", "each", "2026-01-01T00:00:00.200Z", {{"error", "boom"}}),
      event("node.finished", "each", "2026-01-01T00:00:00.300Z"),
  };
  const Timeline t = timelineOf(events, "r", false);
  EXPECT_EQ(t.status, "unfinished (no run.finished: killed or still running)");
  EXPECT_EQ(t.duration_ms, -1);
  ASSERT_EQ(t.nodes.size(), 1U);
  EXPECT_EQ(t.nodes[0].calls, 3);
  EXPECT_EQ(t.nodes[0].cancels, 1);
  EXPECT_EQ(t.nodes[0].failures, 1);
  EXPECT_EQ(t.nodes[0].status, "failed");
  EXPECT_EQ(t.nodes[0].detail, "boom");
}

TEST(Timeline, NestedRunsAreReadOnlyWhenExpanded) {
  test::TempDir dir;
  const auto sub = dir.write(
      "sub-run.jsonl", R"({"type":"node.ready","node_id":"inner","ts":"2026-01-01T00:00:00.000Z"})"
                       "\n");
  const std::vector<Json> events = {
      event("node.activity", "outer", "2026-01-01T00:00:00.000Z",
            {{"sub_event_log", sub.string()}}),
      event("node.activity", "outer", "2026-01-01T00:00:00.000Z",
            {{"sub_event_log", (dir / "missing.jsonl").string()}}),
  };
  const Timeline flat = timelineOf(events, "r", false);
  ASSERT_EQ(flat.nodes.size(), 1U);
  EXPECT_EQ(flat.nodes[0].sub_logs.size(), 2U);
  EXPECT_TRUE(flat.nodes[0].nested.empty());

  const Timeline expanded = timelineOf(events, "r", true);
  ASSERT_EQ(expanded.nodes[0].nested.size(), 2U);
  ASSERT_EQ(expanded.nodes[0].nested[0].timeline.size(), 1U);
  EXPECT_EQ(expanded.nodes[0].nested[0].timeline[0].run_id, "sub-run");
  ASSERT_EQ(expanded.nodes[0].nested[0].timeline[0].nodes.size(), 1U);
  EXPECT_EQ(expanded.nodes[0].nested[0].timeline[0].nodes[0].id, "inner");
  EXPECT_TRUE(expanded.nodes[0].nested[1].timeline.empty());
  EXPECT_FALSE(expanded.nodes[0].nested[1].error.empty());
}

TEST(ExpandNestedEvents, InlinesANestedLogOrSaysWhyItCouldNot) {
  test::TempDir dir;
  const auto sub =
      dir.write("sub.jsonl", R"({"type":"run.started","ts":"2026-01-01T00:00:00.000Z"})"
                             "\n");
  Json events = Json::array(
      {{{"type", "node.activity"}, {"sub_event_log", sub.string()}},
       {{"type", "node.activity"}, {"sub_event_log", (dir / "missing.jsonl").string()}}});
  expandNestedEvents(events);
  ASSERT_TRUE(events[0].contains("sub_events"));
  EXPECT_EQ(events[0]["sub_events"][0]["type"], "run.started");
  EXPECT_TRUE(events[1].contains("sub_events_error"));
}

}  // namespace
}  // namespace oe::runs

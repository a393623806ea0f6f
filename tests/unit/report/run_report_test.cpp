// The HTML run report: every value escaped (script-like ids, errors and outputs are text, never
// markup), each status coloured in the graph and the legend, the Gantt's calls, retries and
// nested runs, per-node detail, totals, and long values shortened.
#include "oe/report/run_report.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

namespace oe::report {
namespace {

constexpr std::string_view kEvil = "</script><img src=x onerror=alert(1)>";

Json ev(std::string type, std::string node, std::string ts, Json extra = Json::object()) {
  Json event = {{"type", std::move(type)}, {"run_id", "r1"}};
  if (!node.empty()) {
    event["node_id"] = std::move(node);
  }
  event["ts"] = "2026-05-26T10:00:" + ts + "Z";
  event.update(extra);
  return event;
}

spec::NodeSpec nodeSpec(std::string id, std::string kind = "tool") {
  spec::NodeSpec node;
  node.id = std::move(id);
  node.kind = std::move(kind);
  return node;
}

// A node of each status: ok (success), hit (cached), bad (failed), off (skipped), hung (running,
// no end), never (no event), and the evil id (success).
RunReportInput everyStatus() {
  RunReportInput input;
  input.run_id = "r1";
  spec::Experience exp;
  exp.name = "report";
  for (const char* id : {"ok", "hit", "bad", "off", "hung", "never"}) {
    exp.nodes.push_back(nodeSpec(id));
  }
  exp.nodes.push_back(nodeSpec(std::string(kEvil)));
  spec::EdgeSpec edge;
  edge.from = "ok";
  edge.to = "bad";
  exp.edges.push_back(edge);
  input.experience = std::move(exp);
  const std::string evil(kEvil);
  input.events = {
      ev("run.started", "", "00.000", {{"args", {{"topic", evil}}}}),
      ev("node.ready", "ok", "00.010"),
      ev("node.started", "ok", "00.020"),
      ev("state.write", "ok", "00.030", {{"field", "greeting"}}),
      ev("node.finished", "ok", "00.040",
         {{"metrics", {{"tokens_in", 10}, {"tokens_out", 5}, {"cost_usd", 0.25}}}}),
      ev("node.ready", "hit", "00.010"),
      ev("node.finished", "hit", "00.011", {{"cached", true}}),
      ev("node.ready", "bad", "00.050"),
      ev("node.started", "bad", "00.060"),
      ev("node.retry", "bad", "00.100",
         {{"attempt", 1}, {"error", "first " + evil}, {"delay_ms", 20}}),
      ev("node.failed", "bad", "00.200", {{"error", "boom " + evil}}),
      ev("node.skipped", "off", "00.210", {{"reason", "upstream " + evil + " failed"}}),
      ev("node.ready", "hung", "00.220"),
      ev("node.started", "hung", "00.230"),
      ev("node.ready", evil, "00.240"),
      ev("node.started", evil, "00.250"),
      ev("node.finished", evil, "00.260"),
      ev("run.finished", "", "01.000",
         {{"status", "partial"},
          {"nodes", {{"ran", 2}, {"cached", 1}, {"failed", 1}, {"skipped", 1}}}}),
  };
  state::HistoryRow write;
  write.field = "greeting";
  write.value_new = "hello " + evil;
  write.node_id = "ok";
  write.run_id = "r1";
  input.state_rows.push_back(write);
  input.edge_outputs["ok"] = Json{{"note", evil}};
  return input;
}

TEST(RunReport, EveryValueIsEscapedNeverMarkup) {
  const std::string html = runReportHtml(everyStatus());
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  // The only tags are the report's own: no <script>, no <img>, whatever the values held.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("</script>"), std::string::npos);
  const std::string escaped = "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;";
  // In the node id (graph, Gantt, detail), the error, the retry, the skip reason, the state
  // value, the edge output and the run args.
  for (const std::string& text : {"<b>" + escaped + "</b>", "boom " + escaped, "first " + escaped,
                                  "upstream " + escaped + " failed", "hello " + escaped,
                                  "&quot;note&quot;: &quot;" + escaped}) {
    EXPECT_NE(html.find(text), std::string::npos) << text;
  }
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
}

// The fill of the graph box of node `id`.
std::string boxFill(const std::string& html, const std::string& id) {
  const std::regex box("<g class=\"node\"><title>" + id +
                       " \\(tool\\)[^<]*</title><rect [^>]*fill=\"(#[0-9a-f]{6})\"");
  std::smatch match;
  return std::regex_search(html, match, box) ? match[1].str() : "";
}

TEST(RunReport, EveryStatusHasItsOwnColourInTheGraph) {
  const std::string html = runReportHtml(everyStatus());
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"ok", "#c8e6c9"},  {"hit", "#bbdefb"},  {"bad", "#ffcdd2"},
      {"off", "#eeeeee"}, {"hung", "#fff9c4"}, {"never", "#ffffff"},
  };
  for (const auto& [id, fill] : expected) {
    EXPECT_EQ(boxFill(html, id), fill) << id;
  }
  // The status is written in the box too, and the legend names every status.
  for (const char* status : {"success", "cached", "failed", "skipped", "running", "not run"}) {
    EXPECT_NE(html.find("<b>" + std::string(status) + "</b>"), std::string::npos) << status;
  }
  EXPECT_NE(html.find("tool \xC2\xB7 failed</text>"), std::string::npos);
  // The failed node's tooltip carries its error.
  EXPECT_NE(html.find("<title>bad (tool): failed: boom &lt;/script&gt;"), std::string::npos);
}

TEST(RunReport, TheFailedNodesDetailIsOpenWithItsError) {
  const std::string html = runReportHtml(everyStatus());
  const std::regex failed(
      "<details class=\"node-detail status-failed\" id=\"node-2\" open><summary>.*<b>bad</b>"
      "[^\\n]*1 retry</summary>");
  EXPECT_TRUE(std::regex_search(html, failed)) << html;
  EXPECT_NE(html.find("<pre class=\"error\">boom &lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("<th>retry after attempt 1</th><td>waited 20 ms"), std::string::npos);
  // Other nodes start closed.
  EXPECT_NE(html.find("<details class=\"node-detail status-success\" id=\"node-0\"><summary>"),
            std::string::npos);
}

TEST(RunReport, TotalsComeFromRunFinished) {
  const std::string html = runReportHtml(everyStatus());
  EXPECT_NE(html.find("<th>nodes</th><td>2 ran, 1 cached, 1 failed, 1 skipped</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<th>duration</th><td>1.00 s</td>"), std::string::npos);
  EXPECT_NE(html.find("partial"), std::string::npos);
  // No usage in run.finished: the nodes' metrics are summed.
  EXPECT_NE(html.find("<th>tokens</th><td>10 in, 5 out</td>"), std::string::npos);
  EXPECT_NE(html.find("<th>cost</th><td>$0.2500</td>"), std::string::npos);
}

TEST(RunReport, TheGanttHasOneRowPerCallWithQueueAndRetry) {
  const std::string html = runReportHtml(everyStatus());
  const auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = html.find(needle); at != std::string::npos; at = html.find(needle, at + 1)) {
      ++n;
    }
    return n;
  };
  // ok, hit, bad, hung and the evil node are called; off and never are not.
  EXPECT_EQ(count("<g class=\"call\">"), 5u);
  EXPECT_EQ(count("class=\"bar bar-failed\""), 1u);
  EXPECT_EQ(count("class=\"bar bar-cached\""), 1u);
  EXPECT_EQ(count("class=\"bar bar-running\""), 1u);
  EXPECT_EQ(count("<line class=\"retry\""), 1u);
  EXPECT_EQ(count("<rect class=\"queued\""), 4u);  // each started call waited 10 ms
  EXPECT_NE(html.find("<title>bad: failed, 140 ms (queued 10 ms), 1 retry</title>"),
            std::string::npos);
}

TEST(RunReport, ForEachItemsAndNestedRunsGetRowsOfTheirOwn) {
  RunReportInput input;
  input.run_id = "r2";
  input.events = {
      ev("run.started", "", "00.000"),
      ev("node.ready", "each", "00.000"),
      ev("node.ready", "each", "00.000"),
      ev("node.started", "each", "00.001"),
      ev("node.started", "each", "00.001"),
      ev("node.finished", "each", "00.100"),
      ev("node.finished", "each", "00.200"),
      ev("node.ready", "sub", "00.200"),
      ev("node.started", "sub", "00.200"),
      ev("node.activity", "sub", "00.201", {{"sub_event_log", "/x/child.jsonl"}}),
      ev("node.activity", "sub", "00.202", {{"sub_event_log", "/x/missing.jsonl"}}),
      ev("node.finished", "sub", "00.400"),
      ev("run.finished", "", "00.400", {{"status", "success"}}),
  };
  input.nested["/x/child.jsonl"] = {
      ev("run.started", "", "00.201"),
      ev("node.ready", "inner", "00.210"),
      ev("node.started", "inner", "00.210"),
      ev("node.failed", "inner", "00.300", {{"error", "inner broke"}}),
      ev("run.finished", "", "00.300", {{"status", "failed"}}),
  };
  const std::string html = runReportHtml(input);
  EXPECT_NE(html.find("<title>each: success, 99 ms (queued 1 ms)</title>"), std::string::npos)
      << html;
  EXPECT_NE(html.find("<title>each: success, 199 ms (queued 1 ms)</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>sub \xE2\x80\xBA inner: failed, 90 ms</title>"), std::string::npos);
  EXPECT_NE(html.find("the nested run log /x/missing.jsonl (node sub) was not read"),
            std::string::npos);
  EXPECT_NE(html.find("2 calls"), std::string::npos);
  // Without the experience there is no graph, and the page says so.
  EXPECT_NE(html.find("The graph is not drawn"), std::string::npos);
  EXPECT_EQ(html.find("<svg class=\"graph\""), std::string::npos);
}

TEST(RunReport, LongValuesAreShortenedOnACharacterBoundary) {
  RunReportInput input;
  input.run_id = "r3";
  input.events = {ev("node.ready", "n", "00.000"), ev("node.started", "n", "00.000"),
                  ev("node.failed", "n", "00.010", {{"error", std::string(9000, 'x') + "TAIL"}})};
  // 3999 bytes, then two-byte characters: the cut at 4000 must not split the first.
  input.edge_outputs["n"] = std::string(3999, 'e') + "\xC3\xA9\xC3\xA9";
  const std::string html = runReportHtml(input);
  EXPECT_EQ(html.find("TAIL"), std::string::npos);
  EXPECT_NE(html.find("5004 more bytes"), std::string::npos);
  EXPECT_NE(html.find(std::string(3999, 'e') + "\n\xE2\x80\xA6 (4 more bytes"), std::string::npos);
}

TEST(RunReport, AnUnfinishedRunSaysSoAndCountsFromItsEvents) {
  RunReportInput input;
  input.run_id = "r4";
  input.events = {ev("run.started", "", "00.000"),   ev("node.ready", "a", "00.000"),
                  ev("node.started", "a", "00.000"), ev("node.finished", "a", "00.500"),
                  ev("node.ready", "b", "00.500"),   ev("node.started", "b", "00.500")};
  const std::string html = runReportHtml(input);
  EXPECT_NE(html.find("no run.finished: killed or still running"), std::string::npos);
  EXPECT_NE(html.find("<th>nodes</th><td>1 ran, 0 cached, 0 failed, 0 skipped</td>"),
            std::string::npos);
  EXPECT_NE(html.find("class=\"bar bar-running\""), std::string::npos);
}

}  // namespace
}  // namespace oe::report

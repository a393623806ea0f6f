// The HTML run report: every value escaped (script-like ids, errors and outputs are text, never
// markup), each status coloured in the graph and the legend, the Gantt's calls, retries and
// nested runs, per-node detail with the diffs of worktree attempts, totals, and long values
// shortened.
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

// A node.diff event of node `node` (item < 0: none) naming `artifact`.
Json diffEvent(const std::string& node, const std::string& artifact, Json files, int64_t item,
               std::string ts) {
  Json extra = {{"artifact", artifact}, {"files", std::move(files)}, {"insertions", 3},
                {"deletions", 1},       {"branch", "oe/r5/" + node}, {"repo", "/src/app"}};
  if (item >= 0) {
    extra["item"] = item;
  }
  return ev("node.diff", node, std::move(ts), extra);
}

TEST(RunReport, EachAttemptsDiffIsShownEscapedAndFolded) {
  const std::string sha_a(64, 'a');
  const std::string sha_b(64, 'b');
  const std::string sha_c(64, 'c');
  // A replay from the node cache logs its diff again, marked.
  Json replayed = diffEvent("each", sha_b, {"b.txt"}, 1, "00.021");
  replayed["cached"] = true;
  RunReportInput input;
  input.run_id = "r5";
  input.events = {
      ev("node.ready", "fix", "00.000"),
      ev("node.started", "fix", "00.000"),
      diffEvent("fix", sha_a, {"a.txt", std::string(kEvil) + ".txt"}, -1, "00.010"),
      ev("node.finished", "fix", "00.010"),
      ev("node.ready", "each", "00.020"),
      ev("node.finished", "each", "00.021", {{"cached", true}}),
      replayed,
      diffEvent("each", sha_c, {"c.txt"}, 0, "00.022"),
      diffEvent("each", "../../etc/passwd", {"d.txt"}, 2, "00.023"),
  };
  const std::string text =
      "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,3 @@\n"
      "-old\n+" +
      std::string(kEvil) + "\n+new & more\n context\n";
  input.diffs[sha_a] = runs::DiffText{text, text.size(), ""};
  input.diffs[sha_b] =
      runs::DiffText{"", 0, "/x/.openexpertise/artifacts/" + sha_b + ".diff is not here (removed)"};
  input.diffs[sha_c] = runs::DiffText{"+first line\n", 200 * 1024, ""};
  const std::string html = runReportHtml(input);
  const std::string escaped = "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;";
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  // The summary, in the node's line and its row: files, +/-, the artifact, the files by name.
  EXPECT_NE(html.find("<b>fix</b> \xC2\xB7 10 ms \xC2\xB7 diff: 2 files +3 \xE2\x88\x92"
                      "1</summary>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<th>diff</th><td><span class=\"diff-stat\">2 files, <span class=\"add\">+3"
                      "</span> <span class=\"del\">\xE2\x88\x92"
                      "1</span></span> \xC2\xB7 "
                      "artifact <code>" +
                      sha_a +
                      "</code><ul class=\"diff-files\"><li><code>"
                      "a.txt</code></li><li><code>" +
                      escaped + ".txt</code></li></ul>"),
            std::string::npos)
      << html;
  // The text folded (a <details> without `open`), escaped, its lines classed for colour.
  EXPECT_NE(html.find("<details class=\"diff\"><summary>the diff (" + std::to_string(text.size()) +
                      " bytes)</summary><pre class=\"diff\">"
                      "<span class=\"file\">diff --git a/a.txt b/a.txt</span>\n"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<span class=\"hunk\">@@ -1 +1,3 @@</span>\n<span class=\"del\">-old"
                      "</span>\n<span class=\"add\">+" +
                      escaped +
                      "</span>\n"
                      "<span class=\"add\">+new &amp; more</span>\n context\n</pre>"),
            std::string::npos)
      << html;
  EXPECT_EQ(html.find("<details class=\"diff\" open"), std::string::npos);
  // Items: one row each, a replay says so, a missing file and a cut diff say where the whole is.
  EXPECT_NE(html.find("\xC2\xB7 3 diffs</summary>"), std::string::npos);
  EXPECT_NE(html.find("<th>diff of item 1</th>"), std::string::npos);
  EXPECT_NE(html.find("(replayed from the node cache)"), std::string::npos);
  EXPECT_NE(html.find("The diff text is not shown: /x/.openexpertise/artifacts/" + sha_b +
                      ".diff is not here (removed).</p>"),
            std::string::npos);
  EXPECT_NE(html.find("<th>diff of item 0</th>"), std::string::npos);
  EXPECT_NE(html.find("the diff (200.0 KiB)"), std::string::npos);
  EXPECT_NE(html.find("\xE2\x80\xA6 200.0 KiB more not shown (a report shows the first 64 KiB of "
                      "each diff and 1024 KiB in all): the whole diff is "
                      ".openexpertise/artifacts/" +
                      sha_c + ".diff</p></details>"),
            std::string::npos)
      << html;
  // An artifact id that is no sha256 (an edited log) is shown, escaped, and names no file.
  EXPECT_NE(html.find("<th>diff of item 2</th>"), std::string::npos);
  EXPECT_NE(html.find("No diff text: the event names no artifact."), std::string::npos);
}

}  // namespace
}  // namespace oe::report

// oe graph's renderers: upstream's Mermaid lines, label escaping, safe ids, phase subgraphs,
// edge labels, and an HTML page that escapes everything and fetches nothing.
#include "oe/report/graph_render.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace oe::report {
namespace {

struct GraphBuilder {
  spec::Experience exp;
  GraphBuilder& node(std::string id, std::string kind, std::optional<std::string> phase = {},
                     std::optional<std::string> for_each = {}) {
    spec::NodeSpec n;
    n.id = std::move(id);
    n.kind = std::move(kind);
    n.phase = std::move(phase);
    if (for_each) {
      n.for_each = spec::ForEach{*for_each, 1, {}};
    }
    exp.nodes.push_back(std::move(n));
    return *this;
  }
  GraphBuilder& edge(std::string from, std::string to, std::optional<std::string> when = {}) {
    spec::EdgeSpec e;
    e.from = std::move(from);
    e.to = std::move(to);
    e.when = std::move(when);
    exp.edges.push_back(std::move(e));
    return *this;
  }
  GraphBuilder& phase(std::string id, std::optional<std::string> title = {}) {
    exp.phases.push_back({std::move(id), std::move(title)});
    return *this;
  }
};

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    out.push_back(line);
  }
  return out;
}

TEST(MermaidGraph, HelloToolIsUpstreamsOutput) {
  GraphBuilder g;
  g.node("greet", "tool");
  EXPECT_EQ(mermaidGraph(g.exp, GraphDirection::kTopDown),
            "flowchart TD\n"
            "  greet[\"greet\"]:::tool\n"
            "  classDef tool fill:#e3f2fd,stroke:#1565c0\n");
}

TEST(MermaidGraph, LeftToRight) {
  GraphBuilder g;
  g.node("greet", "tool");
  EXPECT_EQ(lines(mermaidGraph(g.exp, GraphDirection::kLeftRight)).front(), "flowchart LR");
}

TEST(MermaidGraph, EachKindHasItsShapeAndClassThirdPartyTheDefault) {
  GraphBuilder g;
  g.node("t", "tool").node("a", "agent").node("s", "skill").node("d", "dataset");
  g.node("x", "experience").node("c", "cli-agent").node("e", "evolution").node("m", "acme.thing");
  const auto out = lines(mermaidGraph(g.exp, GraphDirection::kTopDown));
  const std::vector<std::string> expected_nodes = {
      "  t[\"t\"]:::tool",      "  a(\"a\"):::agent",        "  s[[\"s\"]]:::skill",
      "  d[(\"d\")]:::dataset", "  x[/\"x\"/]:::experience", "  c{{\"c\"}}:::cli_agent",
      "  e>\"e\"]:::evolution", "  m[\"m\"]:::other"};
  for (const auto& line : expected_nodes) {
    EXPECT_NE(std::find(out.begin(), out.end(), line), out.end()) << line;
  }
  std::set<std::string> class_defs;
  for (const auto& line : out) {
    std::smatch m;
    if (std::regex_match(line, m,
                         std::regex(R"(  classDef (\w+) fill:#[0-9a-f]{6},stroke:#[0-9a-f]{6})"))) {
      class_defs.insert(m[1]);
    }
  }
  EXPECT_EQ(class_defs, (std::set<std::string>{"tool", "agent", "skill", "dataset", "experience",
                                               "cli_agent", "evolution", "other"}));
}

TEST(MermaidGraph, OnlyUsedClassesAreDefined) {
  GraphBuilder g;
  g.node("a", "agent");
  const std::string out = mermaidGraph(g.exp, GraphDirection::kTopDown);
  EXPECT_NE(out.find("classDef agent"), std::string::npos);
  EXPECT_EQ(out.find("classDef tool"), std::string::npos);
}

TEST(MermaidLabel, EscapesWhatWouldBreakALabel) {
  EXPECT_EQ(mermaidLabel(R"(say "hi" [x] {y} <b> a|b #1 & `c`)"),
            "say #quot;hi#quot; #91;x#93; #123;y#125; #lt;b#gt; a#124;b #35;1 #amp; #96;c#96;");
  EXPECT_EQ(mermaidLabel("two\nlines\t"), "two lines ");
  EXPECT_EQ(mermaidLabel("caf\xC3\xA9"), "caf\xC3\xA9");  // UTF-8 passes through
}

TEST(MermaidGraph, IdsThatAreNotMermaidIdsAreMappedUniquely) {
  GraphBuilder g;
  g.node("fetch-diff", "tool").node("end", "tool").node("n_fetch_diff", "tool");
  g.node("1st", "tool").node("a\"]b", "tool");
  g.edge("fetch-diff", "end").edge("end", "1st");
  const std::string out = mermaidGraph(g.exp, GraphDirection::kTopDown);
  // The real id stays the label; the Mermaid id is plain and distinct from every other.
  EXPECT_NE(out.find("  n_fetch_diff_2[\"fetch-diff\"]:::tool\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  n_fetch_diff[\"n_fetch_diff\"]:::tool\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  n_end[\"end\"]:::tool\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  n_1st[\"1st\"]:::tool\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  n_a__b[\"a#quot;#93;b\"]:::tool\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  n_fetch_diff_2 --> n_end\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  n_end --> n_1st\n"), std::string::npos) << out;
}

TEST(MermaidGraph, PhasesAreSubgraphsInDeclarationOrder) {
  GraphBuilder g;
  g.phase("review", std::string("Review \"it\"")).phase("collect");
  g.node("load", "tool", std::string("collect")).node("judge", "agent", std::string("review"));
  g.node("loose", "tool").edge("load", "judge");
  const auto out = lines(mermaidGraph(g.exp, GraphDirection::kTopDown));
  const std::vector<std::string> head(out.begin(), out.begin() + 8);
  EXPECT_EQ(head, (std::vector<std::string>{
                      "flowchart TD",
                      "  subgraph phase_review[\"Review #quot;it#quot;\"]",
                      "    judge(\"judge\"):::agent",
                      "  end",
                      "  subgraph phase_collect[\"collect\"]",
                      "    load[\"load\"]:::tool",
                      "  end",
                      "  loose[\"loose\"]:::tool",
                  }));
}

TEST(MermaidGraph, APhaseIdNeverTakesANodesId) {
  GraphBuilder g;
  g.phase("x").node("phase_x", "tool", std::string("x"));
  const std::string out = mermaidGraph(g.exp, GraphDirection::kTopDown);
  EXPECT_NE(out.find("  subgraph phase_phase_x[\"x\"]\n    phase_x[\"phase_x\"]:::tool\n"),
            std::string::npos)
      << out;
}

TEST(MermaidGraph, EdgeLabelsForWhenAndForEach) {
  GraphBuilder g;
  g.node("seed", "tool").node("review", "agent", {}, std::string("$.dimensions"));
  g.node("score", "agent").node("plain", "tool");
  g.edge("seed", "review").edge("review", "score", std::string("length($.findings) > 0"));
  g.edge("score", "plain");
  const std::string out = mermaidGraph(g.exp, GraphDirection::kTopDown);
  EXPECT_NE(out.find("  seed -->|\"for_each $.dimensions\"| review\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  review -->|\"when length($.findings) #gt; 0\"| score\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("  score --> plain\n"), std::string::npos) << out;
}

TEST(MermaidGraph, ForEachAndWhenOnOneEdgeShareTheLabel) {
  GraphBuilder g;
  g.node("a", "tool").node("b", "tool", {}, std::string("$.items"));
  g.edge("a", "b", std::string("$.go == true"));
  EXPECT_NE(mermaidGraph(g.exp, GraphDirection::kTopDown)
                .find("  a -->|\"for_each $.items, when $.go == true\"| b\n"),
            std::string::npos);
}

TEST(GraphHtml, EscapesEveryValueAndFetchesNothing) {
  GraphBuilder g;
  g.exp.name = "<script>alert(1)</script>";
  g.exp.description = "a & b";
  g.phase("p<1>");
  g.node("a<b>", "tool", std::string("p<1>")).node("c'd", "my\"kind");
  g.edge("a<b>", "c'd", std::string("$.x < 2"));
  const std::string html = graphHtml(g.exp, GraphDirection::kTopDown);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("a &amp; b"), std::string::npos);
  EXPECT_EQ(html.find("a<b>"), std::string::npos);
  EXPECT_EQ(html.find("c'd"), std::string::npos);
  EXPECT_EQ(html.find("my\"kind"), std::string::npos);
  EXPECT_EQ(html.find("$.x < 2"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("<pre>flowchart TD\n"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*["']?\s*https?:)")));
  EXPECT_EQ(html.find("http"), std::string::npos);
}

TEST(GraphHtml, LaysOutLayersByDepth) {
  GraphBuilder g;
  g.node("a", "tool").node("b", "tool").node("c", "tool").edge("a", "b").edge("a", "c");
  g.edge("b", "c");
  // Top down: a above b above c (c is two layers down, after b); left to right: by x.
  auto coord = [](const std::string& html, const std::string& id, const char* axis) {
    const std::regex re("<title>" + id + " \\(tool\\)</title><rect x=\"(\\d+)\" y=\"(\\d+)\"");
    std::smatch m;
    EXPECT_TRUE(std::regex_search(html, m, re)) << id;
    return std::stoi(m[std::string(axis) == "x" ? 1 : 2]);
  };
  const std::string td = graphHtml(g.exp, GraphDirection::kTopDown);
  EXPECT_LT(coord(td, "a", "y"), coord(td, "b", "y"));
  EXPECT_LT(coord(td, "b", "y"), coord(td, "c", "y"));
  const std::string lr = graphHtml(g.exp, GraphDirection::kLeftRight);
  EXPECT_LT(coord(lr, "a", "x"), coord(lr, "b", "x"));
  EXPECT_LT(coord(lr, "b", "x"), coord(lr, "c", "x"));
  EXPECT_EQ(coord(lr, "a", "y"), coord(lr, "b", "y"));
}

}  // namespace
}  // namespace oe::report

// `oe graph` through the binary: upstream's lines for hello-tool, --lr, -o, a self-contained
// --html page, and the same refusal as `oe validate` for a folder without experience.yaml.
#include <regex>

#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using GraphCli = OeTest;

std::string readAll(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::string kHelloTool = std::string(OE_SOURCE_DIR) + "/examples/hello-tool";

TEST_F(GraphCli, HelloToolPrintsUpstreamsLines) {
  auto r = oe({"graph", kHelloTool});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "flowchart TD\n"
            "  greet[\"greet\"]:::tool\n"
            "  classDef tool fill:#e3f2fd,stroke:#1565c0\n");
}

TEST_F(GraphCli, LrFlipsTheDirection) {
  auto r = oe({"graph", kHelloTool, "--lr"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("flowchart LR\n")) << r.out;
}

TEST_F(GraphCli, OutWritesTheFile) {
  const auto file = dir_.path() / "graph.mmd";
  auto r = oe({"graph", kHelloTool, "-o", file.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(readAll(file).starts_with("flowchart TD\n  greet[\"greet\"]:::tool\n"));
  auto bad = oe({"graph", kHelloTool, "--out", (dir_.path() / "no" / "such" / "g.mmd").string()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("cannot write"), std::string::npos) << bad.err;
}

TEST_F(GraphCli, HtmlIsSelfContained) {
  writeExperience(R"(name: "shop <&> co"
version: 0.1.0
phases:
  - { id: collect, title: "Collect <input>" }
state:
  schema:
    items: { type: array }
    out: { type: array, merge: array_append }
graph:
  nodes:
    - id: load
      kind: tool
      phase: collect
      impl: ./tools/t.mjs
      writes: [items]
    - id: each
      kind: tool
      impl: ./tools/t.mjs
      for_each: { source: $.items }
      writes: [out]
  edges:
    - { from: load, to: each, when: "length($.items) > 0" }
)");
  writeTool("t.mjs", "export default async () => ({ state_delta: {} });\n");
  const auto file = dir_.path() / "graph.html";
  auto r = oe({"graph", dir_.path().string(), "--html", "--out", file.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = readAll(file);
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>")) << html;
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("shop &lt;&amp;&gt; co"), std::string::npos);
  EXPECT_NE(html.find("for_each $.items, when length($.items) #gt; 0"), std::string::npos);
  EXPECT_NE(html.find("subgraph phase_collect[&quot;Collect #lt;input#gt;&quot;]"),
            std::string::npos)
      << html;
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*["']?\s*https?://)")));
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // Without -o the page goes to stdout.
  auto to_stdout = oe({"graph", dir_.path().string(), "--html"});
  ASSERT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  EXPECT_EQ(to_stdout.out, html);
}

TEST_F(GraphCli, MissingYamlIsRefusedAsValidateRefusesIt) {
  const auto empty = dir_.path() / "empty";
  std::filesystem::create_directories(empty);
  auto graph = oe({"graph", empty.string()});
  auto validate = oe({"validate", empty.string()});
  EXPECT_EQ(graph.exit_code, 1);
  EXPECT_EQ(graph.exit_code, validate.exit_code);
  EXPECT_EQ(graph.err, validate.err);
  EXPECT_NE(graph.err.find("experience.yaml not found"), std::string::npos) << graph.err;
  EXPECT_EQ(graph.out, "");
}

TEST_F(GraphCli, AnInvalidExperienceDrawsNothing) {
  writeExperience(
      "name: x\nversion: 0.1.0\nstate: {schema: {}}\ngraph:\n  nodes:\n"
      "    - { id: a, kind: tool, impl: ./tools/t.mjs }\n"
      "  edges:\n    - { from: a, to: ghost }\n");
  writeTool("t.mjs", "export default async () => ({});\n");
  auto r = oe({"graph", dir_.path().string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("ghost"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace oe::test

// oe mcp's tools table and resources, in-process: every schema parses, names are unique and
// carry hints, resource URIs are percent-decoded and path-guarded, and a malformed one is
// refused with the shape of a good one. (The tools run end to end in tests/mcp.)
#include "oe/mcp/tools.hpp"

#include <gtest/gtest.h>

#include <set>

#include "oe/ops/context.hpp"
#include "support/temp_dir.hpp"

namespace oe::mcp {
namespace {

using ops::percentDecode;
using ops::percentEncode;

std::shared_ptr<const McpContext> contextFor(const std::filesystem::path& root) {
  auto guard = PathGuard::create({root}, root);
  EXPECT_TRUE(guard);
  return std::make_shared<McpContext>(McpContext{std::move(*guard), "/nonexistent/oe"});
}

TEST(McpTools, EveryToolHasASchemaAndHints) {
  test::TempDir dir;
  const auto tools = mcpTools(contextFor(dir.path()));
  std::set<std::string> names;
  for (const auto& tool : tools) {
    EXPECT_TRUE(names.insert(tool.name).second) << tool.name;
    EXPECT_EQ(tool.input_schema["type"], "object") << tool.name;
    EXPECT_TRUE(tool.input_schema["required"].is_array()) << tool.name;
    EXPECT_TRUE(tool.annotations["readOnlyHint"].is_boolean()) << tool.name;
    EXPECT_FALSE(tool.description.empty()) << tool.name;
  }
  for (const char* name : {"oe_validate", "oe_state", "oe_inspect", "oe_run", "oe_evolve",
                           "oe_graph", "oe_resume", "oe_runs", "oe_init", "oe_diff",
                           "oe_approvals", "oe_decide"}) {
    EXPECT_EQ(names.count(name), 1U) << name;
  }
}

TEST(McpResources, MalformedOrOutsideUrisAreRefused) {
  test::TempDir dir;
  const auto resources = mcpResources(contextFor(dir.path()));
  const std::string encoded = percentEncode(dir.path().string());
  for (const std::string& uri : std::vector<std::string>{
           "oe://nope", "file:///etc/passwd", "oe://runs/" + encoded,
           "oe://runs/" + encoded + "/..", "oe://runs/" + encoded + "/a/b", "oe://state/%ZZ"}) {
    auto read = resources.read(uri);
    ASSERT_FALSE(read) << uri;
    EXPECT_NE(read.error().message.find("oe://runs/<encoded folder>/<run-id>"), std::string::npos)
        << read.error().message;
  }
  EXPECT_FALSE(resources.read("oe://state/" + percentEncode(dir.path().string())));  // no yaml
  auto outside = resources.read("oe://state/%2Fetc");
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().message.find("outside the allowed roots"), std::string::npos);
}

TEST(McpResources, ListsTheRunsOfExperiencesUnderTheRoot) {
  test::TempDir dir;
  dir.write("flows/a/experience.yaml", "name: a\n");
  dir.write("flows/a/.openexpertise/runs/r1.jsonl",
            R"({"type":"run.started","run_id":"r1","ts":"2026-01-01T00:00:00.000Z"})"
            "\n");
  dir.write("node_modules/b/experience.yaml", "name: b\n");
  dir.write("node_modules/b/.openexpertise/runs/r2.jsonl", "{}\n");
  const auto resources = mcpResources(contextFor(dir.path()));
  const auto listed = resources.list();
  ASSERT_EQ(listed.size(), 1U);
  const std::string real = std::filesystem::canonical(dir / "flows/a").string();
  EXPECT_EQ(listed[0].uri, "oe://runs/" + percentEncode(real) + "/r1");
  auto read = resources.read(listed[0].uri);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->mime_type, "application/x-ndjson");
  EXPECT_NE(read->text.find("run.started"), std::string::npos);
}

TEST(PercentCoding, RoundTripsAndRefusesBadEscapes) {
  const std::string path = "/home/me/my flows/a%b/é";
  const std::string encoded = percentEncode(path);
  EXPECT_EQ(encoded.find('/'), std::string::npos);
  EXPECT_EQ(percentDecode(encoded), path);
  EXPECT_EQ(percentDecode("%2fx%2F"), "/x/");
  EXPECT_FALSE(percentDecode("%"));
  EXPECT_FALSE(percentDecode("%2"));
  EXPECT_FALSE(percentDecode("%G0"));
}

}  // namespace
}  // namespace oe::mcp

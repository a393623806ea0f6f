#include "oe/spec/plugin_isolation.hpp"

#include <gtest/gtest.h>

namespace oe::spec {
namespace {

TEST(PluginIsolationScan, ReadsOneValueForAll) {
  const auto spec = scanPluginIsolation(R"(name: x
version: 0.1.0
plugins:
  override: [tool]   # a comment
  isolation: process
graph:
  nodes:
    - { id: a, kind: tool }
)");
  EXPECT_EQ(spec.all, "process");
  EXPECT_TRUE(spec.by_id.empty());
  EXPECT_EQ(spec.forPlugin("anything"), "process");
}

TEST(PluginIsolationScan, ReadsOneValuePerPluginId) {
  const auto spec = scanPluginIsolation(
      "\xEF\xBB\xBFname: x\r\nplugins:\r\n\r\n  # why\r\n  isolation:\r\n    dev.acme.tools: "
      "process\r\n    dev.acme.other: in-process\r\nstate: {}\r\n");
  EXPECT_EQ(spec.all, "");
  EXPECT_EQ(spec.forPlugin("dev.acme.tools"), "process");
  EXPECT_EQ(spec.forPlugin("dev.acme.other"), "in-process");
  EXPECT_EQ(spec.forPlugin("dev.acme.third"), "");
}

TEST(PluginIsolationScan, OnlyTheTopLevelKeyCounts) {
  // A nested `plugins:` (in a node's args) is not the experience's.
  EXPECT_TRUE(scanPluginIsolation(R"(name: x
graph:
  nodes:
    - id: a
      kind: tool
      args:
        plugins:
          isolation: process
)")
                  .empty());
  EXPECT_TRUE(scanPluginIsolation("name: x\nplugins_extra:\n  isolation: process\n").empty());
}

TEST(PluginIsolationScan, AFlowDocumentIsParsedWhole) {
  EXPECT_EQ(scanPluginIsolation("# c\n{name: x, plugins: {isolation: process}}\n").all, "process");
}

TEST(PluginIsolationScan, WhatItCannotReadIsLeftToTheFullParse) {
  EXPECT_TRUE(scanPluginIsolation("plugins:\n  isolation: [process\n").empty());
  EXPECT_TRUE(scanPluginIsolation("plugins: process\n").empty());
  EXPECT_TRUE(scanPluginIsolation("").empty());
}

TEST(PluginIsolationScan, AgreesWithTheParsedModel) {
  const Json plugins = {{"isolation", {{"dev.a", "process"}, {"dev.b", 3}}}};
  const auto spec = pluginIsolationFrom(plugins);
  EXPECT_EQ(spec.by_id.size(), 1U);  // a wrong type is the schema's error
  EXPECT_EQ(spec.forPlugin("dev.a"), "process");
  EXPECT_EQ(pluginIsolationFrom(Json{{"isolation", "in-process"}}).all, "in-process");
}

}  // namespace
}  // namespace oe::spec

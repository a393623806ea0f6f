// The tool plugin as the host sees it: descriptor, kind table, spec schema, create errors that
// do not depend on the flavour, and malformed requests.
#include "tool_test_fixture.hpp"

namespace oe::tool::test {
namespace {

using ToolAbiTest = ToolPluginTest;

TEST_F(ToolAbiTest, DescribesItselfThroughTheEntryPoint) {
  const oe_plugin_entry& entry = plugin_->entry();
  EXPECT_EQ(entry.struct_size, sizeof(oe_plugin_entry));
  EXPECT_EQ(entry.abi_version, OE_ABI_VERSION);
  EXPECT_STREQ(entry.plugin_id, "dev.oe.tool");
  EXPECT_STREQ(entry.plugin_version, OE_TOOL_EXPECTED_VERSION);
  ASSERT_EQ(entry.node_kind_count(plugin_->self()), 1U);
  const oe_node_kind* kind = entry.node_kind_at(plugin_->self(), 0);
  ASSERT_NE(kind, nullptr);
  EXPECT_STREQ(kind->kind, "tool");
  EXPECT_EQ(kind->flags & OE_NODE_KIND_REENTRANT, OE_NODE_KIND_REENTRANT);
  EXPECT_NE(kind->cancel, nullptr);
  EXPECT_EQ(entry.node_kind_at(plugin_->self(), 1), nullptr);
}

TEST_F(ToolAbiTest, SpecSchemaRequiresANonEmptyImpl) {
  const auto schema = nlohmann::json::parse(kind_->spec_schema_json);
  EXPECT_EQ(schema["type"], "object");
  EXPECT_EQ(schema["required"], nlohmann::json::array({"impl"}));
  EXPECT_EQ(schema["properties"]["impl"]["type"], "string");
  EXPECT_EQ(schema["properties"]["impl"]["minLength"], 1);
  EXPECT_TRUE(schema["properties"]["impl"]["description"].is_string());
  EXPECT_EQ(schema["properties"]["args"]["type"], "object");
}

TEST_F(ToolAbiTest, MissingImplFileIsReportedWithTheUpstreamMessage) {
  const CreateResult created = tryCreate("fetch", "./tools/nope.mjs");
  EXPECT_EQ(created.status, OE_NOT_FOUND);
  EXPECT_EQ(created.error, "Tool impl not found: " + (dir_.path() / "tools/nope.mjs").string() +
                               " (declared as \"./tools/nope.mjs\" in experience.yaml)");
}

TEST_F(ToolAbiTest, AbsoluteImplIsUsedAsIs) {
  const auto path = writeFile("elsewhere/t.mjs", "export default () => ({ state_delta: {} });");
  oe_node* node = create("abs", path.string(), Json::object(), "/nonexistent-experience-dir");
  ASSERT_NE(node, nullptr);
}

TEST_F(ToolAbiTest, FileThatIsNeitherModuleLibraryNorExecutableIsRejected) {
  writeFile("tools/data.txt", "just text\n");
  const CreateResult created = tryCreate("reader", "./tools/data.txt");
  EXPECT_NE(created.status, OE_OK);
  EXPECT_EQ(created.error, "Tool \"reader\": " + (dir_.path() / "tools/data.txt").string() +
                               " is neither a .mjs/.js module, a shared library nor an executable "
                               "file; chmod +x it or use a .mjs module");
}

TEST_F(ToolAbiTest, DirectoryIsRejectedLikeAnyOtherNonTool) {
  std::filesystem::create_directories(dir_ / "tools/adir");
  const CreateResult created = tryCreate("d", "./tools/adir");
  EXPECT_NE(created.status, OE_OK);
  EXPECT_NE(created.error.find("is neither a .mjs/.js module"), std::string::npos) << created.error;
}

TEST_F(ToolAbiTest, NodeWithoutImplIsRejected) {
  const Json config{{"node", Json{{"id", "x"}, {"kind", "tool"}}},
                    {"experience_dir", dir_.path().string()}};
  const CreateResult created = plugin_->create(*kind_, config.dump());
  EXPECT_EQ(created.status, OE_INVALID_ARGUMENT);
  EXPECT_NE(created.error.find("Tool \"x\" has no impl"), std::string::npos) << created.error;
}

TEST_F(ToolAbiTest, MalformedRequestIsAnInvalidArgument) {
  writeFile("tools/t.sh", "#!/bin/sh\necho '{\"state_delta\":{}}'\n", true);
  oe_node* node = create("t", "./tools/t.sh");
  auto ctx = host_.makeContext("t");
  const CallResult result = LoadedPlugin::invoke(*kind_, node, "{not json", *ctx);
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_NE(result.error.find("not valid JSON"), std::string::npos) << result.error;
  const CallResult bad_args = LoadedPlugin::invoke(*kind_, node, R"({"args":[1,2]})", *ctx);
  EXPECT_EQ(bad_args.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(bad_args.error, "Tool \"t\": args must be an object, got array");
}

}  // namespace
}  // namespace oe::tool::test

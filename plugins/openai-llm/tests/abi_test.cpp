// The plugin as the host sees it: a service-only descriptor (no node kinds) whose plugin-level
// get_extension serves oe.llm-provider/1 for "openai" and "anthropic".
#include <cstring>

#include "llm_test_fixture.hpp"

namespace oe::llm::test {
namespace {

using LlmAbiTest = LlmPluginTest;

TEST_F(LlmAbiTest, DescribesItselfAsAServicePluginWithoutKinds) {
  const oe_plugin_entry& entry = plugin_->entry();
  EXPECT_EQ(entry.struct_size, sizeof(oe_plugin_entry));
  EXPECT_EQ(entry.abi_version, OE_ABI_VERSION);
  EXPECT_STREQ(entry.plugin_id, "dev.oe.openai-llm");
  EXPECT_STREQ(entry.plugin_version, OE_OPENAI_LLM_EXPECTED_VERSION);
  EXPECT_EQ(entry.node_kind_count(plugin_->self()), 0U);
  EXPECT_EQ(entry.node_kind_at(plugin_->self(), 0), nullptr);
}

TEST_F(LlmAbiTest, ServesTheProviderExtensionOnly) {
  const oe_plugin_entry& entry = plugin_->entry();
  ASSERT_NE(provider_, nullptr);
  EXPECT_EQ(provider_->struct_size, sizeof(oe_llm_provider));
  EXPECT_NE(provider_->complete, nullptr);
  std::vector<std::string> names;
  for (const char* const* p = provider_->providers; *p != nullptr; ++p) {
    names.emplace_back(*p);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"openai", "anthropic"}));
  EXPECT_EQ(entry.get_extension(plugin_->self(), OE_EXT_LLM), nullptr);
  EXPECT_EQ(entry.get_extension(plugin_->self(), "oe.llm-provider/2"), nullptr);
  EXPECT_EQ(entry.get_extension(plugin_->self(), nullptr), nullptr);
  EXPECT_EQ(entry.get_extension(nullptr, OE_EXT_LLM_PROVIDER), nullptr);
}

TEST_F(LlmAbiTest, NullPluginHandleIsRefused) {
  const std::string cfg = config("openai").dump();
  const std::string req = userRequest("x").dump();
  FakeWriter response;
  FakeWriter error;
  EXPECT_EQ(provider_->complete(nullptr, nullptr, oe_str{cfg.data(), cfg.size()},
                                oe_str{req.data(), req.size()}, FakeHost::writer(response),
                                FakeHost::writer(error)),
            OE_INVALID_ARGUMENT);
}

TEST_F(LlmAbiTest, WorksWithoutACallContext) {
  server_.enqueue(FakeLlmServer::openAiText("from the plugin context"));
  const std::string cfg = config("openai").dump();
  const std::string req = userRequest("x").dump();
  FakeWriter response;
  FakeWriter error;
  ASSERT_EQ(provider_->complete(plugin_->self(), nullptr, oe_str{cfg.data(), cfg.size()},
                                oe_str{req.data(), req.size()}, FakeHost::writer(response),
                                FakeHost::writer(error)),
            OE_OK)
      << error.bytes;
  EXPECT_EQ(Json::parse(response.bytes)["text"], "from the plugin context");
}

TEST_F(LlmAbiTest, ResponseOverTheWriterLimitIsResourceExhausted) {
  server_.enqueue(FakeLlmServer::openAiText(std::string(4000, 'a')));
  const std::string cfg = config("openai").dump();
  const std::string req = userRequest("x").dump();
  FakeWriter response;
  response.limit = 100;
  FakeWriter error;
  auto ctx = host_.makeContext("n");
  EXPECT_EQ(provider_->complete(plugin_->self(), FakeHost::context(*ctx),
                                oe_str{cfg.data(), cfg.size()}, oe_str{req.data(), req.size()},
                                FakeHost::writer(response), FakeHost::writer(error)),
            OE_RESOURCE_EXHAUSTED);
  EXPECT_EQ(error.bytes, "the LLM response exceeds the host's size limit");
}

}  // namespace
}  // namespace oe::llm::test

// oe/cpp/prompt.hpp against a scripted oe.prompt/1: rendered text and values JSON are copied out
// of host buffers released exactly once (also when the copy throws), and failures are values.
#include <oe/cpp/prompt.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <new>
#include <string>

#include "local_fake_host.hpp"

namespace oe::sdk {
namespace {

using testing::LocalFakeHost;
using testing::LocalFakeServices;

class PromptGlueTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::installLlmAndPrompt(call_); }
  [[nodiscard]] Prompt prompt() { return findPrompt(*LocalFakeHost::api(), &call_); }

  oe_host_ctx call_;
};

TEST_F(PromptGlueTest, RenderCopiesTheTextAndReleasesTheBufferOnce) {
  Expected<std::string> text = prompt().render("Hello {{name}}");
  ASSERT_TRUE(text.ok()) << text.failure().message;
  EXPECT_EQ(text.value(), "rendered: Hello {{name}}");
  EXPECT_EQ(call_.releases, 1);
  EXPECT_EQ(call_.outstanding_buffers, 0);
}

TEST_F(PromptGlueTest, ValuesJsonPassesTheIndentAndReleasesTheBufferOnce) {
  Expected<std::string> json = prompt().valuesJson(2);
  ASSERT_TRUE(json.ok()) << json.failure().message;
  EXPECT_EQ(json.value(), R"({"indent":2})");
  EXPECT_EQ(call_.releases, 1);
  EXPECT_EQ(call_.outstanding_buffers, 0);
}

TEST_F(PromptGlueTest, TheBufferIsReleasedWhenTheCopyThrows) {
  OE_SKIP_WHERE_NEW_CANNOT_THROW();
  call_.oversized_buffers = true;  // copying the text into a std::string throws
  EXPECT_THROW((void)prompt().render("x"), std::bad_alloc);
  EXPECT_THROW((void)prompt().valuesJson(0), std::bad_alloc);
  EXPECT_EQ(call_.releases, 2);
  EXPECT_EQ(call_.outstanding_buffers, 0);
}

TEST_F(PromptGlueTest, AHostFailureIsAValueWithItsStatus) {
  call_.state["prompt.fail"] = "1";
  Expected<std::string> text = prompt().render("x");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.failure().status, OE_FAILED_PRECONDITION);
  EXPECT_EQ(text.failure().message,
            "oe.prompt/1 render failed with status " + std::to_string(OE_FAILED_PRECONDITION));
  Expected<std::string> json = prompt().valuesJson(0);
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(json.failure().status, OE_FAILED_PRECONDITION);
  EXPECT_EQ(call_.releases, 0);
}

TEST_F(PromptGlueTest, AnOlderTableWithoutValuesJsonStillRenders) {
  oe_prompt_api old = *LocalFakeServices::prompt();
  old.struct_size = offsetof(oe_prompt_api, values_json);
  call_.extensions[OE_EXT_PROMPT] = &old;
  const Prompt older = prompt();
  ASSERT_TRUE(older);
  EXPECT_FALSE(older.offersValuesJson());
  EXPECT_TRUE(older.render("x").ok());
  Expected<std::string> json = older.valuesJson(0);
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(json.failure().status, OE_UNIMPLEMENTED);
  EXPECT_EQ(json.failure().message, "this host does not offer oe.prompt/1 values_json");
}

TEST_F(PromptGlueTest, FindPromptRefusesMissingOrTooShortTables) {
  const oe_host_api& host = *LocalFakeHost::api();
  oe_host_ctx bare;
  EXPECT_FALSE(findPrompt(host, &bare));
  Expected<std::string> absent = findPrompt(host, &bare).render("x");
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.failure().status, OE_UNIMPLEMENTED);
  oe_prompt_api truncated = *LocalFakeServices::prompt();
  truncated.struct_size = offsetof(oe_prompt_api, render);
  bare.extensions[OE_EXT_PROMPT] = &truncated;
  EXPECT_FALSE(findPrompt(host, &bare));
}

}  // namespace
}  // namespace oe::sdk

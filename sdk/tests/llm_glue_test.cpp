// oe/cpp/llm.hpp against a scripted oe.llm/1: the reply carries the response or the host's
// failure, its buffer is released exactly once on every path, and too-old tables are refused.
#include <oe/cpp/llm.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "local_fake_host.hpp"

namespace oe::sdk {
namespace {

using testing::LocalFakeHost;
using testing::LocalFakeServices;

class LlmGlueTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::installLlmAndPrompt(call_); }
  [[nodiscard]] Llm llm() { return findLlm(*LocalFakeHost::api(), &call_); }

  oe_host_ctx call_;
};

TEST_F(LlmGlueTest, CompleteGivesTheResponseAndReleasesItOnce) {
  {
    const LlmReply reply = llm().complete(R"({"messages":[{"role":"user","content":"hi"}]})");
    ASSERT_TRUE(reply.ok()) << reply.error();
    EXPECT_EQ(reply.response(), R"({"text":"hello"})");
    EXPECT_EQ(reply.error(), "");
    EXPECT_EQ(call_.state["llm.request"], R"({"messages":[{"role":"user","content":"hi"}]})");
    EXPECT_EQ(call_.releases, 0) << "the text stays valid while the reply lives";
  }
  EXPECT_EQ(call_.releases, 1);
  EXPECT_EQ(call_.outstanding_buffers, 0);
}

TEST_F(LlmGlueTest, AFailureCarriesTheHostsStatusAndMessage) {
  call_.state["llm.error"] = "budget of the run is spent";
  {
    const LlmReply reply = llm().complete("{}");
    EXPECT_FALSE(reply.ok());
    EXPECT_EQ(reply.status(), OE_UNAVAILABLE);
    EXPECT_EQ(reply.error(), "budget of the run is spent");
    EXPECT_EQ(reply.hostError(), "budget of the run is spent");
    EXPECT_EQ(reply.response(), "");
  }
  EXPECT_EQ(call_.releases, 1);
  EXPECT_EQ(call_.outstanding_buffers, 0);
}

TEST_F(LlmGlueTest, TheBufferIsReleasedWhenTheCallerThrows) {
  OE_SKIP_WHERE_NEW_CANNOT_THROW();
  call_.oversized_buffers = true;  // copying the response into a std::string throws
  EXPECT_ANY_THROW({
    const LlmReply reply = llm().complete("{}");
    const std::string copy(reply.response());
  });
  EXPECT_EQ(call_.releases, 1);
  EXPECT_EQ(call_.outstanding_buffers, 0);
}

TEST_F(LlmGlueTest, MovesHandTheBufferOverWithoutReleasingTwice) {
  {
    LlmReply first = llm().complete("{}");
    LlmReply second = std::move(first);
    EXPECT_EQ(second.response(), R"({"text":"hello"})");
    EXPECT_EQ(call_.releases, 0);
  }
  EXPECT_EQ(call_.releases, 1);
  EXPECT_EQ(call_.outstanding_buffers, 0);
}

TEST_F(LlmGlueTest, FindLlmRefusesMissingOrTooShortTables) {
  const oe_host_api& host = *LocalFakeHost::api();
  oe_host_ctx bare;
  EXPECT_FALSE(findLlm(host, &bare));
  const LlmReply absent = findLlm(host, &bare).complete("{}");
  EXPECT_EQ(absent.status(), OE_UNIMPLEMENTED);
  EXPECT_EQ(absent.error(), "this host does not offer oe.llm/1");
  EXPECT_EQ(bare.releases, 0);

  EXPECT_TRUE(llm());
  oe_llm_api truncated = *LocalFakeServices::llm();  // a table that ends before complete
  truncated.struct_size = offsetof(oe_llm_api, complete);
  bare.extensions[OE_EXT_LLM] = &truncated;
  EXPECT_FALSE(findLlm(host, &bare));
  oe_llm_api no_complete = *LocalFakeServices::llm();
  no_complete.complete = nullptr;
  bare.extensions[OE_EXT_LLM] = &no_complete;
  EXPECT_FALSE(findLlm(host, &bare));
}

}  // namespace
}  // namespace oe::sdk

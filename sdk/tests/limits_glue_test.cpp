// oe/cpp/draft/limits.hpp against a scripted oe.limits/1-draft: a granted slot is a host buffer
// given back exactly once, when the LimitSlot goes (or on reset); refusals and an absent
// extension are values.
#include <oe/cpp/draft/limits.hpp>

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "local_fake_host.hpp"

namespace oe::sdk::draft {
namespace {

using testing::handOut;
using testing::LocalFakeHost;
using testing::view;

// Grants "runtime.limits.<name>" unless the context's state says "limits.cancel" (cancelled
// while waiting) or the name is "none" (no such limit: an empty slot).
oe_status OE_ABI acquire(oe_host_ctx* call, oe_str name, oe_host_buf* out_slot) {
  *out_slot = oe_host_buf{nullptr, 0, nullptr};
  if (call->state.count("limits.cancel") != 0) {
    return OE_CANCELLED;
  }
  if (view(name) != "none") {
    handOut(call, out_slot, "runtime.limits." + std::string(view(name)));
  }
  return OE_OK;
}
constexpr oe_limits_api kLimits{sizeof(oe_limits_api), &acquire};

class LimitsGlueTest : public ::testing::Test {
 protected:
  void SetUp() override { call_.extensions[OE_EXT_LIMITS] = &kLimits; }
  oe_host_ctx call_;
};

TEST_F(LimitsGlueTest, ASlotIsGivenBackOnceWhenItGoes) {
  {
    Expected<LimitSlot> slot = acquireLimit(*LocalFakeHost::api(), &call_, "claude-code");
    ASSERT_TRUE(slot.ok()) << slot.failure().message;
    EXPECT_TRUE(slot->held());
    EXPECT_EQ(slot->limits(), "runtime.limits.claude-code");
    LimitSlot moved = std::move(slot.value());
    EXPECT_EQ(call_.outstanding_buffers, 1);
    moved.reset();
    EXPECT_EQ(call_.outstanding_buffers, 0);
  }
  EXPECT_EQ(call_.releases, 1);
}

TEST_F(LimitsGlueTest, NoLimitOfThatNameHoldsNothing) {
  Expected<LimitSlot> slot = acquireLimit(*LocalFakeHost::api(), &call_, "none");
  ASSERT_TRUE(slot.ok());
  EXPECT_FALSE(slot->held());
  EXPECT_TRUE(slot->limits().empty());
}

TEST_F(LimitsGlueTest, CancelledAndAbsentAreFailures) {
  call_.state["limits.cancel"] = "1";
  Expected<LimitSlot> cancelled = acquireLimit(*LocalFakeHost::api(), &call_, "codex");
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.failure().status, OE_CANCELLED);
  EXPECT_NE(cancelled.failure().message.find("runtime.limits.codex"), std::string::npos);

  call_.extensions.clear();
  Expected<LimitSlot> absent = acquireLimit(*LocalFakeHost::api(), &call_, "codex");
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.failure().status, OE_UNIMPLEMENTED);
  EXPECT_EQ(call_.outstanding_buffers, 0);
}

}  // namespace
}  // namespace oe::sdk::draft

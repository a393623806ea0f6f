// host->release through the real host table: once per buffer frees it, and a second release of
// the same buffer, or of a copy of its oe_host_buf, does nothing (docs/abi.md, Ownership). Each
// misuse runs in a child process, so a double free shows as a failed test, not a dead suite.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "oe/common/host_buffer.hpp"
#include "oe/plugins/host_context.hpp"

namespace oe::plugins {
namespace {

void release(oe_host_buf* buf) { hostApi()->release(nullptr, buf); }

TEST(HostBufferRelease, ReleaseFreesOnceAndResetsTheBuffer) {
  oe_host_buf buf{};
  giveBuffer(std::string("some text"), &buf);
  ASSERT_EQ(std::string(buf.ptr, buf.len), "some text");
  EXPECT_NE(buf.opaque, nullptr);
  release(&buf);
  EXPECT_EQ(buf.ptr, nullptr);
  EXPECT_EQ(buf.len, 0u);
  EXPECT_EQ(buf.opaque, nullptr);
  release(&buf);     // the reset buffer again
  release(nullptr);  // NULL-safe
}

TEST(HostBufferRelease, ReleasingACopyAsWellIsHarmless) {
  EXPECT_EXIT(
      {
        oe_host_buf buf{};
        giveBuffer(std::string(1000, 'x'), &buf);
        oe_host_buf copy = buf;
        oe_host_buf second_copy = buf;
        release(&buf);
        release(&copy);
        release(&second_copy);
        std::exit(copy.opaque == nullptr && second_copy.opaque == nullptr ? 0 : 2);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(HostBufferRelease, ARepeatedReleaseLeavesOtherBuffersAlone) {
  EXPECT_EXIT(
      {
        oe_host_buf first{};
        giveBuffer(std::string("first"), &first);
        const oe_host_buf stale = first;
        release(&first);
        // The next buffer may reuse the freed slot; the stale copy's release must not free it.
        oe_host_buf second{};
        giveBuffer(std::string("second buffer"), &second);
        oe_host_buf again = stale;
        release(&again);
        const bool intact = std::string(second.ptr, second.len) == "second buffer";
        release(&second);
        std::exit(intact ? 0 : 2);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(HostBufferRelease, ABufferTheHostNeverHandedOutIsIgnored) {
  EXPECT_EXIT(
      {
        int not_a_buffer = 0;
        oe_host_buf forged = oe_host_buf();
        forged.ptr = "x";
        forged.len = 1;
        forged.opaque = &not_a_buffer;
        oe_host_buf zero = forged;
        zero.opaque = nullptr;
        release(&forged);
        release(&zero);
        std::exit(forged.opaque == nullptr ? 0 : 2);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace oe::plugins

// EventBudget, on a clock the test moves: the size cap, the bursts and the average rates of
// events and bytes, and the one report per call.
#include "oe/plugins/event_budget.hpp"

#include <gtest/gtest.h>

namespace oe::plugins {
namespace {

using Clock = EventBudget::Clock;
using std::chrono::milliseconds;
using Verdict = EventBudget::Verdict;

TEST(EventBudget, AnEventOverTheSizeCapIsRefusedWhateverTheRate) {
  const Clock::time_point t0{};
  EventBudget budget(EventBudget::Limits{}, t0);
  EXPECT_EQ(budget.admit(64 << 10, t0), Verdict::kAdmitted);
  EXPECT_EQ(budget.admit((64 << 10) + 1, t0), Verdict::kTooLarge);
  EXPECT_EQ(budget.refused(), 1u);
}

TEST(EventBudget, ABurstOfEventsThenTheAverageRate) {
  const Clock::time_point t0{};
  EventBudget budget(EventBudget::Limits{}, t0);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(budget.admit(10, t0), Verdict::kAdmitted) << i;
  }
  EXPECT_EQ(budget.admit(10, t0), Verdict::kTooFast);
  // 100 events a second: after 50 ms, 5 more.
  const Clock::time_point t1 = t0 + milliseconds(50);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(budget.admit(10, t1), Verdict::kAdmitted) << i;
  }
  EXPECT_EQ(budget.admit(10, t1), Verdict::kTooFast);
  EXPECT_EQ(budget.refused(), 2u);
  // A long pause refills up to the burst, no further.
  const Clock::time_point t2 = t1 + std::chrono::hours(1);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(budget.admit(10, t2), Verdict::kAdmitted) << i;
  }
  EXPECT_EQ(budget.admit(10, t2), Verdict::kTooFast);
}

TEST(EventBudget, ABurstOfBytesThenTheAverageRate) {
  const Clock::time_point t0{};
  EventBudget budget(EventBudget::Limits{}, t0);
  for (int i = 0; i < 16; ++i) {  // 16 x 64 KiB = the 1 MiB burst
    ASSERT_EQ(budget.admit(64 << 10, t0), Verdict::kAdmitted) << i;
  }
  EXPECT_EQ(budget.admit(1, t0), Verdict::kTooFast);
  // 256 KiB a second: a quarter of a second later, 64 KiB more.
  EXPECT_EQ(budget.admit(64 << 10, t0 + milliseconds(250)), Verdict::kAdmitted);
  EXPECT_EQ(budget.admit(1024, t0 + milliseconds(250)), Verdict::kTooFast);
}

TEST(EventBudget, TheFirstRefusalIsReportedOncePerReset) {
  const Clock::time_point t0{};
  EventBudget::Limits limits;
  limits.burst_events = 1;
  EventBudget budget(limits, t0);
  EXPECT_FALSE(budget.firstRefusal()) << "nothing refused yet";
  EXPECT_EQ(budget.admit(1, t0), Verdict::kAdmitted);
  EXPECT_EQ(budget.admit(1, t0), Verdict::kTooFast);
  EXPECT_TRUE(budget.firstRefusal());
  EXPECT_EQ(budget.admit(1, t0), Verdict::kTooFast);
  EXPECT_FALSE(budget.firstRefusal());
  EXPECT_EQ(budget.refused(), 2u);
  budget.reset(t0);
  EXPECT_EQ(budget.refused(), 0u);
  EXPECT_EQ(budget.admit(1, t0), Verdict::kAdmitted);
  EXPECT_EQ(budget.admit(1, t0), Verdict::kTooFast);
  EXPECT_TRUE(budget.firstRefusal()) << "a new call reports again";
}

}  // namespace
}  // namespace oe::plugins

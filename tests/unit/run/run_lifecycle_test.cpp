// The end of a run alone: the status rule (D6, D7) and what run.finished carries.
#include "oe/run/run_lifecycle.hpp"

#include <gtest/gtest.h>

#include <csignal>

namespace oe::run::engine {
namespace {

TEST(RunStatusRule, D6SuccessPartialFailed) {
  EXPECT_EQ(decideStatus(false, false, false), RunStatus::kSuccess);  // nothing ran: no failure
  EXPECT_EQ(decideStatus(false, true, false), RunStatus::kSuccess);
  EXPECT_EQ(decideStatus(false, true, true), RunStatus::kPartial);
  EXPECT_EQ(decideStatus(false, false, true), RunStatus::kFailed);
}

TEST(RunStatusRule, D7ARunStoppedEarlyFailsWhateverRanBefore) {
  EXPECT_EQ(decideStatus(true, true, false), RunStatus::kFailed);
  EXPECT_EQ(decideStatus(true, true, true), RunStatus::kFailed);
  EXPECT_EQ(decideStatus(true, false, false), RunStatus::kFailed);
}

TEST(RunStatusRule, ASignalInterruptsRatherThanFails) {
  EXPECT_EQ(decideStatus(true, true, false, SIGINT), RunStatus::kInterrupted);
  EXPECT_EQ(decideStatus(true, false, true, SIGTERM), RunStatus::kInterrupted);
  EXPECT_EQ(decideStatus(true, true, true, 0), RunStatus::kFailed);  // fail_run or the budget
}

TEST(RunStatusRule, StatusNames) {
  EXPECT_EQ(toString(RunStatus::kSuccess), "success");
  EXPECT_EQ(toString(RunStatus::kPartial), "partial");
  EXPECT_EQ(toString(RunStatus::kFailed), "failed");
  EXPECT_EQ(toString(RunStatus::kInterrupted), "interrupted");
}

TEST(RunFinished, CountsAlwaysReusedAndReasonOnlyWhenSet) {
  RunSummary summary;
  summary.ran = 3;
  summary.cached = 2;
  summary.failed = 1;
  summary.skipped = 4;
  EXPECT_EQ(finishedFields(summary),
            (Json{{"nodes", {{"ran", 3}, {"cached", 2}, {"failed", 1}, {"skipped", 4}}}}));
  summary.reused = 5;
  summary.stop_reason = "budget_exhausted";
  const Json fields = finishedFields(summary);
  EXPECT_EQ(fields["nodes"]["reused"], 5);
  EXPECT_EQ(fields["reason"], "budget_exhausted");
}

}  // namespace
}  // namespace oe::run::engine

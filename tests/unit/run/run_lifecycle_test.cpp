// The end of a run alone: the status rule (D6, D7) and what run.finished carries.
#include "oe/run/run_lifecycle.hpp"

#include <gtest/gtest.h>

#include <csignal>

namespace oe::run::engine {
namespace {

TEST(RunStatusRule, D6SuccessPartialFailed) {
  EXPECT_EQ(decideStatus(0, false, false, false), RunStatus::kSuccess);  // nothing ran: no failure
  EXPECT_EQ(decideStatus(0, false, true, false), RunStatus::kSuccess);
  EXPECT_EQ(decideStatus(0, false, true, true), RunStatus::kPartial);
  EXPECT_EQ(decideStatus(0, false, false, true), RunStatus::kFailed);
}

TEST(RunStatusRule, D7ARunStoppedEarlyFailsWhateverRanBefore) {
  EXPECT_EQ(decideStatus(0, true, true, false), RunStatus::kFailed);
  EXPECT_EQ(decideStatus(0, true, true, true), RunStatus::kFailed);
  EXPECT_EQ(decideStatus(0, true, false, false), RunStatus::kFailed);
}

TEST(RunStatusRule, ARunStoppedByASignalIsInterrupted) {
  EXPECT_EQ(decideStatus(SIGINT, true, true, false), RunStatus::kInterrupted);
  EXPECT_EQ(decideStatus(SIGTERM, true, false, true), RunStatus::kInterrupted);
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

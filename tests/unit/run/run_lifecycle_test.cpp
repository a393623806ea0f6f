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

// The lifecycle's Run members (run_lifecycle.cpp) through the in-process engine.
#include "engine_fixture.hpp"

namespace oe::run::engine::testing {
namespace {

using Lifecycle = EngineTest;

TEST_F(Lifecycle, FailRunStopsStartingWorkAndFailsTheRun) {
  const RunSummary summary = run(R"(name: stop
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - { id: first, kind: fake }
    - { id: bad, kind: fake, args: { no_delta: true }, on_error: { policy: fail_run } }
    - { id: later, kind: fake }
  edges: [ { from: first, to: bad } ]
)");
  EXPECT_EQ(summary.status, RunStatus::kFailed);  // D7, though `first` succeeded
  EXPECT_NE(summary.stop_reason.find("policy=fail_run"), std::string::npos) << summary.stop_reason;
  EXPECT_EQ(callsOf("first").size(), 1u);
  const auto finished = eventsOf("run.finished");
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0]["status"], "failed");
  EXPECT_EQ(finished[0]["reason"], summary.stop_reason);
}

TEST_F(Lifecycle, AnEventLogThatCannotBeWrittenEndsTheRunWithAWarning) {
  log_path_ = "/dev/full";  // every write fails with ENOSPC
  const RunSummary summary = run(R"(name: full
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - { id: ok, kind: fake }
  edges: []
)");
  EXPECT_EQ(summary.status, RunStatus::kSuccess);  // the log never fails a run
  ASSERT_EQ(summary.warnings.size(), 1u);
  EXPECT_NE(summary.warnings[0].find("cannot write the event log /dev/full"), std::string::npos)
      << summary.warnings[0];
  EXPECT_NE(summary.warnings[0].find("No space left on device"), std::string::npos)
      << summary.warnings[0];
}

TEST_F(Lifecycle, RunFinishedCarriesTheStatusAndCounts) {
  const RunSummary summary = run(R"(name: counts
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - { id: ok, kind: fake }
    - { id: bad, kind: fake, args: { no_delta: true } }
    - { id: after, kind: fake }
  edges: [ { from: bad, to: after } ]
)");
  EXPECT_EQ(summary.status, RunStatus::kPartial);
  const auto finished = eventsOf("run.finished");
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0]["status"], "partial");
  EXPECT_EQ(finished[0]["nodes"],
            (Json{{"ran", 1}, {"cached", 0}, {"failed", 1}, {"skipped", 1}}));
}

// Items stopped by the run are cancelled, not failed: fail_run on `bad` cancels the three items
// of `each` in flight. Before, the summary counted nodes ("2 failed": bad and each) and listed
// four failures, the items among them failed with the error "cancelled". Every count is per
// call now, and the lines add up to it.
TEST_F(Lifecycle, CallsTheRunStoppedAreCancelledNotFailedAndCountedPerCall) {
  const RunSummary summary = run(R"(name: cancel
version: 0.1.0
runtime: { concurrency: 2 }
state: { schema: { xs: { type: array } } }
graph:
  nodes:
    - { id: seed, kind: fake, args: { delta: { xs: [0, 1, 2] } } }
    - { id: each, kind: fake, for_each: { source: $.xs, concurrency: 3 },
        args: { wait_cancel: true } }
    - { id: bad, kind: fake, on_error: { policy: fail_run }, args: { fail_until: 9, await: 5 } }
  edges: [ { from: seed, to: each }, { from: seed, to: bad } ]
)");
  EXPECT_EQ(summary.status, RunStatus::kFailed);
  EXPECT_EQ(summary.failed, 1u);
  ASSERT_EQ(summary.failures.size(), 1u);
  EXPECT_EQ(summary.failures[0].node_id, "bad");
  EXPECT_EQ(summary.cancelled, 3u);
  ASSERT_EQ(summary.cancellations.size(), 3u);
  EXPECT_EQ(summary.cancellations[0].node_id, "each");
  EXPECT_EQ(summary.cancellations[0].error, "cancelled");
  const auto each_failed = eventsOf("node.failed", "each");
  ASSERT_EQ(each_failed.size(), 3u);
  EXPECT_EQ(each_failed[0].value("cancelled", false), true);
  EXPECT_FALSE(eventsOf("node.failed", "bad")[0].contains("cancelled"));
  const auto finished = eventsOf("run.finished");
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0]["nodes"],
            (Json{{"ran", 1}, {"cached", 0}, {"failed", 1}, {"cancelled", 3}, {"skipped", 0}}));
}

TEST_F(Lifecycle, AKindNoPluginProvidesIsASetUpError) {
  const auto yaml_path = dir_.write("experience.yaml", "");
  auto loaded = spec::loadExperienceText(R"(name: unknown
version: 0.1.0
state: { schema: {} }
graph:
  nodes: [ { id: n, kind: nowhere } ]
  edges: []
)", yaml_path);
  ASSERT_TRUE(loaded.experience);
  auto store = state::StateStore::open(dir_ / "state.sqlite", loaded.experience->state);
  ASSERT_TRUE(store);
  auto log = events::EventLog::open(dir_ / "log.jsonl", "r");
  ASSERT_TRUE(log);
  const RunOptions options;
  engine::Run coordinator(*loaded.experience, options, **store, **log, nullptr, nullptr);
  auto prepared = coordinator.prepare(kinds_);
  ASSERT_FALSE(prepared);
  EXPECT_NE(prepared.error().message.find("node \"n\": no loaded plugin provides kind \"nowhere\""),
            std::string::npos)
      << prepared.error().message;
}

}  // namespace
}  // namespace oe::run::engine::testing

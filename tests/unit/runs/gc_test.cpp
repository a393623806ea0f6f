// `oe gc`'s retention without the CLI: which runs a policy keeps, the chains whose marks stay,
// and the pruning of a workspace's logs and pins.
#include "oe/runs/gc.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "support/temp_dir.hpp"

namespace oe::runs {
namespace {

constexpr int64_t kNow = 1'800'000'000'000;
constexpr int64_t kHour = 3'600'000;

RunRecord record(std::string id, int64_t started_ms, bool finished) {
  RunRecord run;
  run.id = std::move(id);
  run.started_ms = started_ms;
  run.modified_ms = started_ms;
  if (finished) {
    run.finished_at = "2027-01-15T08:00:00.000Z";
  }
  return run;
}

TEST(SelectRuns, KeepsTheNewestNAndPrunesTheRest) {
  const std::vector<RunRecord> runs = {record("c", kNow - 1 * kHour, true),
                                       record("b", kNow - 2 * kHour, true),
                                       record("a", kNow - 3 * kHour, true)};
  RetentionPolicy policy;
  policy.keep = 1;
  const Retention r = selectRuns(runs, policy, kNow);
  EXPECT_EQ(r.keep, (std::unordered_set<std::string>{"c"}));
  ASSERT_EQ(r.doomed.size(), 2U);
  EXPECT_EQ(r.doomed[0]->id, "b");
  EXPECT_EQ(r.doomed[1]->id, "a");
  EXPECT_EQ(r.kept_running, 0U);
}

TEST(SelectRuns, EitherRulePrunesARun) {
  const std::vector<RunRecord> runs = {record("new", kNow - 1 * kHour, true),
                                       record("old", kNow - 48 * kHour, true)};
  RetentionPolicy policy;
  policy.keep = 5;                 // keeps both
  policy.max_age_ms = 24 * kHour;  // prunes "old"
  const Retention r = selectRuns(runs, policy, kNow);
  EXPECT_EQ(r.keep, (std::unordered_set<std::string>{"new"}));
  ASSERT_EQ(r.doomed.size(), 1U);
  EXPECT_EQ(r.doomed[0]->id, "old");
}

TEST(SelectRuns, KeepsAnUnfinishedRunWhoseLogChangedRecently) {
  std::vector<RunRecord> runs = {record("running", kNow - 48 * kHour, false),
                                 record("dead", kNow - 48 * kHour, false)};
  runs[0].modified_ms = kNow - kMaybeRunningMs / 2;  // still writing its log
  RetentionPolicy policy;
  policy.keep = 0;
  const Retention r = selectRuns(runs, policy, kNow);
  EXPECT_EQ(r.keep, (std::unordered_set<std::string>{"running"}));
  EXPECT_EQ(r.kept_running, 1U);
  ASSERT_EQ(r.doomed.size(), 1U);
  EXPECT_EQ(r.doomed[0]->id, "dead");
}

TEST(KeptChains, FollowsChainIdsAndTheResumedFromOfOlderLogs) {
  std::vector<RunRecord> runs = {record("r3", 3, true), record("r2", 2, true),
                                 record("r1", 1, true), record("x", 0, true)};
  runs[0].resumed_from = "r2";  // logs from before chains were recorded
  runs[1].resumed_from = "r1";
  runs[3].chain_id = "chain-x";
  EXPECT_EQ(keptChains(runs, {"r3"}), (std::unordered_set<std::string>{"r2", "r1"}));
  EXPECT_EQ(keptChains(runs, {"x"}), (std::unordered_set<std::string>{"chain-x"}));
  EXPECT_TRUE(keptChains(runs, {"r1"}).empty());
}

void writeRun(const std::filesystem::path& runs_dir, const std::string& id,
              const std::string& started_at) {
  std::ofstream(runs_dir / (id + ".jsonl"), std::ios::binary)
      << R"({"type":"run.started","run_id":")" << id << R"(","ts":")" << started_at
      << R"(","args":{},"chain_id":")" << id << "\"}\n"
      << R"({"type":"run.finished","run_id":")" << id << R"(","ts":")" << started_at
      << R"(","status":"success","nodes":{"ran":1,"cached":0,"failed":0,"skipped":0}})" << '\n';
  std::ofstream(runs_dir / (id + ".pin.json"), std::ios::binary) << "{}\n";
}

TEST(CollectGarbage, RemovesTheLogsAndPinsOfThePrunedRunsOnly) {
  test::TempDir dir;
  const auto workspace = dir / ".openexpertise";
  std::filesystem::create_directories(workspace / "runs");
  writeRun(workspace / "runs", "old", "2026-01-01T00:00:00.000Z");
  writeRun(workspace / "runs", "new", "2026-06-01T00:00:00.000Z");
  RetentionPolicy policy;
  policy.keep = 1;

  const GcReport dry = collectGarbage(workspace, workspace / "state.sqlite",
                                      RetentionPolicy{policy.keep, std::nullopt, true}, kNow);
  EXPECT_EQ(dry.removed, (std::vector<std::string>{"old"}));
  EXPECT_GT(dry.log_bytes, 0U);
  EXPECT_TRUE(std::filesystem::exists(workspace / "runs" / "old.jsonl"));  // a dry run counts

  const GcReport report = collectGarbage(workspace, workspace / "state.sqlite", policy, kNow);
  EXPECT_FALSE(report.failed) << (report.problems.empty() ? "" : report.problems.front());
  EXPECT_EQ(report.removed, (std::vector<std::string>{"old"}));
  EXPECT_EQ(report.runs_kept, 1U);
  EXPECT_EQ(report.log_bytes, dry.log_bytes);
  EXPECT_FALSE(std::filesystem::exists(workspace / "runs" / "old.jsonl"));
  EXPECT_FALSE(std::filesystem::exists(workspace / "runs" / "old.pin.json"));
  EXPECT_TRUE(std::filesystem::exists(workspace / "runs" / "new.jsonl"));
  EXPECT_TRUE(std::filesystem::exists(workspace / "runs" / "new.pin.json"));
  EXPECT_FALSE(std::filesystem::exists(workspace / "state.sqlite"));  // not created
}

TEST(RemoveLocalLogs, RemovesTheLogAndPinOfEachRemovedRunAndCountsThem) {
  test::TempDir dir;
  std::ofstream(dir / "gone.jsonl", std::ios::binary) << "12345";
  std::ofstream(dir / "gone.pin.json", std::ios::binary) << "123";
  std::ofstream(dir / "kept.jsonl", std::ios::binary) << "1";
  EXPECT_EQ(removeLocalLogs(dir.path(), {"gone", "elsewhere"}, /*dry_run=*/true), 8U);
  EXPECT_TRUE(std::filesystem::exists(dir / "gone.jsonl"));
  EXPECT_EQ(removeLocalLogs(dir.path(), {"gone", "elsewhere"}, /*dry_run=*/false), 8U);
  EXPECT_FALSE(std::filesystem::exists(dir / "gone.jsonl"));
  EXPECT_FALSE(std::filesystem::exists(dir / "gone.pin.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "kept.jsonl"));
}

}  // namespace
}  // namespace oe::runs

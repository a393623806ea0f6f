// Finding a run by id or --last in a runs folder (oe resume, oe inspect).
#include "oe/runs/run_history.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "support/temp_dir.hpp"

namespace oe::runs {
namespace {

void writeLog(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A resume SIGKILLed after it created its log but before it wrote run.started leaves an empty
// log that is the newest. Resuming that one would start a new chain of runs (no chain_id to
// continue), so every array_append write landed in the real chain would land again (found by
// the crash harness, tests/crash). --last means the newest run that started.
TEST(FindRun, LastSkipsALogKilledBeforeItsRunStarted) {
  test::TempDir dir;
  writeLog(dir / "11111111-1111-4111-8111-111111111111.jsonl",
           R"({"type":"run.started","run_id":"11111111-1111-4111-8111-111111111111",)"
           R"("ts":"2026-05-26T10:00:00.000Z","args":{},)"
           R"("chain_id":"11111111-1111-4111-8111-111111111111"})"
           "\n");
  writeLog(dir / "22222222-2222-4222-8222-222222222222.jsonl", "");
  auto run = findRun(dir.path(), "", /*last=*/true);
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_EQ(run->id, "11111111-1111-4111-8111-111111111111");
  // Named explicitly, the empty one is still found (oe inspect can show it).
  auto named = findRun(dir.path(), "22222222", /*last=*/false);
  ASSERT_TRUE(named) << named.error().message;
  EXPECT_EQ(named->id, "22222222-2222-4222-8222-222222222222");
}

TEST(FindRun, LastFallsBackToALogWithoutRunStartedWhenThereIsNothingElse) {
  test::TempDir dir;
  writeLog(dir / "22222222-2222-4222-8222-222222222222.jsonl", "");
  auto run = findRun(dir.path(), "", /*last=*/true);
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_EQ(run->id, "22222222-2222-4222-8222-222222222222");
}

}  // namespace
}  // namespace oe::runs

// Finding a run by id or --last in a runs folder (oe resume, oe inspect).
#include "oe/runs/run_history.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

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

// The cache answers what listRuns answers, through logs that appear, grow until they finish,
// are replaced (a rename over them) and go, in a random order of those steps (seeded: a failure
// names its seed). Half the time the folder's mtime is then set far back, as a folder last
// changed long ago has it, so that the listings that trust an unchanged folder are taken too.
TEST(RunListCache, AnswersAsListRunsWhateverHappensToTheLogs) {
  for (const unsigned seed : {1U, 2U, 3U, 4U, 5U}) {
    test::TempDir dir;
    RunListCache cache;
    std::mt19937 random(seed);
    std::vector<std::string> ids;
    std::set<std::string> finished;
    for (int step = 0; step < 120; ++step) {
      const int op = static_cast<int>(random() % 4);
      if (op == 0 || ids.empty()) {
        char id[40];
        std::snprintf(id, sizeof id, "%08x-1111-4111-8111-%012d", static_cast<unsigned>(random()),
                      step);
        ids.emplace_back(id);
        writeLog(dir / (ids.back() + ".jsonl"),
                 R"({"type":"run.started","run_id":")" + ids.back() +
                     R"(","ts":"2026-05-26T10:00:)" + std::to_string(10 + step % 50) +
                     R"(.000Z","args":{},"resumed_from":"r)" + std::to_string(step) + "\"}\n");
      } else {
        const std::string& id = ids[random() % ids.size()];
        const auto path = dir / (id + ".jsonl");
        if (op == 1) {
          if (!finished.insert(id).second) {
            continue;  // a finished run's log is final
          }
          std::ofstream(path, std::ios::app)
              << R"({"type":"node.failed","node":"a","ts":"2026-05-26T10:01:00.000Z"})" << '\n'
              << R"({"type":"run.finished","status":"partial","ts":"2026-05-26T10:02:00.000Z",)"
              << R"("nodes":{"ran":2,"cached":1,"failed":1,"skipped":0}})" << '\n';
        } else if (op == 2) {
          writeLog(dir / "next.tmp", R"({"type":"run.started","run_id":")" + id +
                                         R"(","ts":"2026-05-27T00:00:00.000Z","args":{}})"
                                         "\n");
          std::filesystem::rename(dir / "next.tmp", path);
          finished.erase(id);
        } else {
          finished.erase(id);
          std::filesystem::remove(path);
          ids.erase(std::find(ids.begin(), ids.end(), id));
        }
      }
      if (random() % 2 == 0) {
        const struct timespec long_ago[2] = {{1'000'000'000 + step, 0}, {1'000'000'000 + step, 0}};
        ASSERT_EQ(::utimensat(AT_FDCWD, dir.path().c_str(), long_ago, 0), 0);
      }
      const bool details = random() % 2 == 0;
      const auto expected = listRuns(dir.path(), details);
      const auto got = cache.list(dir.path(), details);
      ASSERT_EQ(got.size(), expected.size()) << "seed " << seed << " step " << step;
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i].toJson(), expected[i].toJson()) << "seed " << seed << " step " << step;
        ASSERT_EQ(got[i].status, expected[i].status) << "seed " << seed << " step " << step;
        ASSERT_EQ(got[i].resumed_from, expected[i].resumed_from);
      }
    }
  }
}

}  // namespace
}  // namespace oe::runs

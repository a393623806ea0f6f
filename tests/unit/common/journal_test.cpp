// Journal (flock-owned append-only file) and FoldTimer against a real folder.
#include "oe/common/journal.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "oe/common/file.hpp"
#include "support/temp_dir.hpp"

namespace oe {
namespace {

TEST(Journal, AppendsLinesAndClears) {
  test::TempDir dir;
  auto journal = Journal::create(dir.path(), "j-");
  ASSERT_TRUE(journal.ok()) << journal.error().message;
  EXPECT_TRUE(journal->path().filename().string().starts_with("j-"));
  EXPECT_EQ(journal->path().extension(), ".jsonl");
  ASSERT_TRUE(journal->append("{\"a\":1}\n").ok());
  ASSERT_TRUE(journal->append("{\"b\":2}\n").ok());
  EXPECT_EQ(journal->size(), 16u);
  EXPECT_EQ(readFile(journal->path()), "{\"a\":1}\n{\"b\":2}\n");
  ASSERT_TRUE(journal->clear().ok());
  EXPECT_EQ(journal->size(), 0u);
  EXPECT_EQ(readFile(journal->path()), "");
  const auto path = journal->path();
  journal->remove();
  EXPECT_FALSE(journal->isOpen());
  EXPECT_FALSE(std::filesystem::exists(path));
}

// A full disk (here: the file size limit) in the middle of a line: the line is cut off again,
// the journal stays open and whole, and the next append works once there is room.
TEST(Journal, AFailedAppendLeavesNoTornLine) {
  test::TempDir dir;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto journal = Journal::create(dir.path(), "j-");
    bool ok = journal.ok() && journal->append("{\"a\":1}\n").ok();
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{16, 16};
    ok = ok && ::setrlimit(RLIMIT_FSIZE, &limit) == 0;
    // Built in place: GCC 12 at -O2 reports `std::string(64, 'x') + "\n"` as an out-of-bounds
    // memcpy (a false positive of its -Warray-bounds on std::string, fixed in GCC 13).
    std::string too_long(64, 'x');
    too_long.push_back('\n');
    ok = ok && !journal->append(too_long).ok() && journal->isOpen() &&
         journal->size() == 8 && readFile(journal->path()) == "{\"a\":1}\n" &&
         journal->append("{\"b\":2}\n").ok() &&
         readFile(journal->path()) == "{\"a\":1}\n{\"b\":2}\n";
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(Journal, CreateInAMissingFolderSaysWhere) {
  test::TempDir dir;
  auto journal = Journal::create(dir.path() / "missing", "j-");
  ASSERT_FALSE(journal.ok());
  EXPECT_NE(journal.error().message.find("missing"), std::string::npos)
      << journal.error().message;
}

TEST(Journal, ForEachLineYieldsATornLastLineToo) {
  std::vector<std::string> lines;
  Journal::forEachLine("a\nbb\nc", [&](std::string_view l) { lines.emplace_back(l); });
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "bb", "c"}));
  lines.clear();
  Journal::forEachLine("", [&](std::string_view l) { lines.emplace_back(l); });
  EXPECT_TRUE(lines.empty());
}

// Only journals whose owner is gone are folded; a live one (locked) is left alone, and one whose
// fold fails stays for the next try.
TEST(Journal, AnOrphanScanNeverTakesAJournalBeingCreated) {
  // A scan that lands between a journal's creation and its lock used to fold and delete it
  // (the owner then failed with "cannot lock the journal", or wrote into an unlinked file).
  test::TempDir dir;
  std::atomic<bool> done{false};
  std::atomic<int> folded{0};
  std::thread scanner([&] {
    while (!done.load()) {
      Journal::foldOrphans(dir.path(), "j-", [&](const std::filesystem::path&, std::string_view) {
        folded.fetch_add(1);
        return true;
      });
    }
  });
  std::string failure;
  for (int i = 0; i < 3000 && failure.empty(); ++i) {
    auto journal = Journal::create(dir.path(), "j-");
    if (!journal) {
      failure = journal.error().message;
    } else if (!std::filesystem::exists(journal->path())) {
      failure = "the journal was deleted under its owner: " + journal->path().string();
    } else {
      journal->remove();
    }
  }
  done = true;
  scanner.join();
  EXPECT_EQ(failure, "");
  EXPECT_EQ(folded.load(), 0);
}

TEST(Journal, FoldOrphansFoldsOnlyUnlockedJournals) {
  test::TempDir dir;
  auto live = Journal::create(dir.path(), "j-");
  ASSERT_TRUE(live.ok());
  ASSERT_TRUE(live->append("live\n").ok());
  std::ofstream(dir.path() / "j-1-aa.jsonl") << "orphan\n";
  std::ofstream(dir.path() / "j-2-bb.jsonl") << "kept\n";
  std::ofstream(dir.path() / "other-3.jsonl") << "not ours\n";
  std::vector<std::string> folded;
  Journal::foldOrphans(dir.path(), "j-", [&](const std::filesystem::path&, std::string_view text) {
    folded.emplace_back(text);
    return text != "kept\n";  // a fold that fails
  });
  std::sort(folded.begin(), folded.end());
  EXPECT_EQ(folded, (std::vector<std::string>{"kept\n", "orphan\n"}));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "j-1-aa.jsonl"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "j-2-bb.jsonl"));
  EXPECT_TRUE(std::filesystem::exists(live->path()));
  EXPECT_EQ(Journal::list(dir.path(), "j-").size(), 2u);
}

// Polls `done` for up to 20 s (a loaded CI machine); the limit is a safety net, not a timing.
template <typename Done>
bool eventually(Done done) {
  for (int i = 0; i < 2000 && !done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST(FoldTimer, FoldsOnceAfterArming) {
  std::atomic<int> folds{0};
  {
    FoldTimer timer(std::chrono::milliseconds(1), [&] { ++folds; });
    timer.arm();
    timer.arm();  // already armed: one fold
    EXPECT_TRUE(eventually([&] { return folds.load() > 0; }));
  }  // the destructor joins: no fold can still be running or come later
  EXPECT_EQ(folds.load(), 1);
}

TEST(FoldTimer, ADisarmedTimerDoesNotFold) {
  // A witness armed after the disarm with the same delay is due later: once it folded, the
  // disarmed timer's due time has passed too, and a fold it still did would be counted.
  constexpr auto kDelay = std::chrono::milliseconds(100);
  std::atomic<int> disarmed_folds{0};
  std::atomic<int> witness_folds{0};
  FoldTimer disarmed(kDelay, [&] { ++disarmed_folds; });
  disarmed.arm();
  disarmed.disarm();
  FoldTimer witness(kDelay, [&] { ++witness_folds; });
  witness.arm();
  EXPECT_TRUE(eventually([&] { return witness_folds.load() > 0; }));
  EXPECT_EQ(disarmed_folds.load(), 0);
}

TEST(FoldTimer, DestructorDoesNotWaitForAPendingFold) {
  // An hour-long timer armed and destroyed: the destructor must stop the thread at once and
  // leave the fold to the owner. Waiting for the due time would hang this test (ctest's 300 s
  // timeout fails it); folding from the destructor would count.
  std::atomic<int> folds{0};
  {
    FoldTimer pending(std::chrono::hours(1), [&] { ++folds; });
    pending.arm();
  }
  EXPECT_EQ(folds.load(), 0);
}

}  // namespace
}  // namespace oe

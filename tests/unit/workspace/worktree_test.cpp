// The worktree of a node attempt with the real git in temp repositories: names, finding the
// repository, where an attempt runs, the captured diff (tracked, deleted, untracked and binary
// files, reproduced byte for byte by applyDiff), its content-addressed artifact, the leftovers
// of a killed attempt cleared, a diff that does not apply changing nothing, and many threads.
#include "oe/workspace/worktree.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/process.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

namespace oe::workspace {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;
using test::readFile;
using test::runProcess;
using test::TempDir;

// `git <args>` in `cwd`, with an identity and no signing whatever the user's config says.
test::ProcessResult git(const fs::path& cwd, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"git",
                                   "-c",
                                   "user.name=oe test",
                                   "-c",
                                   "user.email=t@example.com",
                                   "-c",
                                   "commit.gpgsign=false",
                                   "-c",
                                   "init.defaultBranch=main"};
  argv.insert(argv.end(), args.begin(), args.end());
  return runProcess(argv, {}, cwd);
}

// The folder's repository: `files` (relative path -> content) committed as its HEAD.
class WorktreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::canonical(dir_.path()) / "repo";
    fs::create_directories(root_);
    ASSERT_EQ(git(root_, {"init", "-q"}).exit_code, 0);
  }

  void commit(const std::map<std::string, std::string>& files) {
    for (const auto& [rel, content] : files) {
      write(root_ / rel, content);
    }
    ASSERT_EQ(git(root_, {"add", "-A"}).exit_code, 0);
    auto committed = git(root_, {"commit", "-q", "-m", "files"});
    ASSERT_EQ(committed.exit_code, 0) << committed.err;
  }

  static void write(const fs::path& path, std::string_view content) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
  }

  Worktrees trees() {
    auto repo = Worktrees::findRepo(root_);
    EXPECT_TRUE(repo) << repo.error().message;
    return Worktrees(repo ? std::move(repo).value() : Repo{});
  }

  // The top levels `git worktree list` names (the main checkout first).
  std::vector<std::string> worktreeList() {
    const std::string out = git(root_, {"worktree", "list", "--porcelain"}).out;
    std::vector<std::string> paths;
    size_t at = 0;
    while ((at = out.find("worktree ", at)) != std::string::npos) {
      const size_t end = out.find('\n', at);
      paths.push_back(out.substr(at + 9, end - at - 9));
      at = end;
    }
    return paths;
  }
  std::string oeBranches() { return git(root_, {"branch", "--list", "oe/*"}).out; }

  TempDir dir_;
  fs::path root_;
};

TEST(WorktreeNames, KeyAndBranchNameTheNodeItsItemAndTheRun) {
  EXPECT_EQ(worktreeKey("fix", -1), "fix");
  EXPECT_EQ(worktreeKey("fix", 0), "fix#0");
  EXPECT_EQ(worktreeKey("fix", 12), "fix#12");
  EXPECT_EQ(branchName("r1", "fix"), "oe/r1/fix");
  EXPECT_EQ(branchName("20260526-abc", "fix#3"), "oe/20260526-abc/fix#3");
  // git itself takes both as branch names.
  for (const char* branch : {"oe/r1/fix", "oe/20260526-abc/fix#3"}) {
    EXPECT_EQ(
        git(fs::temp_directory_path(), {"check-ref-format", "refs/heads/" + std::string(branch)})
            .exit_code,
        0)
        << branch;
  }
  const Repo repo{"/src/app", "/src/app/.git"};
  EXPECT_EQ(chainFolder(repo, "c1"), fs::path("/src/app/.git/oe-worktrees/c1"));
}

TEST_F(WorktreeTest, FindRepoFromASubfolderNamesTheTopLevelAndItsGitFolder) {
  commit({{"sub/exp/experience.yaml", "name: x\n"}});
  auto repo = Worktrees::findRepo(root_ / "sub" / "exp");
  ASSERT_TRUE(repo) << repo.error().message;
  EXPECT_EQ(repo->root, root_);
  EXPECT_EQ(repo->common_dir, root_ / ".git");
}

TEST_F(WorktreeTest, FindRepoOutsideARepositoryOrBeforeTheFirstCommitSaysWhatToDo) {
  // Not a repository: the ceiling keeps git from finding one above the temp folder.
  const fs::path outside = fs::canonical(dir_.path()) / "plain";
  fs::create_directories(outside);
  {
    test::ScopedEnv ceiling("GIT_CEILING_DIRECTORIES", fs::canonical(dir_.path()).string());
    auto none = Worktrees::findRepo(outside);
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().message.find(outside.string() + " is not inside a git repository"),
              std::string::npos)
        << none.error().message;
    // git's own words follow.
    EXPECT_NE(none.error().message.find("not a git repository"), std::string::npos)
        << none.error().message;
  }
  // A repository without a commit: there is no HEAD to make a worktree from.
  auto empty = Worktrees::findRepo(root_);
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find(root_.string() + " has no commit yet"), std::string::npos)
      << empty.error().message;
  EXPECT_NE(empty.error().message.find("commit first"), std::string::npos);
}

TEST_F(WorktreeTest, PlanKeepsTheExperienceFoldersPlaceInTheRepository) {
  commit({{"sub/exp/experience.yaml", "name: x\n"}});
  Worktrees worktrees = trees();
  const Worktree inside = worktrees.plan("c1", "r1", "fix#2", root_ / "sub" / "exp");
  EXPECT_EQ(inside.path, root_ / ".git" / "oe-worktrees" / "c1" / "r1" / "fix#2");
  EXPECT_EQ(inside.branch, "oe/r1/fix#2");
  EXPECT_EQ(inside.workdir, inside.path / "sub" / "exp");
  // A relative or unnormalised experience path is the same folder.
  EXPECT_EQ(worktrees.plan("c1", "r1", "fix#2", root_ / "sub" / "." / "exp" / "").workdir,
            inside.workdir);
  // The experience at the top level: the worktree's top level, as the same path.
  const Worktree top = worktrees.plan("c1", "r1", "fix", root_);
  EXPECT_EQ(top.workdir, top.path);
  EXPECT_EQ(top.workdir.string(), top.path.string());
  // An experience outside the repository (workspace.repo names another one): the top level.
  const Worktree outside = worktrees.plan("c1", "r1", "fix", dir_.path() / "elsewhere" / "exp");
  EXPECT_EQ(outside.workdir, outside.path);
  // Planning runs no git and makes nothing.
  EXPECT_FALSE(fs::exists(inside.path));
  EXPECT_FALSE(fs::exists(root_ / ".git" / "oe-worktrees"));
}

TEST_F(WorktreeTest, CaptureTakesTrackedDeletedUntrackedAndBinaryChangesThatApplyByteForByte) {
  const std::string binary_old = "\x00\x01\x02\xff old"s;
  commit({{".gitignore", "*.log\n"},
          {"a.txt", "one\ntwo\n"},
          {"gone.txt", "bye\n"},
          {"data.bin", binary_old},
          {"keep/same.txt", "same\n"},
          {"sub/exp/experience.yaml", "name: x\n"}});
  // An edit in the main checkout that is not committed: not in the worktree.
  write(root_ / "a.txt", "dirty\n");

  Worktrees worktrees = trees();
  const Worktree tree = worktrees.plan("c1", "r1", "edit", root_ / "sub" / "exp");
  ASSERT_TRUE(worktrees.make(tree, "c1", "edit"));
  EXPECT_TRUE(fs::is_directory(tree.workdir));
  EXPECT_EQ(readFile(tree.path / "a.txt"), "one\ntwo\n");
  EXPECT_EQ(git(tree.path, {"rev-parse", "--abbrev-ref", "HEAD"}).out, "oe/r1/edit\n");
  EXPECT_EQ(worktreeList().size(), 2U);

  const std::string binary_new = "\xff\xfe\x00\x00 new \x00"s;
  const std::string binary_added = "\x89PNG\r\n\x1a\n\x00\x00\x00\x0d"s;
  write(tree.path / "a.txt", "one\nTWO\nthree\n");   // +2 -1
  fs::remove(tree.path / "gone.txt");                // -1
  write(tree.path / "data.bin", binary_new);         // binary: no line counts
  write(tree.path / "new dir/ü 1.txt", "u1\nu2\n");  // +2, a name git would quote
  write(tree.path / "added.png", binary_added);
  write(tree.path / "debug.log", "ignored\n");  // ignored: not in the diff

  const fs::path artifacts = dir_.path() / "artifacts";
  auto summary = worktrees.capture(tree, artifacts);
  ASSERT_TRUE(summary) << summary.error().message;
  std::vector<std::string> files = summary->files;
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"a.txt", "added.png", "data.bin", "gone.txt",
                                             "new dir/ü 1.txt"}));
  EXPECT_EQ(summary->insertions, 4);
  EXPECT_EQ(summary->deletions, 2);
  EXPECT_EQ(summary->toJson(), Json({{"artifact", summary->artifact},
                                     {"files", summary->files},
                                     {"insertions", 4},
                                     {"deletions", 2}}));
  // Content-addressed: the file is named by the sha256 of what it holds (sha256sum's reckoning).
  const fs::path file = artifacts / (summary->artifact + ".diff");
  ASSERT_TRUE(fs::exists(file));
  EXPECT_EQ(runProcess({"sha256sum", file.string()}).out.substr(0, 64), summary->artifact);
  const std::string diff = readFile(file);
  EXPECT_NE(diff.find("GIT binary patch"), std::string::npos) << diff;
  EXPECT_EQ(diff.find("debug.log"), std::string::npos) << diff;
  // The main checkout's index and files are its own.
  EXPECT_EQ(readFile(root_ / "a.txt"), "dirty\n");
  EXPECT_EQ(git(root_, {"status", "--porcelain"}).out, " M a.txt\n");

  // The diff applied to a clean checkout of the same commit reproduces every file.
  ASSERT_TRUE(worktrees.remove(tree));
  ASSERT_EQ(git(root_, {"checkout", "--", "a.txt"}).exit_code, 0);
  auto applied = applyDiff(root_, file);
  ASSERT_TRUE(applied) << applied.error().message;
  EXPECT_EQ(readFile(root_ / "a.txt"), "one\nTWO\nthree\n");
  EXPECT_FALSE(fs::exists(root_ / "gone.txt"));
  EXPECT_EQ(readFile(root_ / "data.bin"), binary_new);
  EXPECT_EQ(readFile(root_ / "new dir/ü 1.txt"), "u1\nu2\n");
  EXPECT_EQ(readFile(root_ / "added.png"), binary_added);
  EXPECT_EQ(readFile(root_ / "keep/same.txt"), "same\n");
  EXPECT_FALSE(fs::exists(root_ / "debug.log"));
}

TEST_F(WorktreeTest, AnUnchangedWorktreeCapturesAnEmptyDiffThatAppliesAsNothing) {
  commit({{"a.txt", "a\n"}});
  Worktrees worktrees = trees();
  const Worktree tree = worktrees.plan("c1", "r1", "look", root_);
  ASSERT_TRUE(worktrees.make(tree, "c1", "look"));
  auto summary = worktrees.capture(tree, dir_.path() / "artifacts");
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_TRUE(summary->files.empty());
  EXPECT_EQ(summary->insertions, 0);
  EXPECT_EQ(summary->deletions, 0);
  // sha256 of nothing.
  EXPECT_EQ(summary->artifact, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const fs::path file = dir_.path() / "artifacts" / (summary->artifact + ".diff");
  EXPECT_EQ(fs::file_size(file), 0U);
  EXPECT_TRUE(applyDiff(root_, file));
  EXPECT_EQ(git(root_, {"status", "--porcelain"}).out, "");
}

TEST_F(WorktreeTest, TheSameChangeIsOneArtifactWrittenOnce) {
  commit({{"a.txt", "a\n"}});
  Worktrees worktrees = trees();
  const fs::path artifacts = dir_.path() / "artifacts";
  auto edit = [&](const std::string& key, std::string_view content) {
    const Worktree tree = worktrees.plan("c1", "r1", key, root_);
    EXPECT_TRUE(worktrees.make(tree, "c1", key));
    write(tree.path / "a.txt", content);
    auto summary = worktrees.capture(tree, artifacts);
    EXPECT_TRUE(summary) << summary.error().message;
    EXPECT_TRUE(worktrees.remove(tree));
    return summary ? summary->artifact : std::string();
  };
  const std::string first = edit("x#0", "b\n");
  ASSERT_EQ(first.size(), 64U);
  const fs::path file = artifacts / (first + ".diff");
  // Marked as old: a rewrite would make it new again.
  // Whole seconds: what any file system keeps exactly.
  const fs::file_time_type old(std::chrono::duration_cast<std::chrono::seconds>(
      (fs::file_time_type::clock::now() - std::chrono::hours(24 * 365)).time_since_epoch()));
  fs::last_write_time(file, old);
  EXPECT_EQ(edit("x#1", "b\n"), first);
  EXPECT_EQ(fs::last_write_time(file), old);
  const std::string other = edit("x#2", "c\n");
  EXPECT_NE(other, first);
  // Two artifacts and nothing else (no temporary file left beside them).
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(artifacts)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  std::vector<std::string> expected = {first + ".diff", other + ".diff"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(names, expected);
}

TEST_F(WorktreeTest, AKilledAttemptsWorktreeAndBranchAreClearedByTheNextAttemptInItsChain) {
  commit({{"a.txt", "a\n"}});
  Worktree killed;
  {
    // The earlier run: its attempt made a worktree, half-edited it and was killed (nothing
    // removed, the Worktrees object gone with its process).
    Worktrees earlier = trees();
    killed = earlier.plan("c1", "r1", "edit", root_);
    ASSERT_TRUE(earlier.make(killed, "c1", "edit"));
    write(killed.path / "a.txt", "half\n");
    write(killed.path / "stray.txt", "left by the killed attempt\n");
    // Another node's and another chain's worktrees, which the clearing leaves alone.
    ASSERT_TRUE(earlier.make(earlier.plan("c1", "r1", "other", root_), "c1", "other"));
    ASSERT_TRUE(earlier.make(earlier.plan("c2", "r9", "edit", root_), "c2", "edit"));
  }
  ASSERT_EQ(worktreeList().size(), 4U);

  // The resume (run r2 of chain c1) runs the node again.
  Worktrees resumed = trees();
  const Worktree fresh = resumed.plan("c1", "r2", "edit", root_);
  ASSERT_TRUE(resumed.make(fresh, "c1", "edit"));
  EXPECT_FALSE(fs::exists(killed.path));
  EXPECT_EQ(readFile(fresh.path / "a.txt"), "a\n");
  EXPECT_FALSE(fs::exists(fresh.path / "stray.txt"));
  auto summary = resumed.capture(fresh, dir_.path() / "artifacts");
  ASSERT_TRUE(summary);
  EXPECT_TRUE(summary->files.empty());
  ASSERT_TRUE(resumed.remove(fresh));
  ASSERT_TRUE(resumed.removeStale("c1", "other"));
  ASSERT_TRUE(resumed.removeStale("c2", "edit"));
  EXPECT_EQ(worktreeList(), std::vector<std::string>{root_.string()});
  EXPECT_EQ(oeBranches(), "");
  EXPECT_EQ(git(root_, {"status", "--porcelain"}).out, "");
}

TEST_F(WorktreeTest, RemoveStaleClearsWhatAnAttemptKilledHalfwayThroughGitLeft) {
  commit({{"a.txt", "a\n"}});
  Worktrees worktrees = trees();
  const fs::path chain = chainFolder(worktrees.repo(), "c1");
  // Killed inside `git worktree add`: a folder git does not know, and its branch.
  write(chain / "r1" / "edit" / "a.txt", "partial\n");
  ASSERT_EQ(git(root_, {"branch", "oe/r1/edit"}).exit_code, 0);
  // Killed inside a removal: the folder gone, the branch and git's record of it left.
  const Worktree half = worktrees.plan("c1", "r2", "edit", root_);
  ASSERT_TRUE(worktrees.make(half, "c1", "edit"));
  fs::remove_all(half.path);
  ASSERT_NE(oeBranches().find("oe/r2/edit"), std::string::npos);

  ASSERT_TRUE(worktrees.removeStale("c1", "edit"));
  EXPECT_FALSE(fs::exists(chain / "r1" / "edit"));
  EXPECT_EQ(worktreeList(), std::vector<std::string>{root_.string()});
  EXPECT_EQ(oeBranches(), "");
  // The same run's next attempt can make its branch again.
  ASSERT_TRUE(worktrees.make(half, "c1", "edit"));
  ASSERT_TRUE(worktrees.remove(half));
  EXPECT_EQ(oeBranches(), "");
}

TEST_F(WorktreeTest, ADiffThatDoesNotApplyChangesNothingAndSaysWhyInGitsWords) {
  commit({{"a.txt", "one\n"}, {"b.txt", "two\n"}});
  Worktrees worktrees = trees();
  const Worktree tree = worktrees.plan("c1", "r1", "edit", root_);
  ASSERT_TRUE(worktrees.make(tree, "c1", "edit"));
  write(tree.path / "a.txt", "one\nmore\n");
  write(tree.path / "b.txt", "two\nmore\n");
  write(tree.path / "c.txt", "new\n");
  auto summary = worktrees.capture(tree, dir_.path() / "artifacts");
  ASSERT_TRUE(summary) << summary.error().message;
  ASSERT_TRUE(worktrees.remove(tree));
  // b.txt has moved on in the checkout: its hunk does not apply; a.txt's and c.txt's would.
  write(root_ / "b.txt", "changed\n");
  const fs::path file = dir_.path() / "artifacts" / (summary->artifact + ".diff");
  auto applied = applyDiff(root_, file);
  ASSERT_FALSE(applied);
  const std::string& message = applied.error().message;
  EXPECT_NE(message.find("does not apply to " + root_.string() + " (nothing was changed)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("b.txt: patch does not apply"), std::string::npos) << message;
  EXPECT_EQ(readFile(root_ / "a.txt"), "one\n");
  EXPECT_EQ(readFile(root_ / "b.txt"), "changed\n");
  EXPECT_FALSE(fs::exists(root_ / "c.txt"));
  // Not a diff at all.
  write(dir_.path() / "junk.diff", "diff --git a/a.txt b/a.txt\n@@ nonsense\n");
  EXPECT_FALSE(applyDiff(root_, dir_.path() / "junk.diff"));
  EXPECT_EQ(readFile(root_ / "a.txt"), "one\n");
}

TEST_F(WorktreeTest, ManyThreadsMakeCaptureAndRemoveWorktreesAtOnce) {
  commit({{"a.txt", "a\n"}});
  Worktrees worktrees = trees();
  constexpr int kThreads = 8;
  constexpr int kRounds = 3;
  const fs::path artifacts = dir_.path() / "artifacts";
  std::vector<std::string> errors(kThreads);
  std::vector<std::vector<DiffSummary>> captured(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        const std::string key = worktreeKey("edit", t);
        const std::string run = "r" + std::to_string(round);
        const Worktree tree = worktrees.plan("c1", run, key, root_);
        if (auto made = worktrees.make(tree, "c1", key); !made) {
          errors[t] += "make: " + made.error().message + "\n";
          continue;
        }
        write(tree.path / ("f" + std::to_string(t) + ".txt"), std::to_string(t * 100 + round));
        auto summary = worktrees.capture(tree, artifacts);
        if (!summary) {
          errors[t] += "capture: " + summary.error().message + "\n";
          continue;
        }
        captured[t].push_back(std::move(summary).value());
        // One worktree of three is left behind, as a failed attempt's is, for the next
        // round's make to clear.
        if ((t + round) % 3 != 0) {
          if (auto removed = worktrees.remove(tree); !removed) {
            errors[t] += "remove: " + removed.error().message + "\n";
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  std::set<std::string> artifact_ids;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    ASSERT_EQ(captured[t].size(), static_cast<size_t>(kRounds)) << "thread " << t;
    for (int round = 0; round < kRounds; ++round) {
      const DiffSummary& summary = captured[t][round];
      EXPECT_EQ(summary.files, std::vector<std::string>{"f" + std::to_string(t) + ".txt"});
      EXPECT_EQ(summary.insertions, 1);
      const std::string diff = readFile(artifacts / (summary.artifact + ".diff"));
      EXPECT_NE(diff.find("+" + std::to_string(t * 100 + round)), std::string::npos) << diff;
      artifact_ids.insert(summary.artifact);
    }
  }
  EXPECT_EQ(artifact_ids.size(), static_cast<size_t>(kThreads * kRounds));
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(worktrees.removeStale("c1", worktreeKey("edit", t)));
  }
  EXPECT_EQ(worktreeList(), std::vector<std::string>{root_.string()});
  EXPECT_EQ(oeBranches(), "");
}

}  // namespace
}  // namespace oe::workspace

// A git worktree per node attempt (`workspace: worktree`, docs/workspaces.md): made from the
// repository's HEAD on a branch of its own, its changes captured as a content-addressed diff,
// removed after, and the leftovers of a killed attempt cleared before the node runs again.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"

namespace oe::workspace {

// The repository a worktree is made from.
struct Repo {
  std::filesystem::path root;        // the main checkout's top level
  std::filesystem::path common_dir;  // its .git folder (shared by every worktree)
};

// One attempt's worktree.
struct Worktree {
  std::filesystem::path path;     // the worktree's top level
  std::string branch;             // oe/<run-id>/<node>[#item]
  std::filesystem::path workdir;  // the worktree's copy of the experience folder
};

// What an attempt changed: the diff's artifact and its summary.
struct DiffSummary {
  std::string artifact;  // sha256 of the diff, its file .openexpertise/artifacts/<sha256>.diff
  std::vector<std::string> files;
  int64_t insertions = 0;
  int64_t deletions = 0;
  // {"artifact":..., "files":[...], "insertions":N, "deletions":M}
  [[nodiscard]] Json toJson() const;
};

// "<node>" or "<node>#<item>" (item < 0: not a for_each item): names the worktree's folder and
// ends its branch name.
[[nodiscard]] std::string worktreeKey(std::string_view node_id, int64_t item);
// "oe/<run-id>/<key>"; `#` is allowed in a ref name (git check-ref-format).
[[nodiscard]] std::string branchName(std::string_view run_id, std::string_view key);
// The folder of the worktrees of a chain of runs: <common_dir>/oe-worktrees/<chain-id>. Inside
// .git, so the main checkout's `git status` never shows them, whether or not .openexpertise is
// ignored, and they stay on the repository's file system (a worktree add is cheap there).
[[nodiscard]] std::filesystem::path chainFolder(const Repo& repo, std::string_view chain_id);

// git run for the worktrees of one repository. Thread-safe: the commands that touch the shared
// repository (worktree add/remove, branch delete) are serialised, since git takes a lock on
// refs and .git/worktrees that a concurrent command would find held; a capture runs in its own
// worktree and its own index, in parallel with the others.
class Worktrees {
 public:
  // `git` on PATH; the repository that contains `dir` (an error when none does, or git is
  // missing, or it has no commit yet).
  static Result<Repo> findRepo(const std::filesystem::path& dir);

  explicit Worktrees(Repo repo, std::chrono::milliseconds deadline = std::chrono::seconds(120));

  [[nodiscard]] const Repo& repo() const { return repo_; }

  // Removes what a killed or failed attempt of `key` left in this chain (any run's): each
  // worktree folder <chain>/<run>/<key>, its branch, and git's record of it (prune).
  Result<void> removeStale(std::string_view chain_id, std::string_view key);
  // Where the worktree of `key` goes in this run, without git: <chain>/<run-id>/<key> on branch
  // oe/<run-id>/<key>; its workdir is the worktree's copy of `experience_dir` when the
  // repository holds it, else the worktree's top level.
  [[nodiscard]] Worktree plan(std::string_view chain_id, std::string_view run_id,
                              std::string_view key, const std::filesystem::path& experience_dir)
      const;
  // Makes the planned worktree fresh from HEAD, after removeStale(chain_id, key).
  Result<void> make(const Worktree& tree, std::string_view chain_id, std::string_view key);
  // Every change in the worktree against HEAD (tracked and untracked, binary-safe) written to
  // `artifacts_dir`/<sha256>.diff (not rewritten when it is there already).
  Result<DiffSummary> capture(const Worktree& tree, const std::filesystem::path& artifacts_dir);
  // The worktree and its branch gone.
  Result<void> remove(const Worktree& tree);

 private:
  Result<std::string> git(const std::vector<std::string>& args,
                          const std::filesystem::path& cwd) const;
  Result<void> removeLocked(const std::filesystem::path& path, const std::string& branch);

  Repo repo_;
  std::string git_;
  std::chrono::milliseconds deadline_;
  std::mutex mutex_;
};

// Applies the diff file to the working tree of `repo_root` (`git apply --check`, then `git
// apply`): all of it or, when any hunk does not apply, nothing, with git's words in the error.
Result<void> applyDiff(const std::filesystem::path& repo_root,
                       const std::filesystem::path& diff_file);

}  // namespace oe::workspace

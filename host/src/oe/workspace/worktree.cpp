// Worktrees per node attempt (see worktree.hpp): git run through vcs, one command at a time for
// what touches the shared repository.
#include "oe/workspace/worktree.hpp"

#include <unistd.h>

#include <fstream>
#include <system_error>

#include "oe/cache/cache_store.hpp"
#include "oe/vcs/git.hpp"

namespace oe::workspace {

namespace fs = std::filesystem;

Json DiffSummary::toJson() const {
  return Json{{"artifact", artifact},
              {"files", files},
              {"insertions", insertions},
              {"deletions", deletions}};
}

std::string worktreeKey(std::string_view node_id, int64_t item) {
  std::string key(node_id);
  if (item >= 0) {
    key += "#" + std::to_string(item);
  }
  return key;
}

std::string branchName(std::string_view run_id, std::string_view key) {
  return "oe/" + std::string(run_id) + "/" + std::string(key);
}

fs::path chainFolder(const Repo& repo, std::string_view chain_id) {
  return repo.common_dir / "oe-worktrees" / std::string(chain_id);
}

namespace {

constexpr std::chrono::milliseconds kFindDeadline{30000};

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

}  // namespace

Result<Repo> Worktrees::findRepo(const fs::path& dir) {
  auto git = vcs::findGit();
  if (!git) {
    return makeError("workspace: worktree needs git, and `git` is not on PATH; install git");
  }
  auto top = vcs::runGit(*git, {"rev-parse", "--show-toplevel", "--git-common-dir"}, dir,
                         kFindDeadline);
  if (!top.ok) {
    // git's own words (its stderr follows the command line): why it found no repository.
    const size_t tail = top.error.find(":\n");
    const std::string_view why = tail == std::string::npos
                                     ? std::string_view(top.error)
                                     : std::string_view(top.error).substr(tail + 2);
    return makeError(dir.string() + " is not inside a git repository (workspace: worktree "
                     "makes a worktree of the repository that holds the experience, or of "
                     "workspace.repo): " + vcs::firstLineOf(why));
  }
  Repo repo;
  const std::string out = top.out;
  const size_t newline = out.find('\n');
  repo.root = fs::path(out.substr(0, newline)).lexically_normal();
  fs::path common = trimmed(newline == std::string::npos ? "" : out.substr(newline + 1));
  repo.common_dir = (common.is_absolute() ? common : fs::path(dir) / common).lexically_normal();
  std::error_code ec;
  repo.common_dir = fs::weakly_canonical(repo.common_dir, ec);
  auto head = vcs::runGit(*git, {"rev-parse", "--verify", "--quiet", "HEAD^{commit}"}, repo.root,
                          kFindDeadline);
  if (!head.ok) {
    return makeError("the git repository " + repo.root.string() +
                     " has no commit yet: a worktree is made from HEAD; commit first");
  }
  return repo;
}

Worktrees::Worktrees(Repo repo, std::chrono::milliseconds deadline)
    : repo_(std::move(repo)), git_(vcs::findGit().value_or("git")), deadline_(deadline) {}

Result<std::string> Worktrees::git(const std::vector<std::string>& args,
                                   const fs::path& cwd) const {
  auto outcome = vcs::runGit(git_, args, cwd, deadline_);
  if (!outcome.ok) {
    return makeError(outcome.error);
  }
  return std::move(outcome.out);
}

Result<void> Worktrees::removeLocked(const fs::path& path, const std::string& branch) {
  std::error_code ec;
  if (fs::exists(path, ec)) {
    // --force twice: also a worktree git holds locked, or with changes not committed.
    (void)git({"worktree", "remove", "--force", "--force", path.string()}, repo_.root);
    fs::remove_all(path, ec);
    if (ec) {
      return makeError("cannot remove the worktree " + path.string() + ": " + ec.message());
    }
  }
  (void)git({"worktree", "prune"}, repo_.root);
  if (git({"rev-parse", "--verify", "--quiet", "refs/heads/" + branch}, repo_.root)) {
    auto deleted = git({"branch", "-D", branch}, repo_.root);
    if (!deleted) {
      return makeError("cannot delete the branch " + branch + ": " + deleted.error().message);
    }
  }
  return {};
}

Result<void> Worktrees::removeStale(std::string_view chain_id, std::string_view key) {
  std::lock_guard lock(mutex_);
  const fs::path chain = chainFolder(repo_, chain_id);
  std::error_code ec;
  if (!fs::is_directory(chain, ec)) {
    return {};
  }
  for (const auto& run : fs::directory_iterator(chain, ec)) {
    const fs::path left = run.path() / std::string(key);
    const std::string branch = branchName(run.path().filename().string(), key);
    // An attempt killed inside a removal leaves the branch without its folder: the same run's
    // next attempt could not make the branch again, so it goes too.
    if (!fs::exists(left, ec) &&
        !git({"rev-parse", "--verify", "--quiet", "refs/heads/" + branch}, repo_.root)) {
      continue;
    }
    auto removed = removeLocked(left, branch);
    if (!removed) {
      return removed;
    }
  }
  return {};
}

Worktree Worktrees::plan(std::string_view chain_id, std::string_view run_id,
                        std::string_view key, const fs::path& experience_dir) const {
  Worktree tree;
  tree.path = chainFolder(repo_, chain_id) / std::string(run_id) / std::string(key);
  tree.branch = branchName(run_id, key);
  std::error_code ec;
  const fs::path canonical_dir = fs::weakly_canonical(experience_dir, ec);
  const fs::path root = fs::weakly_canonical(repo_.root, ec);
  const fs::path relative = canonical_dir.lexically_relative(root);
  // The experience at the top level ("."): the top level itself, not "<path>/." normalised to
  // "<path>/", which would name the same folder as a different path.
  const bool inside = !relative.empty() && *relative.begin() != ".." && relative != ".";
  tree.workdir = inside ? (tree.path / relative).lexically_normal() : tree.path;
  return tree;
}

Result<void> Worktrees::make(const Worktree& tree, std::string_view chain_id,
                             std::string_view key) {
  if (auto stale = removeStale(chain_id, key); !stale) {
    return stale;
  }
  std::error_code ec;
  {
    std::lock_guard lock(mutex_);
    fs::create_directories(tree.path.parent_path(), ec);
    if (ec) {
      return makeError("cannot make " + tree.path.parent_path().string() + ": " + ec.message());
    }
    auto added = git({"worktree", "add", "--quiet", "-b", tree.branch, tree.path.string(), "HEAD"},
                     repo_.root);
    if (!added) {
      return makeError("cannot make the worktree " + tree.path.string() + ": " +
                       added.error().message);
    }
  }
  fs::create_directories(tree.workdir, ec);  // an experience folder HEAD does not hold yet
  return {};
}

Result<DiffSummary> Worktrees::capture(const Worktree& tree, const fs::path& artifacts_dir) {
  // The worktree's own index: the main checkout's is not touched.
  if (auto added = git({"add", "-A", "."}, tree.path); !added) {
    return makeError("cannot capture the changes in " + tree.path.string() + ": " +
                     added.error().message);
  }
  auto diff = git({"diff", "--cached", "--binary", "--no-renames", "--no-color", "HEAD"},
                  tree.path);
  if (!diff) {
    return diff.error();
  }
  auto numstat = git({"diff", "--cached", "--numstat", "--no-renames", "-z", "HEAD"}, tree.path);
  if (!numstat) {
    return numstat.error();
  }
  DiffSummary summary;
  summary.artifact = cache::sha256Hex(*diff);
  // -z: "<ins>\t<del>\t<path>\0" per file; "-" counts for a binary file.
  const std::string& text = *numstat;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\0', at);
    const std::string entry = text.substr(at, end == std::string::npos ? end : end - at);
    at = end == std::string::npos ? text.size() : end + 1;
    const size_t tab1 = entry.find('\t');
    const size_t tab2 = tab1 == std::string::npos ? tab1 : entry.find('\t', tab1 + 1);
    if (tab2 == std::string::npos) {
      continue;
    }
    const std::string ins = entry.substr(0, tab1);
    const std::string del = entry.substr(tab1 + 1, tab2 - tab1 - 1);
    summary.insertions += ins == "-" ? 0 : std::stoll(ins);
    summary.deletions += del == "-" ? 0 : std::stoll(del);
    summary.files.push_back(entry.substr(tab2 + 1));
  }
  std::error_code ec;
  fs::create_directories(artifacts_dir, ec);
  const fs::path file = artifacts_dir / (summary.artifact + ".diff");
  if (!fs::exists(file, ec)) {
    // Written beside and renamed: a reader never sees half a diff.
    const fs::path temp = artifacts_dir / (summary.artifact + ".diff.tmp" +
                                           std::to_string(::getpid()) + "-" + tree.branch.substr(
                                               tree.branch.rfind('/') + 1));
    {
      std::ofstream out(temp, std::ios::binary | std::ios::trunc);
      out.write(diff->data(), static_cast<std::streamsize>(diff->size()));
      if (!out) {
        return makeError("cannot write " + temp.string());
      }
    }
    fs::rename(temp, file, ec);
    if (ec) {
      return makeError("cannot write " + file.string() + ": " + ec.message());
    }
  }
  return summary;
}

Result<void> Worktrees::remove(const Worktree& tree) {
  std::lock_guard lock(mutex_);
  return removeLocked(tree.path, tree.branch);
}

Result<void> applyDiff(const fs::path& repo_root, const fs::path& diff_file) {
  auto git = vcs::findGit();
  if (!git) {
    return makeError("`git` is not on PATH; install git");
  }
  std::error_code ec;
  if (fs::file_size(diff_file, ec) == 0 && !ec) {
    return {};  // the attempt changed nothing
  }
  const std::string file = fs::absolute(diff_file).string();
  auto check = vcs::runGit(*git, {"apply", "--check", "--binary", file}, repo_root,
                           std::chrono::seconds(120));
  if (!check.ok) {
    return makeError("the diff " + file + " does not apply to " + repo_root.string() +
                     " (nothing was changed): " + check.error);
  }
  auto applied = vcs::runGit(*git, {"apply", "--binary", file}, repo_root,
                             std::chrono::seconds(120));
  if (!applied.ok) {
    return makeError("git apply failed on " + repo_root.string() + ": " + applied.error);
  }
  return {};
}

}  // namespace oe::workspace

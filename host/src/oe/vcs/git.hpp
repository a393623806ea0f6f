// `git` run as a subprocess with a deadline, for `oe install` (clone) and `oe submit` (remote,
// tag, branch), and whatever else needs a repository: oe speaks no git protocol itself, so the user's git, its config and its
// credential helpers are the ones used.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace oe::vcs {

struct GitOutcome {
  bool ok = false;    // exited 0 within the deadline
  std::string out;    // stdout
  std::string error;  // when !ok: what went wrong, git's own stderr included
};

// `git` on PATH, or nullopt.
std::optional<std::string> findGit();

// Runs `<git> <args...>` in `cwd` (empty: ours) in its own process group, with
// GIT_TERMINAL_PROMPT=0 (a clone that would ask for a password fails instead of waiting) and
// stdin closed; stopped, group and all, once `deadline` passes.
GitOutcome runGit(const std::string& git, const std::vector<std::string>& args,
                  const std::filesystem::path& cwd, std::chrono::milliseconds deadline);

// The first line of `text`, without surrounding blanks.
std::string firstLineOf(std::string_view text);

}  // namespace oe::vcs

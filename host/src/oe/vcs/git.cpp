// git as a supervised subprocess (see git.hpp).
#include "oe/vcs/git.hpp"

#include <sys/wait.h>

#include "proc_kit/supervisor.hpp"

namespace oe::vcs {

std::optional<std::string> findGit() { return prockit::findOnPath("git"); }

std::string firstLineOf(std::string_view text) {
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) {
    return "";
  }
  text.remove_prefix(start);
  text = text.substr(0, text.find_first_of("\r\n"));
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return std::string(text);
}

GitOutcome runGit(const std::string& git, const std::vector<std::string>& args,
                  const std::filesystem::path& cwd, std::chrono::milliseconds deadline) {
  GitOutcome outcome;
  prockit::SpawnRequest request;
  request.path = git;
  request.argv = {"git"};
  request.argv.insert(request.argv.end(), args.begin(), args.end());
  request.cwd = cwd.string();
  // No prompt for credentials, no pager, no editor: nobody is there to answer.
  request.env = prockit::environmentWith(
      {"GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "GIT_EDITOR=true", "LC_ALL=C"});
  prockit::SuperviseOptions options;
  options.timeout = deadline;
  options.kill_grace = std::chrono::milliseconds(1000);
  options.max_stdout = size_t{16} << 20U;
  options.stderr_tail = size_t{4} << 10U;
  options.clean_group_on_exit = true;
  prockit::CancelToken token(nullptr);
  std::string command = "git";
  for (const std::string& arg : args) {
    command += " " + arg;
  }
  auto result = prockit::supervise(std::move(request), options, token);
  if (!result) {
    outcome.error = "cannot start " + git + ": " + result.failure().message;
    return outcome;
  }
  outcome.out = std::move(result->stdout_text);
  switch (result->ending) {
    case prockit::Ending::kExited:
      if (WIFEXITED(result->wait_status) && WEXITSTATUS(result->wait_status) == 0) {
        outcome.ok = true;
        return outcome;
      }
      outcome.error =
          "`" + command + "` ended with " + prockit::describeWaitStatus(result->wait_status);
      if (!result->stderr_tail.empty()) {
        outcome.error += ":\n" + result->stderr_tail;
      }
      return outcome;
    case prockit::Ending::kTimedOut:
      outcome.error = "`" + command + "` did not finish within " +
                      std::to_string(deadline.count()) + " ms (stopped; --timeout-ms allows more)";
      return outcome;
    case prockit::Ending::kCancelled:
    case prockit::Ending::kStalled:
    case prockit::Ending::kOverflow:
    case prockit::Ending::kStopped:
    default:
      outcome.error = "`" + command + "` printed too much or stopped early";
      return outcome;
  }
}

}  // namespace oe::vcs

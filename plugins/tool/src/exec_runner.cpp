// Executable tools: see exec_runner.hpp. The process work (pipes, the poll loop, the kill
// ladder) is the shared supervisor's (proc_kit); this file maps its outcome to the tool contract.
#include "exec_runner.hpp"

#include <sys/wait.h>

#include <utility>

#include "proc_kit/supervisor.hpp"
#include "subprocess.hpp"

namespace oe::tool {
namespace {

constexpr size_t kExecStderrKeep = 2048;

std::string orNoStderr(const std::string& tail) {
  return tail.empty() ? std::string("(nothing on stderr)") : tail;
}

}  // namespace

Expected<ExecOutcome> runExecutable(const ToolIdentity& who, const std::string& cwd,
                                    std::string_view input, CancelToken& token,
                                    const std::optional<SandboxSpec>& sandbox) {
  if (token.requested()) {
    return fail(OE_CANCELLED, "cancelled");
  }
  SpawnRequest request;
  request.path = who.path;
  request.argv = {who.path};
  request.cwd = cwd;
  request.sandbox = sandbox;
  prockit::SuperviseOptions options;
  options.input = input;
  options.stderr_tail = kExecStderrKeep;
  auto run = prockit::supervise(std::move(request), options, token);
  if (!run) {
    return fail(run.failure().status, "Tool \"" + who.id + "\" (" + who.impl +
                                          ") could not be started: " + run.failure().message);
  }
  const int status = run->wait_status;
  const std::string& tail = run->stderr_tail;

  if (token.requested()) {
    return fail(OE_CANCELLED, "cancelled");
  }
  if (run->ending == prockit::Ending::kOverflow) {
    return fail(OE_RESOURCE_EXHAUSTED, "Tool \"" + who.id + "\" (" + who.impl +
                                           ") printed more than 256 MiB on stdout; write large "
                                           "data to a file and return its path instead");
  }
  if (WIFSIGNALED(status)) {
    return fail(OE_UNKNOWN, "Tool \"" + who.id + "\" (" + who.impl + ") was killed by signal " +
                                signalName(WTERMSIG(status)) + ": " + orNoStderr(tail));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return fail(OE_UNKNOWN, "Tool \"" + who.id + "\" (" + who.impl + ") exited with code " +
                                std::to_string(WEXITSTATUS(status)) + ": " + orNoStderr(tail));
  }
  auto parsed = parseToolOutput(run->stdout_text, who, Flavour::kExecutable);
  if (!parsed) {
    return std::move(parsed).failure();
  }
  auto response = toResponse(std::move(*parsed), who, Flavour::kExecutable);
  if (!response) {
    return std::move(response).failure();
  }
  return ExecOutcome{std::move(response).value(), tail};
}

}  // namespace oe::tool

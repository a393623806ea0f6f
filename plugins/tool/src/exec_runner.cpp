// Executable tools: see exec_runner.hpp. One poll loop feeds stdin and drains stdout/stderr so
// neither side can block the other, and watches a pidfd so a grandchild that keeps the pipes
// open (a backgrounded `sleep`) cannot keep the call waiting after the tool itself exited.
#include "exec_runner.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>

#include "subprocess.hpp"

namespace oe::tool {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kExecStderrKeep = 2048;
constexpr size_t kMaxStdout = size_t{256} << 20U;
constexpr std::chrono::seconds kKillGrace{2};         // SIGTERM -> SIGKILL

enum class Drain { kOpen, kEof };

// Reads what is available now from a non-blocking fd into `sink`.
template <class Sink>
Drain drain(int fd, Sink&& sink) {
  std::array<char, 65536> buffer{};
  while (true) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n > 0) {
      sink(std::string_view(buffer.data(), static_cast<size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return Drain::kOpen;
    }
    return Drain::kEof;  // EOF, or an error that ends the stream just the same
  }
}

std::string orNoStderr(const std::string& tail) {
  return tail.empty() ? std::string("(nothing on stderr)") : tail;
}

}  // namespace

Expected<ExecOutcome> runExecutable(const ToolIdentity& who, const std::string& cwd,
                                    std::string_view input, CancelToken& token) {
  if (token.requested()) {
    return fail(OE_CANCELLED, "cancelled");
  }
  auto stdin_pipe = makePipe();
  auto stdout_pipe = makePipe();
  auto stderr_pipe = makePipe();
  for (auto* pipe : {&stdin_pipe, &stdout_pipe, &stderr_pipe}) {
    if (!pipe->ok()) {
      return fail(pipe->failure().status,
                  "Tool \"" + who.id + "\" (" + who.impl + "): " + pipe->failure().message);
    }
  }
  SpawnRequest request;
  request.path = who.path;
  request.argv = {who.path};
  request.fds = {
      {stdin_pipe->read.get(), 0}, {stdout_pipe->write.get(), 1}, {stderr_pipe->write.get(), 2}};
  request.cwd = cwd;
  auto child = spawnChild(request);
  if (!child) {
    return fail(child.failure().status, "Tool \"" + who.id + "\" (" + who.impl +
                                            ") could not be started: " + child.failure().message);
  }
  stdin_pipe->read.reset();
  stdout_pipe->write.reset();
  stderr_pipe->write.reset();
  UniqueFd to_child = std::move(stdin_pipe->write);
  UniqueFd from_stdout = std::move(stdout_pipe->read);
  UniqueFd from_stderr = std::move(stderr_pipe->read);
  setNonBlocking(to_child.get());
  setNonBlocking(from_stdout.get());
  setNonBlocking(from_stderr.get());

  const pid_t pid = child->pid;
  token.setWaker([pid] { ::kill(-pid, SIGTERM); });
  SigpipeBlock sigpipe_guard;

  std::string stdout_text;
  TailBuffer stderr_tail(kExecStderrKeep);
  bool overflow = false;
  auto to_stdout = [&](std::string_view bytes) {
    if (stdout_text.size() + bytes.size() > kMaxStdout) {
      overflow = true;
      return;
    }
    stdout_text.append(bytes);
  };
  auto to_stderr = [&](std::string_view bytes) { stderr_tail.append(bytes); };

  size_t written = 0;
  if (input.empty()) {
    to_child.reset();
  }
  bool terminated = false;
  bool killed = false;
  Clock::time_point kill_at{};
  while (true) {
    const auto now = Clock::now();
    if (!terminated && (overflow || token.requested())) {
      ::kill(-pid, SIGTERM);
      terminated = true;
      kill_at = now + kKillGrace;
    }
    if (terminated && !killed && now >= kill_at) {
      ::kill(-pid, SIGKILL);
      killed = true;
    }
    if (!child->pidfd.valid() && !from_stdout.valid() && !from_stderr.valid()) {
      break;  // no pidfd: EOF on both outputs is the best sign of the end we have
    }
    std::array<pollfd, 4> fds{};
    int in_index = -1;
    int out_index = -1;
    int err_index = -1;
    int pid_index = -1;
    nfds_t count = 0;
    auto add = [&](const UniqueFd& fd, short events, int& index) {
      if (fd.valid()) {
        index = static_cast<int>(count);
        fds[count++] = pollfd{fd.get(), events, 0};
      }
    };
    add(to_child, POLLOUT, in_index);
    add(from_stdout, POLLIN, out_index);
    add(from_stderr, POLLIN, err_index);
    add(child->pidfd, POLLIN, pid_index);
    auto timeout = kPollSlice;
    if (terminated && !killed) {
      timeout = std::min(timeout, std::chrono::duration_cast<std::chrono::milliseconds>(
                                      kill_at - now + std::chrono::milliseconds(1)));
    }
    const int ready = ::poll(fds.data(), count, static_cast<int>(timeout.count()));
    if (ready < 0 && errno != EINTR) {
      ::kill(-pid, SIGKILL);
      killed = true;
      break;
    }
    if (ready <= 0) {
      continue;
    }
    if (in_index >= 0 && fds[in_index].revents != 0) {
      const ssize_t n = ::write(to_child.get(), input.data() + written, input.size() - written);
      if (n > 0) {
        written += static_cast<size_t>(n);
        if (written == input.size()) {
          to_child.reset();  // EOF tells the tool its input is complete
        }
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        to_child.reset();  // EPIPE: the tool stopped reading; its exit status will say why
      }
    }
    if (out_index >= 0 && fds[out_index].revents != 0 &&
        drain(from_stdout.get(), to_stdout) == Drain::kEof) {
      from_stdout.reset();
    }
    if (err_index >= 0 && fds[err_index].revents != 0 &&
        drain(from_stderr.get(), to_stderr) == Drain::kEof) {
      from_stderr.reset();
    }
    if (pid_index >= 0 && (fds[pid_index].revents & POLLIN) != 0) {
      // The tool exited: everything it wrote is already in the pipes. Take it and stop; a
      // grandchild that still holds the pipes does not get to extend the call.
      if (from_stdout.valid()) {
        drain(from_stdout.get(), to_stdout);
      }
      if (from_stderr.valid()) {
        drain(from_stderr.get(), to_stderr);
      }
      break;
    }
  }
  to_child.reset();
  token.clearWaker();  // before reaping: the pid must not be signalled once it can be reused
  const int status = reapChild(pid);
  const std::string tail = stderr_tail.text();

  if (token.requested()) {
    return fail(OE_CANCELLED, "cancelled");
  }
  if (overflow) {
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
  auto parsed = parseToolOutput(stdout_text, who, Flavour::kExecutable);
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

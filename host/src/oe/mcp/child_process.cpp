// A child `oe` for a long tool: events in, cancellation out (docs/mcp.md).
#include "oe/mcp/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>

#include "proc_kit/subprocess.hpp"

namespace oe::mcp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kStderrTail = 8192;
constexpr std::chrono::milliseconds kPoll{100};

// Reads what is there without blocking; false at EOF or on an error (the fd is then closed).
bool drain(prockit::UniqueFd& fd, std::string& into) {
  char chunk[16384];
  while (true) {
    const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
    if (n > 0) {
      into.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return true;
    }
    fd.reset();
    return false;
  }
}

}  // namespace

bool exitedOk(int wait_status) { return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }

Result<ChildResult> runChild(const ChildOptions& options, prockit::CancelToken& token) {
  auto out_pipe = prockit::makePipe();
  auto err_pipe = prockit::makePipe();
  auto events_pipe = prockit::makePipe();
  for (auto* pipe : {&out_pipe, &err_pipe, &events_pipe}) {
    if (!pipe->ok()) {
      return makeError("cannot create a pipe: " + pipe->failure().message);
    }
  }
  prockit::UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  prockit::SpawnRequest request;
  request.path = options.argv.at(0);
  request.argv = options.argv;
  request.cwd = options.cwd.string();
  request.fds = {{null_fd.get(), 0}, {out_pipe->write.get(), 1}, {err_pipe->write.get(), 2}};
  if (options.on_event) {
    request.fds.push_back({events_pipe->write.get(), kChildEventsFd});
  }
  auto child = prockit::spawnChild(request);
  if (!child) {
    return makeError("cannot start " + request.path + ": " + child.failure().message);
  }
  null_fd.reset();
  out_pipe->write.reset();
  err_pipe->write.reset();
  events_pipe->write.reset();
  std::array<prockit::UniqueFd, 3> fds = {std::move(out_pipe->read), std::move(err_pipe->read),
                                          std::move(events_pipe->read)};
  if (!options.on_event) {
    fds[2].reset();
  }
  for (auto& fd : fds) {
    if (fd.valid()) {
      prockit::setNonBlocking(fd.get());
    }
  }
  const pid_t pid = child->pid;
  // The engine of the child stops scheduling, cancels its nodes and records an interrupted run.
  token.setWaker([pid] { ::kill(-pid, SIGINT); });

  ChildResult result;
  prockit::TailBuffer tail(kStderrTail);
  std::string err_chunk;
  std::string events;
  bool exited = false;
  bool killed = false;
  Clock::time_point kill_at{};
  const auto pass_events = [&] {
    size_t start = 0;
    for (size_t nl = events.find('\n'); nl != std::string::npos; nl = events.find('\n', start)) {
      Json event = Json::parse(std::string_view(events).substr(start, nl - start), nullptr, false);
      if (!event.is_discarded()) {
        options.on_event(event);
      }
      start = nl + 1;
    }
    events.erase(0, start);
  };
  while (true) {
    if (token.requested() && !result.cancelled) {
      result.cancelled = true;
      kill_at = Clock::now() + options.interrupt_grace;
    }
    if (result.cancelled && !killed && Clock::now() >= kill_at) {
      ::kill(-pid, SIGKILL);  // it did not stop on SIGINT: no run of ours is left running
      killed = true;
    }
    std::array<pollfd, 4> polled{};
    nfds_t count = 0;
    std::array<int, 4> which{};
    for (int i = 0; i < 3; ++i) {
      if (fds[i].valid()) {
        which[count] = i;
        polled[count++] = pollfd{fds[i].get(), POLLIN, 0};
      }
    }
    if (child->pidfd.valid() && !exited) {
      which[count] = 3;
      polled[count++] = pollfd{child->pidfd.get(), POLLIN, 0};
    }
    if (count == 0) {
      break;
    }
    const int ready = ::poll(polled.data(), count, static_cast<int>(kPoll.count()));
    if (ready < 0 && errno != EINTR) {
      break;
    }
    for (nfds_t i = 0; i < count; ++i) {
      if (polled[i].revents == 0) {
        continue;
      }
      switch (which[i]) {
        case 0:
          drain(fds[0], result.stdout_text);
          break;
        case 1:
          err_chunk.clear();
          drain(fds[1], err_chunk);
          tail.append(err_chunk);
          // The client logs our stderr: the child's warnings and plugin lines stay visible.
          std::fwrite(err_chunk.data(), 1, err_chunk.size(), stderr);
          break;
        case 2:
          drain(fds[2], events);
          pass_events();
          break;
        default:
          exited = true;
          break;
      }
    }
    if (exited) {
      // All it wrote is in the pipes now; a grandchild still holding them must not keep us.
      for (auto& fd : fds) {
        if (fd.valid()) {
          std::string rest;
          drain(fd, rest);
          if (&fd == &fds[0]) {
            result.stdout_text += rest;
          } else if (&fd == &fds[1]) {
            tail.append(rest);
            std::fwrite(rest.data(), 1, rest.size(), stderr);
          } else {
            events += rest;
            pass_events();
          }
          fd.reset();
        }
      }
      break;
    }
  }
  token.clearWaker();
  result.wait_status = prockit::reapChild(pid);
  // Whatever the run left in its group (a tool's background process) goes with it.
  if (prockit::groupHasLiveMembers(pid)) {
    ::kill(-pid, SIGKILL);
  }
  result.stderr_tail = tail.text();
  return result;
}

}  // namespace oe::mcp

// Supervised runs: see supervisor.hpp. One poll loop feeds stdin, drains stdout/stderr and
// watches a pidfd, so a grandchild that keeps the pipes open (a backgrounded `sleep`) cannot
// keep the call waiting after the program itself exited. The leader is reaped only after the
// kill ladder is done: until then its zombie keeps the group id from being reused, so
// kill(-pgid) never reaches a stranger.
#include "proc_kit/supervisor.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>

namespace oe::prockit {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

milliseconds until(Clock::time_point now, Clock::time_point when) {
  return std::max(milliseconds(1),
                  std::chrono::duration_cast<milliseconds>(when - now) + milliseconds(1));
}

}  // namespace

Expected<Supervised> supervise(SpawnRequest request, const SuperviseOptions& options,
                               CancelToken& token) {
  auto piped = spawnPiped(std::move(request));
  if (!piped) {
    return std::move(piped).failure();
  }
  const Clock::time_point start = Clock::now();
  const Child& child = piped->child;
  UniqueFd to_child = std::move(piped->to_stdin);
  UniqueFd from_stdout = std::move(piped->from_stdout);
  UniqueFd from_stderr = std::move(piped->from_stderr);

  const pid_t pid = child.pid;
  token.setWaker([pid] { ::kill(-pid, SIGTERM); });
  SigpipeBlock sigpipe_guard;

  Supervised out;
  out.pid = pid;
  TailBuffer stderr_tail(options.stderr_tail);
  Clock::time_point last_output = start;
  bool overflow = false;
  bool stop_asked = false;
  auto to_stdout = [&](std::string_view bytes) {
    last_output = Clock::now();
    if (overflow || out.stdout_text.size() + bytes.size() > options.max_stdout) {
      overflow = true;
      return;
    }
    out.stdout_text.append(bytes);
    if (options.on_stdout && !options.on_stdout(bytes)) {
      stop_asked = true;
    }
  };
  auto to_stderr = [&](std::string_view bytes) {
    last_output = Clock::now();
    stderr_tail.append(bytes);
    if (out.stderr_head.size() < options.stderr_head) {
      out.stderr_head.append(bytes.substr(0, options.stderr_head - out.stderr_head.size()));
    }
  };

  size_t written = 0;
  if (options.input.empty()) {
    to_child.reset();  // EOF at once: a program reading stdin never waits on us
  }
  bool exited = false;
  bool terminated = false;
  bool killed = false;
  Clock::time_point kill_at{};
  Clock::time_point give_up_at{};
  while (true) {
    const auto now = Clock::now();
    if (!terminated) {
      std::optional<Ending> why;
      if (token.requested()) {
        why = Ending::kCancelled;
      } else if (overflow) {
        why = Ending::kOverflow;
      } else if (stop_asked) {
        why = Ending::kStopped;
      } else if (exited) {
        if (!options.clean_group_on_exit || !groupHasLiveMembers(pid)) {
          break;
        }
        why = Ending::kExited;  // what the program left behind goes with it
      } else if (options.timeout && now - start >= *options.timeout) {
        why = Ending::kTimedOut;
      } else if (options.stall_timeout && now - last_output >= *options.stall_timeout) {
        why = Ending::kStalled;
      }
      if (why) {
        out.ending = *why;
        ::kill(-pid, SIGTERM);
        terminated = true;
        kill_at = now + options.kill_grace;
      }
    }
    if (terminated) {
      if (exited && !groupHasLiveMembers(pid)) {
        break;
      }
      if (!killed && now >= kill_at) {
        ::kill(-pid, SIGKILL);
        killed = true;
        give_up_at = now + kAfterKill;
      }
      if (killed && exited && now >= give_up_at) {
        break;
      }
    }
    if (!child.pidfd.valid() && !from_stdout.valid() && !from_stderr.valid()) {
      break;  // no pidfd: EOF on both outputs is the best sign of the end we have
    }

    milliseconds timeout = kPollSlice;
    if (terminated) {
      timeout = std::min(timeout, killed ? kGroupPoll : until(now, kill_at));
      if (exited) {
        timeout = std::min(timeout, kGroupPoll);
      }
    } else {
      if (options.timeout) {
        timeout = std::min(timeout, until(now, start + *options.timeout));
      }
      if (options.stall_timeout) {
        timeout = std::min(timeout, until(now, last_output + *options.stall_timeout));
      }
    }
    std::array<pollfd, 4> fds{};
    int in_index = -1;
    int out_index = -1;
    int err_index = -1;
    int pid_index = -1;
    nfds_t count = 0;
    auto add = [&](const UniqueFd& fd, short events, int& index) {
      if (fd.valid() && !exited) {
        index = static_cast<int>(count);
        fds[count++] = pollfd{fd.get(), events, 0};
      }
    };
    add(to_child, POLLOUT, in_index);
    add(from_stdout, POLLIN, out_index);
    add(from_stderr, POLLIN, err_index);
    add(child.pidfd, POLLIN, pid_index);
    const int ready = ::poll(fds.data(), count, static_cast<int>(timeout.count()));
    if (ready < 0 && errno != EINTR) {
      ::kill(-pid, SIGKILL);
      break;
    }
    if (ready <= 0) {
      continue;
    }
    if (in_index >= 0 && fds[in_index].revents != 0) {
      const std::string_view input = options.input;
      const ssize_t n = ::write(to_child.get(), input.data() + written, input.size() - written);
      if (n > 0) {
        written += static_cast<size_t>(n);
        if (written == input.size()) {
          to_child.reset();  // EOF tells the program its input is complete
        }
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        to_child.reset();  // EPIPE: the program stopped reading; its exit status will say why
      }
    }
    if (out_index >= 0 && fds[out_index].revents != 0 &&
        drainAvailable(from_stdout.get(), to_stdout) == Drain::kEof) {
      from_stdout.reset();
    }
    if (err_index >= 0 && fds[err_index].revents != 0 &&
        drainAvailable(from_stderr.get(), to_stderr) == Drain::kEof) {
      from_stderr.reset();
    }
    if (pid_index >= 0 && (fds[pid_index].revents & POLLIN) != 0) {
      // The program exited: everything it wrote is already in the pipes. Take it and stop
      // reading; a grandchild that still holds the pipes does not get to extend the call.
      if (from_stdout.valid()) {
        drainAvailable(from_stdout.get(), to_stdout);
      }
      if (from_stderr.valid()) {
        drainAvailable(from_stderr.get(), to_stderr);
      }
      exited = true;
    }
  }
  to_child.reset();
  token.clearWaker();  // before reaping: the pid must not be signalled once it can be reused
  out.wait_status = reapChild(pid);
  out.stderr_tail = stderr_tail.text();
  out.elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  return out;
}

}  // namespace oe::prockit

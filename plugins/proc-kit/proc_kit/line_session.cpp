// LineSession: see line_session.hpp. Exits are seen through waitid(WNOWAIT) (and the pidfd, to
// wake up): the leader stays a zombie until stop() is done with the kill ladder, so kill(-pgid)
// never reaches a stranger that reused the id.
#include "proc_kit/line_session.hpp"

#include <poll.h>
#include <sys/wait.h>

#include <algorithm>
#include <csignal>
#include <utility>

namespace oe::prockit {
namespace {

using std::chrono::milliseconds;

milliseconds sliceUntil(LineSession::Clock::time_point deadline, milliseconds cap) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - LineSession::Clock::now());
  return std::clamp(left + milliseconds(1), milliseconds(1), cap);
}

}  // namespace

Expected<std::unique_ptr<LineSession>> LineSession::start(SpawnRequest request, size_t stderr_tail,
                                                          size_t max_line) {
  auto piped = spawnPiped(std::move(request));
  if (!piped) {
    return std::move(piped).failure();
  }
  return std::unique_ptr<LineSession>(new LineSession(
      std::move(piped->child), std::move(piped->to_stdin), std::move(piped->from_stdout),
      std::move(piped->from_stderr), stderr_tail, max_line));
}

LineSession::LineSession(Child child, UniqueFd to_child, UniqueFd from_stdout, UniqueFd from_stderr,
                         size_t stderr_tail, size_t max_line)
    : child_(std::move(child)),
      to_child_(std::move(to_child)),
      from_stdout_(std::move(from_stdout)),
      from_stderr_(std::move(from_stderr)),
      stderr_tail_(stderr_tail),
      max_line_(max_line) {}

LineSession::~LineSession() { stop(); }

bool LineSession::exited() {
  if (exited_) {
    return true;
  }
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(child_.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
      info.si_pid == child_.pid) {
    exited_ = true;
    wait_status_ = info.si_code == CLD_EXITED ? (info.si_status & 0xff) << 8 : info.si_status;
  }
  return exited_;
}

void LineSession::pump(milliseconds timeout, std::string_view* pending) {
  std::array<pollfd, 4> fds{};
  nfds_t count = 0;
  int in_index = -1;
  int out_index = -1;
  int err_index = -1;
  auto add = [&](const UniqueFd& fd, short events, int* index) {
    if (fd.valid()) {
      if (index != nullptr) {
        *index = static_cast<int>(count);
      }
      fds[count++] = pollfd{fd.get(), events, 0};
    }
  };
  if (pending != nullptr && !pending->empty()) {
    add(to_child_, POLLOUT, &in_index);
  }
  add(from_stdout_, POLLIN, &out_index);
  add(from_stderr_, POLLIN, &err_index);
  if (!exited_) {
    add(child_.pidfd, POLLIN, nullptr);
  }
  const int ready =
      ::poll(count == 0 ? nullptr : fds.data(), count, static_cast<int>(timeout.count()));
  auto to_stdout = [this](std::string_view bytes) { stdout_buffer_.append(bytes); };
  auto to_stderr = [this](std::string_view bytes) { stderr_tail_.append(bytes); };
  if (ready > 0) {
    if (in_index >= 0 && fds[in_index].revents != 0) {
      const ssize_t n = ::write(to_child_.get(), pending->data(), pending->size());
      if (n > 0) {
        pending->remove_prefix(static_cast<size_t>(n));
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        to_child_.reset();  // EPIPE: the program stopped reading
      }
    }
    if (out_index >= 0 && fds[out_index].revents != 0 &&
        drainAvailable(from_stdout_.get(), to_stdout) == Drain::kEof) {
      from_stdout_.reset();
    }
    if (err_index >= 0 && fds[err_index].revents != 0 &&
        drainAvailable(from_stderr_.get(), to_stderr) == Drain::kEof) {
      from_stderr_.reset();
    }
  }
  if (!exited_ && exited()) {
    // Everything the program wrote is in the pipes now. Take it and stop reading: a grandchild
    // that still holds the pipes does not get to extend the session.
    if (from_stdout_.valid()) {
      drainAvailable(from_stdout_.get(), to_stdout);
    }
    if (from_stderr_.valid()) {
      drainAvailable(from_stderr_.get(), to_stderr);
    }
    from_stdout_.reset();
    from_stderr_.reset();
    to_child_.reset();
  }
}

LineSession::Wait LineSession::waitFor(Clock::time_point deadline, const CancelToken& token) const {
  if (token.requested()) {
    return Wait::kCancelled;
  }
  if (Clock::now() >= deadline) {
    return Wait::kTimedOut;
  }
  return Wait::kOk;
}

LineSession::Wait LineSession::send(std::string_view bytes, Clock::time_point deadline,
                                    const CancelToken& token) {
  const SigpipeBlock sigpipe_guard;
  while (!bytes.empty()) {
    if (!to_child_.valid() || exited_) {
      return Wait::kClosed;
    }
    if (const Wait why = waitFor(deadline, token); why != Wait::kOk) {
      return why;
    }
    pump(sliceUntil(deadline, kPollSlice), &bytes);
  }
  return Wait::kOk;
}

LineSession::Wait LineSession::readLine(std::string& line, Clock::time_point deadline,
                                        const CancelToken& token) {
  size_t scanned = 0;  // the buffer's bytes already known to hold no '\n'
  while (true) {
    const size_t newline = stdout_buffer_.find('\n', scanned);
    if (newline != std::string::npos) {
      line.assign(stdout_buffer_, 0, newline);
      stdout_buffer_.erase(0, newline + 1);
      return Wait::kOk;
    }
    scanned = stdout_buffer_.size();
    if (scanned > max_line_) {
      return Wait::kOverflow;
    }
    if (!from_stdout_.valid()) {
      return Wait::kClosed;
    }
    if (const Wait why = waitFor(deadline, token); why != Wait::kOk) {
      return why;
    }
    pump(sliceUntil(deadline, kPollSlice), nullptr);
  }
}

int LineSession::stop(milliseconds grace) {
  if (reaped_) {
    return wait_status_;
  }
  to_child_.reset();  // EOF: a well-behaved stdio server exits on its own
  const pid_t pid = child_.pid;
  auto group_done = [&] { return exited() && !groupHasLiveMembers(pid); };
  auto wait_until = [&](Clock::time_point until) {
    while (!group_done() && Clock::now() < until) {
      pump(sliceUntil(until, exited_ ? kGroupPoll : kPollSlice), nullptr);
    }
  };
  wait_until(Clock::now() + grace);
  if (!group_done()) {
    ::kill(-pid, SIGTERM);
    wait_until(Clock::now() + grace);
  }
  if (!group_done()) {
    ::kill(-pid, SIGKILL);
    wait_until(Clock::now() + kAfterKill);
  }
  wait_status_ = reapChild(pid);
  reaped_ = true;
  exited_ = true;
  from_stdout_.reset();
  from_stderr_.reset();
  return wait_status_;
}

}  // namespace oe::prockit

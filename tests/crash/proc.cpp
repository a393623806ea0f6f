// Proc (proc.hpp): posix_spawn, and waits through a pidfd (poll with a timeout) so a deadline
// costs no polling loop; where pidfd_open is missing (Linux < 5.3) it polls waitpid every 5 ms.
#include "crash/proc.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "support/process.hpp"

namespace oe::crash {

Proc::Proc(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
           const std::filesystem::path& cwd, const std::filesystem::path& out_prefix)
    : out_(out_prefix.string() + ".out"), err_(out_prefix.string() + ".err") {
  for (const auto& a : argv) {
    command_ += (command_.empty() ? "" : " ") + a;
  }
  test::SpawnArgs spawn(argv, env);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!cwd.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  }
  // Default signal dispositions in the child (the harness ignores SIGPIPE).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setsigdefault(&attr, &all);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  started_ = Clock::now();
  const int rc = posix_spawnp(&pid_, argv[0].c_str(), &actions, &attr, spawn.argv(), spawn.envp());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    throw std::runtime_error("posix_spawnp " + argv[0] + " failed: " + std::to_string(rc));
  }
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
}

Proc::~Proc() {
  if (!exit_code_) {
    (void)killNow();
  }
  if (pidfd_ >= 0) {
    close(pidfd_);
  }
}

std::optional<int> Proc::poll() {
  if (exit_code_) {
    return exit_code_;
  }
  int status = 0;
  pid_t r = 0;
  while ((r = waitpid(pid_, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r == pid_) {
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } else if (r < 0) {
    exit_code_ = -1;  // not our child any more: nothing to wait for
  }
  return exit_code_;
}

bool Proc::runningUntil(Clock::time_point until) {
  while (!poll()) {
    const auto left = std::chrono::duration_cast<Ms>(until - Clock::now());
    if (left.count() <= 0) {
      return true;
    }
    if (pidfd_ >= 0) {
      pollfd fd{pidfd_, POLLIN, 0};
      (void)::poll(&fd, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    } else {
      sleepFor(std::min(left, Ms(5)));
    }
  }
  return false;
}

std::optional<int> Proc::waitFor(Ms limit) {
  (void)runningUntil(Clock::now() + limit);
  return poll();
}

void Proc::signal(int signal_number) const {
  if (!exit_code_) {
    ::kill(pid_, signal_number);
  }
}

int Proc::killNow() {
  if (auto code = poll()) {
    return *code;
  }
  ::kill(pid_, SIGCONT);  // a stopped process dies of SIGKILL too, but say it plainly
  ::kill(pid_, SIGKILL);
  if (auto code = waitFor(Ms(10000))) {
    return *code;
  }
  return -1;
}

std::string Proc::out() const { return readText(out_); }
std::string Proc::err() const { return readText(err_); }

Finished runFor(const std::vector<std::string>& argv,
                const std::map<std::string, std::string>& env, const std::filesystem::path& cwd,
                const std::filesystem::path& out_prefix, Ms limit) {
  Proc proc(argv, env, cwd, out_prefix);
  Finished done;
  done.exit_code = proc.waitFor(limit);
  if (!done.exit_code) {
    (void)proc.killNow();
  }
  done.took = std::chrono::duration_cast<Ms>(Clock::now() - proc.started());
  done.out = proc.out();
  done.err = proc.err();
  return done;
}

void sleepFor(Ms duration) {
  if (duration.count() <= 0) {
    return;
  }
  timespec pause{static_cast<time_t>(duration.count() / 1000),
                 static_cast<long>(duration.count() % 1000) * 1000000L};
  while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
  }
}

std::string readText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace oe::crash

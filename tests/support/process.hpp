// Real subprocesses (posix_spawn) for tests that drive `oe`: run to the end with captured
// stdout/stderr, or started in the background to be interrupted, killed or raced.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace oe::test {

struct ProcessResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out;
  std::string err;
};

// The argv and environment blocks of a posix_spawn: `argv` as given, and this process's
// environment with `env` applied (an empty value unsets the variable).
class SpawnArgs {
 public:
  SpawnArgs(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env)
      : args_(argv) {
    std::map<std::string, std::string> merged;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string kv(*e);
      const auto eq = kv.find('=');
      merged[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    }
    for (const auto& [k, v] : env) {
      if (v.empty()) {
        merged.erase(k);
      } else {
        merged[k] = v;
      }
    }
    for (const auto& [k, v] : merged) {
      env_strings_.push_back(k + "=" + v);
    }
    for (auto& s : env_strings_) {
      envp_.push_back(s.data());
    }
    envp_.push_back(nullptr);
    for (auto& a : args_) {
      argv_.push_back(a.data());
    }
    argv_.push_back(nullptr);
  }
  SpawnArgs(const SpawnArgs&) = delete;
  SpawnArgs& operator=(const SpawnArgs&) = delete;

  char* const* argv() { return argv_.data(); }
  char* const* envp() { return envp_.data(); }

 private:
  std::vector<std::string> args_;
  std::vector<std::string> env_strings_;
  std::vector<char*> argv_;
  std::vector<char*> envp_;
};

// Runs argv[0] (searched on PATH) with extra environment variables (an empty value unsets).
inline ProcessResult runProcess(const std::vector<std::string>& argv,
                                const std::map<std::string, std::string>& env = {},
                                const std::filesystem::path& cwd = {}) {
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  if (!cwd.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  }
  SpawnArgs spawn(argv, env);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, spawn.argv(), spawn.envp());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw std::runtime_error("posix_spawnp " + argv[0] + " failed: " + std::to_string(rc));
  }
  ProcessResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        const ssize_t n = read(fds[i].fd, buf, sizeof buf);
        if (n > 0) {
          sinks[i]->append(buf, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
        }
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

// A process started in the background with its stdout and stderr in files
// (<out_prefix>.out/.err), for tests that interrupt, kill or race it. Killed (SIGKILL) and
// reaped if still running when destroyed.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& env, const std::filesystem::path& cwd,
                    const std::filesystem::path& out_prefix)
      : out_(out_prefix.string() + ".out"), err_(out_prefix.string() + ".err") {
    SpawnArgs spawn(argv, env);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!cwd.empty()) {
      posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
    }
    const int rc =
        posix_spawnp(&pid_, argv[0].c_str(), &actions, nullptr, spawn.argv(), spawn.envp());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      throw std::runtime_error("posix_spawnp " + argv[0] + " failed: " + std::to_string(rc));
    }
  }
  ~BackgroundProcess() {
    if (!reaped_) {
      ::kill(pid_, SIGKILL);
      (void)wait();
    }
  }
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  void signal(int signal_number) const { ::kill(pid_, signal_number); }
  // The exit code, or 128+N when killed by signal N.
  int wait() {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // The exit code (as wait()) once the process ended, or nullopt if it still runs after
  // `limit` (polled every 10 ms; a hang shows as a failed expectation, not a stuck test).
  std::optional<int> waitFor(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      int status = 0;
      const pid_t done = waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (done < 0 && errno != EINTR) {
        return std::nullopt;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return std::nullopt;
      }
      const timespec pause{0, 10'000'000};
      nanosleep(&pause, nullptr);
    }
  }
  [[nodiscard]] std::string out() const { return slurp(out_); }
  [[nodiscard]] std::string err() const { return slurp(err_); }

 private:
  static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  std::string out_;
  std::string err_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Waits (polling every 10 ms, at most `limit`) until `path` exists, which a tool creates to say
// it reached a point; false when it never did.
inline bool waitForFile(const std::filesystem::path& path,
                        std::chrono::seconds limit = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    const timespec pause{0, 10'000'000};
    nanosleep(&pause, nullptr);
  }
  return true;
}

// True when `pid` no longer runs: gone, or a zombie waiting for a parent that may never reap
// it (an orphan in a container whose PID 1 does not reap). A process just sent SIGKILL takes a
// moment to die (the kernel delivers the signal when it next schedules it), so this looks
// again, every 10 ms, until `within` has passed. For "the tool was killed" checks.
inline bool processGone(pid_t pid, std::chrono::milliseconds within = std::chrono::seconds(10)) {
  auto gone = [pid] {
    if (::kill(pid, 0) != 0) {
      return errno == ESRCH;
    }
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto paren = text.rfind(')');  // the command name may itself hold spaces and parens
    return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
  };
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (!gone()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    const timespec pause{0, 10'000'000};
    nanosleep(&pause, nullptr);
  }
  return true;
}

// The pid a tool wrote into `file` (0 when the file is missing or holds no number).
inline pid_t pidIn(const std::filesystem::path& file) {
  std::ifstream in(file);
  long pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}

}  // namespace oe::test

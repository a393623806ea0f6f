// `oe` as a background process whose output is read as it comes, for tests that act on what a
// run prints (a signal once a notice appeared, a second run while the first holds the state).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "support/process.hpp"

namespace oe::test {

// Started by the constructor (OE_PLUGIN_PATH unset, as OeTest::oe); killed if still running
// when destroyed.
class LiveOe {
 public:
  LiveOe(const std::vector<std::string>& args, std::map<std::string, std::string> env_add,
         const std::filesystem::path& cwd) {
    env_add.emplace("OE_PLUGIN_PATH", "");  // an empty value unsets
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
    posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
    std::vector<std::string> argv = args;
    argv.insert(argv.begin(), OE_EXE);
    SpawnArgs spawn(argv, env_add);
    const int rc = posix_spawn(&pid_, OE_EXE, &actions, nullptr, spawn.argv(), spawn.envp());
    posix_spawn_file_actions_destroy(&actions);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (rc != 0) {
      throw std::runtime_error("posix_spawn failed");
    }
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
  }
  ~LiveOe() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  LiveOe(const LiveOe&) = delete;
  LiveOe& operator=(const LiveOe&) = delete;

  // Reads stderr until it holds `needle` (true) or ends (false).
  bool waitForStderr(std::string_view needle) {
    while (err_.find(needle) == std::string::npos) {
      if (!pump()) {
        return false;
      }
    }
    return true;
  }
  void signal(int number) { kill(pid_, number); }
  // Reads both streams to their end; the exit status as waitpid reports it.
  int wait() {
    while (pump()) {
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  // One read from whichever stream has data; false once both ended.
  bool pump() {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    if (out_fd_ < 0 && err_fd_ < 0) {
      return false;
    }
    if (poll(fds, 2, -1) < 0) {
      return errno == EINTR;
    }
    std::string* sinks[2] = {&out_, &err_};
    int* fds_owned[2] = {&out_fd_, &err_fd_};
    char buf[4096];
    for (int i = 0; i < 2; ++i) {
      if (*fds_owned[i] >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        const ssize_t n = read(*fds_owned[i], buf, sizeof buf);
        if (n > 0) {
          sinks[i]->append(buf, static_cast<size_t>(n));
        } else {
          close(*fds_owned[i]);
          *fds_owned[i] = -1;
        }
      }
    }
    return true;
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_;
  std::string err_;
};

}  // namespace oe::test

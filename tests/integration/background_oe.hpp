// An `oe` process started in the background (posix_spawn, output in files), for tests that
// interrupt, kill or race real runs, plus a bounded wait for a file a tool creates.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

extern char** environ;

namespace oe::test {

class BackgroundOe {
 public:
  // Starts `oe <args...>` in `cwd` with stdout/stderr in <out_prefix>.out/.err; OE_PLUGIN_PATH
  // unset (the build's plugins), as OeTest::oe does.
  BackgroundOe(const std::vector<std::string>& args, const std::filesystem::path& out_prefix)
      : out_(out_prefix.string() + ".out"), err_(out_prefix.string() + ".err") {
    std::vector<std::string> argv_strings = {OE_EXE};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& arg : argv_strings) {
      argv.push_back(arg.data());
    }
    argv.push_back(nullptr);
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::string_view(*e).rfind("OE_PLUGIN_PATH=", 0) != 0) {
        env_strings.emplace_back(*e);
      }
    }
    std::vector<char*> envp;
    for (auto& kv : env_strings) {
      envp.push_back(kv.data());
    }
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int rc = posix_spawn(&pid_, OE_EXE, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_EQ(rc, 0) << "posix_spawn " << OE_EXE;
  }
  ~BackgroundOe() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      (void)wait();
    }
  }
  BackgroundOe(const BackgroundOe&) = delete;
  BackgroundOe& operator=(const BackgroundOe&) = delete;

  void signal(int signal_number) const { kill(pid_, signal_number); }

  // The exit code, or 128+N when killed by signal N.
  int wait() {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  [[nodiscard]] std::string out() const { return slurp(out_); }
  [[nodiscard]] std::string err() const { return slurp(err_); }

 private:
  static std::string slurp(const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) {
      return {};
    }
    std::string text;
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
      text.append(buf, n);
    }
    std::fclose(f);
    return text;
  }

  std::string out_;
  std::string err_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Waits (polling every 10 ms, at most `limit`) until `path` exists; false when it never did.
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

}  // namespace oe::test

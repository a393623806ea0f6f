// Subprocesses for the crash harness: started in the background with their output in files,
// signalled at a chosen moment, and waited for with a deadline (a process that outlives its
// deadline is a hang, which the harness reports; it is then killed, never waited on forever).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace oe::crash {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

class Proc {
 public:
  // Starts argv (argv[0] searched on PATH) in `cwd` with `env` applied to this process's
  // environment (an empty value unsets), stdin from /dev/null, stdout and stderr to
  // <out_prefix>.out and <out_prefix>.err. Throws when the spawn fails.
  Proc(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
       const std::filesystem::path& cwd, const std::filesystem::path& out_prefix);
  ~Proc();  // SIGKILL and reap when still running
  Proc(const Proc&) = delete;
  Proc& operator=(const Proc&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] Clock::time_point started() const { return started_; }
  // The exit code (128+N when killed by signal N) once it has ended; nullopt while it runs.
  std::optional<int> poll();
  // Waits at most `limit`; the exit code, or nullopt when it is still running.
  std::optional<int> waitFor(Ms limit);
  // Waits until `until`; false when it is still running then.
  bool runningUntil(Clock::time_point until);
  void signal(int signal_number) const;
  // SIGKILL, then reap (bounded: a process in uninterruptible sleep is left to the kernel).
  int killNow();
  [[nodiscard]] std::string out() const;
  [[nodiscard]] std::string err() const;
  [[nodiscard]] const std::string& command() const { return command_; }

 private:
  std::string out_;
  std::string err_;
  std::string command_;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  std::optional<int> exit_code_;
  Clock::time_point started_;
};

// Runs argv to its end, at most `limit`; the exit code (nullopt on timeout: killed) and output.
struct Finished {
  std::optional<int> exit_code;
  std::string out;
  std::string err;
  Ms took{0};
};
Finished runFor(const std::vector<std::string>& argv,
                const std::map<std::string, std::string>& env, const std::filesystem::path& cwd,
                const std::filesystem::path& out_prefix, Ms limit);

void sleepFor(Ms duration);
std::string readText(const std::filesystem::path& path);

}  // namespace oe::crash

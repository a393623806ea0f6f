// A conversation with a program over newline-delimited messages (an MCP server over stdio):
// lines written to its stdin, lines read from its stdout, its stderr kept as a tail for error
// messages, every wait bounded by a deadline and the cancel token, and a stop() that always
// leaves nothing of its process group behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "proc_kit/cancel_token.hpp"
#include "proc_kit/subprocess.hpp"

namespace oe::prockit {

class LineSession {
 public:
  using Clock = std::chrono::steady_clock;

  // Why a send or a read returned.
  enum class Wait {
    kOk,
    kCancelled,  // the token was cancelled
    kTimedOut,   // the deadline passed
    kClosed,     // the program exited or closed its end of the pipe
    kOverflow,   // one line passed max_line bytes
  };

  // Spawns `request` (its fds are replaced by the three pipes) in its own process group. Fails
  // only when the program cannot be started: the message is the system's reason.
  static Expected<std::unique_ptr<LineSession>> start(SpawnRequest request,
                                                      size_t stderr_tail = 4096,
                                                      size_t max_line = size_t{256} << 20U);

  LineSession(const LineSession&) = delete;
  LineSession& operator=(const LineSession&) = delete;
  ~LineSession();  // stop() with the default grace

  // Writes `bytes` whole (the caller ends a message with '\n'), draining the program's output
  // meanwhile so neither side can block the other.
  Wait send(std::string_view bytes, Clock::time_point deadline, const CancelToken& token);

  // The next line of stdout, without its '\n' (a '\r' before it is kept).
  Wait readLine(std::string& line, Clock::time_point deadline, const CancelToken& token);

  // Closes stdin and gives the program `grace` to exit on its own (the polite end of a stdio
  // MCP session); then SIGTERM to the group, SIGKILL after another `grace`, and waits for the
  // group to vanish. Idempotent. Returns the leader's wait status.
  int stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

  // True once the leader exited (it is not reaped before stop()).
  [[nodiscard]] bool exited();
  // The wait status once the leader exited (reaped or not); 0 before.
  [[nodiscard]] int waitStatus() const noexcept { return wait_status_; }
  // The kept end of stderr, trimmed.
  [[nodiscard]] std::string stderrText() const { return stderr_tail_.text(); }
  [[nodiscard]] pid_t pid() const noexcept { return child_.pid; }

 private:
  LineSession(Child child, UniqueFd to_child, UniqueFd from_stdout, UniqueFd from_stderr,
              size_t stderr_tail, size_t max_line);

  // One poll round of at most `timeout`: writes what `pending` holds, reads stdout and stderr,
  // notices the exit.
  void pump(std::chrono::milliseconds timeout, std::string_view* pending);
  Wait waitFor(Clock::time_point deadline, const CancelToken& token) const;

  Child child_;
  UniqueFd to_child_;
  UniqueFd from_stdout_;
  UniqueFd from_stderr_;
  TailBuffer stderr_tail_;
  size_t max_line_;
  std::string stdout_buffer_;  // bytes read and not yet returned as lines
  bool exited_ = false;
  bool reaped_ = false;
  int wait_status_ = 0;
};

}  // namespace oe::prockit

// One program run to its end under supervision: stdin fed then closed, stdout and stderr drained
// together (neither side can block the other), a wall-clock deadline, a stall watchdog, and a
// kill ladder (SIGTERM to the process group, SIGKILL after a grace period) for cancellation.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "proc_kit/cancel_token.hpp"
#include "proc_kit/subprocess.hpp"

namespace oe::prockit {

// Why supervision stopped.
enum class Ending {
  kExited,     // the program exited (or was killed by someone else): see wait_status
  kCancelled,  // the token was cancelled
  kTimedOut,   // SuperviseOptions::timeout passed
  kStalled,    // no output for SuperviseOptions::stall_timeout
  kOverflow,   // stdout passed SuperviseOptions::max_stdout
  kStopped,    // on_stdout asked to stop
};

struct SuperviseOptions {
  std::string_view input;  // written to stdin, which is then closed (empty: closed at once)
  std::optional<std::chrono::milliseconds> timeout;        // wall clock from the spawn
  std::optional<std::chrono::milliseconds> stall_timeout;  // since the last stdout/stderr byte
  std::chrono::milliseconds kill_grace{2000};              // SIGTERM -> SIGKILL
  size_t max_stdout = size_t{256} << 20U;
  size_t stderr_tail = 2048;  // bytes of stderr kept from the end
  size_t stderr_head = 0;     // bytes of stderr kept from the start
  // Each stdout chunk as it arrives, on the supervising thread; false asks to stop the program
  // (Ending::kStopped).
  std::function<bool(std::string_view)> on_stdout;
  // Once the program exits, terminate what it left running in its process group (same ladder).
  // Off: a background process may outlive the call (the tool kind's contract).
  bool clean_group_on_exit = false;
};

struct Supervised {
  Ending ending = Ending::kExited;
  int wait_status = 0;
  std::string stdout_text;
  std::string stderr_tail;  // trimmed (TailBuffer::text)
  std::string stderr_head;
  pid_t pid = -1;
  // Time from the spawn to the end of supervision.
  std::chrono::milliseconds elapsed{0};
};

// Spawns `request` (its fds are replaced by stdin/stdout/stderr pipes) in its own process group
// and supervises it on the calling thread. Whatever the ending, the group is signalled before
// this returns (SIGTERM, then SIGKILL after kill_grace for members still alive), except after a
// plain exit without clean_group_on_exit. Fails only when the program cannot be started: the
// message is the system's reason.
Expected<Supervised> supervise(SpawnRequest request, const SuperviseOptions& options,
                               CancelToken& token);

}  // namespace oe::prockit

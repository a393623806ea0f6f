// Long tools (oe_run, oe_resume, oe_evolve, ...) run as a child `oe` in its own process group:
// a crashing plugin or a program printing to its stdout cannot take the server or its JSON-RPC
// stream with it, every CLI behaviour is reused as it is, and cancelling is a SIGINT, which the
// run engine turns into an `interrupted`, resumable run.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "proc_kit/cancel_token.hpp"

namespace oe::mcp {

// The fd a child `oe run --events-fd` writes its events to.
inline constexpr int kChildEventsFd = 3;

struct ChildOptions {
  std::vector<std::string> argv;  // argv[0]: the absolute path of the program
  std::filesystem::path cwd;      // empty: ours
  // Each JSON line the child writes to kChildEventsFd, on the calling thread; nothing is passed
  // when empty (and the fd is not opened).
  std::function<void(const Json& event)> on_event;
  // After a cancellation's SIGINT, how long the child may take to stop before its whole process
  // group is killed.
  std::chrono::milliseconds interrupt_grace{20000};
};

struct ChildResult {
  int wait_status = 0;
  std::string stdout_text;
  std::string stderr_tail;  // the last lines (the child's stderr is also copied to ours)
  bool cancelled = false;   // the token was cancelled while the child ran
};

// Runs the child to its end (stdin /dev/null, stdout captured, stderr copied to ours and its
// tail kept); the token's cancel() sends SIGINT to the child's group. Whatever is left of the
// group once the child has exited is killed. Fails only when the program cannot be started.
Result<ChildResult> runChild(const ChildOptions& options, prockit::CancelToken& token);

// True for a wait status of a normal exit with code 0.
bool exitedOk(int wait_status);

}  // namespace oe::mcp

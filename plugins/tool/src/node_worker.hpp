// The Node.js flavour: ONE persistent `node` process per plugin instance, started on first use
// and shared by every node and every concurrent call. Requests carry ids, so many calls are in
// flight at once; a reader thread routes each reply to the caller waiting for it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "cancel_token.hpp"
#include "expected.hpp"
#include "subprocess.hpp"
#include "tool_io.hpp"

namespace oe::tool {

class NodeWorker {
 public:
  // log_line receives the worker's stderr (and so the tools' console output) line by line, on
  // the worker's reader thread.
  // `sandbox`: the worker runs under oe-sandbox (a node with a policy in force gets a worker of
  // its own per call, docs/policy.md). `cwd`: the worker's working directory (a `workspace:
  // worktree` attempt's worktree, docs/workspaces.md); empty: oe's own.
  explicit NodeWorker(std::function<void(std::string_view)> log_line,
                      std::optional<SandboxSpec> sandbox = std::nullopt, std::string cwd = {});
  ~NodeWorker();  // kills the worker process group and joins its reader thread
  NodeWorker(const NodeWorker&) = delete;
  NodeWorker& operator=(const NodeWorker&) = delete;

  // [thread-safe] Calls the default export of module `who.path` with `input` (a JSON object) and
  // returns the normalised response JSON. On cancellation returns OE_CANCELLED "cancelled" at
  // once; the worker is killed (and restarted by the next call) only when it does not answer a
  // ping within 2 s, i.e. when a tool blocks its event loop.
  Expected<std::string> call(const ToolIdentity& who, std::string_view input, CancelToken& token);

  // $OE_NODE, else `node` on PATH; the failure message names `who`.
  static Expected<std::string> locateNode(const ToolIdentity& who);

 private:
  class Process;
  struct Pending;

  Expected<std::shared_ptr<Process>> running(const ToolIdentity& who);
  // True when the worker answered (or died) within the grace period.
  bool responsive(Process& process);

  std::function<void(std::string_view)> log_line_;
  std::optional<SandboxSpec> sandbox_;
  std::string cwd_;
  std::mutex mutex_;  // guards current_
  std::shared_ptr<Process> current_;
  std::atomic<uint64_t> next_id_{1};
};

}  // namespace oe::tool

// The MCP server behind `oe mcp`: session and version negotiation (the 2025-11-25 `initialize`
// flow, older revisions negotiated down, and the stateless 2026-07-28 `server/discover` flow),
// the tools table, resources, progress notifications and cancellation. Transport-agnostic: it
// takes lines and writes messages through a LineWriter. See docs/mcp.md.
//
// Threads: handleLine() runs on one reader thread and answers everything cheap inline; each
// tools/call runs on a thread of its own, so a long `oe_run` never blocks `tools/list` or a
// cancellation. Every message leaves through the one LineWriter.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/mcp/framing.hpp"
#include "proc_kit/cancel_token.hpp"

namespace oe::mcp {

// The revisions `initialize` accepts, newest first; another requested one is answered with the
// first (the client then decides whether it can speak it).
inline constexpr std::string_view kLegacyVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                       "2024-11-05"};
// The stateless revision `server/discover` offers.
inline constexpr std::string_view kModernVersion = "2026-07-28";

struct ServerInfo {
  std::string name = "oe";
  std::string version;
  std::string instructions;
  // The least time between two progress notifications of one call (the last one, progress ==
  // total, is always sent).
  std::chrono::milliseconds progress_interval{200};
};

// One tools/call in flight, as its handler sees it. Handlers run on their own thread.
class ToolCall {
 public:
  ToolCall(Json args, Json progress_token, std::chrono::milliseconds progress_interval,
           LineWriter& out);

  [[nodiscard]] const Json& args() const { return args_; }
  // A string argument; absent and not `required` reads as "". A wrong type or a missing required
  // argument is an error naming it (the handler returns it, and the client sees isError).
  [[nodiscard]] Result<std::string> stringArg(std::string_view name, bool required) const;

  // Cancelled by notifications/cancelled for this request, or when the server shuts down. A
  // handler that waits on something installs a waker that interrupts the wait.
  prockit::CancelToken& cancel() { return cancel_; }

  // [thread-safe] notifications/progress when the client asked for it (params._meta.
  // progressToken): only when `progress` grows, and at most once per interval unless it reaches
  // `total`.
  void progress(double progress, std::optional<double> total, const std::string& message);

 private:
  Json args_;
  Json progress_token_;
  std::chrono::milliseconds interval_;
  LineWriter& out_;
  prockit::CancelToken cancel_{nullptr};
  std::mutex progress_mutex_;
  double last_progress_ = -1;
  std::chrono::steady_clock::time_point last_sent_{};
};

// A tool: one entry of the table `tools/list` returns and `tools/call` dispatches on. The
// handler's value becomes structuredContent and, pretty-printed, the text content (upstream's
// form); its error becomes `isError` with "error in <name>: <message>".
struct Tool {
  std::string name;
  std::string title;
  std::string description;
  Json input_schema;  // a JSON Schema object
  Json annotations;   // readOnlyHint, destructiveHint, idempotentHint, openWorldHint (or null)
  std::function<Result<Json>(ToolCall&)> handler;
};

struct Resource {
  std::string uri;
  std::string name;
  std::string description;
  std::string mime_type;
};

struct ResourceText {
  std::string mime_type;
  std::string text;
};

// What resources/list and resources/read serve; either may be empty (no resources).
struct Resources {
  std::function<std::vector<Resource>()> list;
  std::function<Result<ResourceText>(const std::string& uri)> read;
};

class Server {
 public:
  Server(ServerInfo info, std::vector<Tool> tools, Resources resources, LineWriter& out);
  ~Server();  // shutdown()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // One line from the client: answered (inline, or later by a call's thread), or ignored. Never
  // throws, whatever the bytes.
  void handleLine(std::string_view line);

  // Reads lines until EOF, then shutdown(). Returns the process exit code (0).
  int serve(LineReader& in);

  // [thread-safe] Cancels every call in flight and waits for them to end (a signal handler's
  // thread may call it while the reader runs). Their responses are not sent; no call starts
  // after it.
  void shutdown();

  // [thread-safe] Calls whose thread has not finished yet (tests wait on this).
  [[nodiscard]] size_t callsInFlight() const;

 private:
  struct Call;
  void dispatch(const Message& message);
  [[nodiscard]] std::optional<Json> answer(const Message& message, bool& deferred);
  Json initializeResult(const Json& params);
  Json discoverResult() const;
  Json capabilities() const;
  Json toolsListResult() const;
  std::optional<Json> startToolCall(const Message& message, Json& error);
  void cancelCall(const Json& params);
  void reapFinished();

  ServerInfo info_;
  std::vector<Tool> tools_;
  std::map<std::string, size_t, std::less<>> tool_index_;
  Resources resources_;
  LineWriter& out_;

  mutable std::mutex calls_mutex_;
  std::condition_variable call_ended_;
  std::map<std::string, std::shared_ptr<Call>> active_;  // by the request id's JSON text
  std::vector<std::shared_ptr<Call>> finished_;          // threads to join
  bool shutting_down_ = false;
};

}  // namespace oe::mcp

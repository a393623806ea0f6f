// A minimal MCP client over stdio (newline-delimited JSON-RPC 2.0): starts a server, does the
// initialize -> notifications/initialized handshake, sends requests and waits for their answers.
// Notifications and stray non-JSON lines from the server are skipped; requests from the server
// are answered (ping) or refused with -32601. The server is always stopped: stdin closed, then
// its process group terminated if it does not exit.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <proc_kit/cancel_token.hpp>
#include <proc_kit/line_session.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "expected.hpp"
#include "json_text.hpp"

namespace oe::dataset {

struct McpServerLaunch {
  std::string command;                          // as declared in mcp.json
  std::vector<std::string> args;                // argv[1..]
  std::vector<std::string> env;                 // "NAME=value", over the host's environment
  std::string cwd;                              // the server's working directory
  std::optional<prockit::SandboxSpec> sandbox;  // a policy is in force (docs/policy.md)
};

class McpClient {
 public:
  // Starts the server and completes the handshake within `timeout`. The failure's message is
  // the reason alone (the caller names the server): "the command ... was not found on PATH",
  // "it exited with exit code 3 before answering initialize; its stderr ends with: ...".
  static Expected<std::unique_ptr<McpClient>> connect(const McpServerLaunch& launch,
                                                      std::string_view client_version,
                                                      std::chrono::milliseconds timeout,
                                                      prockit::CancelToken& token);

  McpClient(const McpClient&) = delete;
  McpClient& operator=(const McpClient&) = delete;
  ~McpClient() = default;  // the session stops the server

  // Sends `method` and waits up to `timeout` for its result; a JSON-RPC error comes back as the
  // failure "MCP error <code>: <message>".
  Expected<OrderedJson> request(std::string_view method, const OrderedJson& params,
                                std::chrono::milliseconds timeout);

  // The protocol revision the server answered with.
  [[nodiscard]] const std::string& protocolVersion() const noexcept { return protocol_version_; }

 private:
  McpClient(std::unique_ptr<prockit::LineSession> session, prockit::CancelToken& token)
      : session_(std::move(session)), token_(token) {}

  // Why the exchange for `method` ended without an answer, with the server's stderr.
  Failure lost(prockit::LineSession::Wait why, std::string_view method,
               std::chrono::milliseconds timeout);

  std::unique_ptr<prockit::LineSession> session_;
  prockit::CancelToken& token_;
  int64_t next_id_ = 0;
  std::string protocol_version_;
  std::string last_noise_;  // the last non-JSON line, shown if the server never answers
};

}  // namespace oe::dataset

// See mcp_client.hpp. Every wait is bounded by the exchange's deadline and the call's cancel
// token; the session (proc-kit) owns the process group and its kill ladder.
#include "mcp_client.hpp"

#include <filesystem>
#include <utility>

#include "mcp_protocol.hpp"

namespace oe::dataset {
namespace {

using prockit::LineSession;
using std::chrono::milliseconds;

// The PATH the server will see: its own env entry wins over the host's.
const char* pathFor(const McpServerLaunch& launch) {
  for (const std::string& entry : launch.env) {
    if (entry.starts_with("PATH=")) {
      return entry.c_str() + 5;
    }
  }
  return nullptr;
}

Expected<std::string> resolveCommand(const McpServerLaunch& launch) {
  if (launch.command.find('/') != std::string::npos) {
    std::filesystem::path path(launch.command);
    if (path.is_relative()) {
      path = std::filesystem::path(launch.cwd) / path;
    }
    std::string absolute = path.lexically_normal().string();
    if (!prockit::isExecutableFile(absolute)) {
      return fail(OE_NOT_FOUND, "the command " + absolute + " is not an executable file");
    }
    return absolute;
  }
  if (auto found = prockit::findOnPath(launch.command, pathFor(launch))) {
    return std::move(*found);
  }
  return fail(OE_NOT_FOUND, "the command \"" + launch.command + "\" was not found on PATH");
}

std::string withStderr(std::string message, const LineSession& session) {
  const std::string err = session.stderrText();
  if (!err.empty()) {
    message += "; its stderr ends with: " + err;
  }
  return message;
}

}  // namespace

Expected<std::unique_ptr<McpClient>> McpClient::connect(const McpServerLaunch& launch,
                                                        std::string_view client_version,
                                                        milliseconds timeout,
                                                        prockit::CancelToken& token) {
  auto path = resolveCommand(launch);
  if (!path) {
    return std::move(path).failure();
  }
  prockit::SpawnRequest spawn;
  spawn.path = std::move(*path);
  spawn.argv.push_back(launch.command);
  spawn.argv.insert(spawn.argv.end(), launch.args.begin(), launch.args.end());
  spawn.cwd = launch.cwd;
  spawn.env = prockit::environmentWith(launch.env);
  spawn.sandbox = launch.sandbox;
  auto session = LineSession::start(std::move(spawn));
  if (!session) {
    return fail(OE_UNAVAILABLE, "cannot run " + launch.command + ": " + session.failure().message);
  }
  std::unique_ptr<McpClient> client(new McpClient(std::move(*session), token));
  const OrderedJson params = {
      {"protocolVersion", kMcpProtocolVersion},
      {"capabilities", OrderedJson::object()},
      {"clientInfo", {{"name", "oe-dataset"}, {"version", client_version}}}};
  auto result = client->request("initialize", params, timeout);
  if (!result) {
    return std::move(result).failure();
  }
  const auto version = result->find("protocolVersion");
  if (version == result->end() || !version->is_string()) {
    return fail(OE_FAILED_PRECONDITION,
                "its answer to initialize has no protocolVersion; it does not speak MCP");
  }
  client->protocol_version_ = version->get<std::string>();
  if (!isSupportedMcpVersion(client->protocol_version_)) {
    return fail(OE_FAILED_PRECONDITION,
                "it answered with protocol version \"" + client->protocol_version_ +
                    "\", which oe does not speak (oe asks for " + std::string(kMcpProtocolVersion) +
                    " and accepts 2025-06-18, 2025-03-26, 2024-11-05)");
  }
  const LineSession::Wait sent = client->session_->send(
      mcpNotification("notifications/initialized"), LineSession::Clock::now() + timeout, token);
  if (sent != LineSession::Wait::kOk) {
    return client->lost(sent, "notifications/initialized", timeout);
  }
  return client;
}

Expected<OrderedJson> McpClient::request(std::string_view method, const OrderedJson& params,
                                         milliseconds timeout) {
  const auto deadline = LineSession::Clock::now() + timeout;
  const int64_t id = ++next_id_;
  const OrderedJson wanted_id = id;
  if (const auto sent = session_->send(mcpRequest(id, method, params), deadline, token_);
      sent != LineSession::Wait::kOk) {
    return lost(sent, method, timeout);
  }
  std::string line;
  while (true) {
    if (const auto read = session_->readLine(line, deadline, token_);
        read != LineSession::Wait::kOk) {
      return lost(read, method, timeout);
    }
    McpIncoming in = parseMcpLine(line);
    switch (in.kind) {
      case McpIncoming::Kind::kResponse:
        if (in.id != wanted_id) {
          break;  // an answer to nothing we are waiting for
        }
        if (in.is_error) {
          return fail(OE_FAILED_PRECONDITION, std::move(in.error));
        }
        return std::move(in.result);
      case McpIncoming::Kind::kRequest:
        if (const auto sent = session_->send(mcpAnswerToServer(in), deadline, token_);
            sent != LineSession::Wait::kOk) {
          return lost(sent, method, timeout);
        }
        break;
      case McpIncoming::Kind::kNotification:
        break;
      default:
        // Stray output (a server that logs to stdout) is tolerated, as the TypeScript SDK's
        // transport does; the last such line is shown if no answer comes.
        if (!jsTrim(line).empty()) {
          last_noise_ = line.substr(0, 200);
        }
        break;
    }
  }
}

Failure McpClient::lost(LineSession::Wait why, std::string_view method, milliseconds timeout) {
  const std::string what(method);
  switch (why) {
    case LineSession::Wait::kCancelled:
      return Failure{OE_CANCELLED, "cancelled"};
    case LineSession::Wait::kTimedOut: {
      std::string message = "no answer to " + what + " within " + std::to_string(timeout.count()) +
                            " ms (source.timeout_ms)";
      if (!last_noise_.empty()) {
        message += "; the last line it printed that is not JSON-RPC: " + last_noise_;
      }
      return Failure{OE_DEADLINE_EXCEEDED, withStderr(std::move(message), *session_)};
    }
    case LineSession::Wait::kOverflow:
      return Failure{OE_RESOURCE_EXHAUSTED,
                     "its answer to " + what + " is one line of more than 256 MiB"};
    default: {
      // Closed: the server exited (or closed its stdout). Stop it to learn how it ended.
      const int status = session_->stop();
      return Failure{OE_UNAVAILABLE,
                     withStderr("it exited with " + prockit::describeWaitStatus(status) +
                                    " before answering " + what,
                                *session_)};
    }
  }
}

}  // namespace oe::dataset

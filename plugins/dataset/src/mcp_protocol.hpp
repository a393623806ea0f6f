// The MCP side of an mcp-resource source that needs no process: what one line of a server's
// stdout is (JSON-RPC 2.0, newline-delimited), the messages oe sends, the wording of a JSON-RPC
// error, and upstream's normalisation of resources/read `contents` into rows (reference §6.4).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "json_text.hpp"

namespace oe::dataset {

// The protocol revision oe asks for, and those it accepts when a server answers with another
// (the official TypeScript SDK's list: servers built with it answer one of these).
inline constexpr std::string_view kMcpProtocolVersion = "2025-11-25";
[[nodiscard]] bool isSupportedMcpVersion(std::string_view version) noexcept;

// One line read from a server.
struct McpIncoming {
  enum class Kind {
    kNoise,         // not a JSON-RPC message (a stray log line): skipped
    kNotification,  // a method without an id: skipped
    kRequest,       // a method with an id: the server asks the client something
    kResponse,      // an id with a result or an error
  };
  Kind kind = Kind::kNoise;
  OrderedJson id;      // kRequest, kResponse
  std::string method;  // kNotification, kRequest
  OrderedJson result;  // kResponse without error
  bool is_error = false;
  std::string error;  // kResponse with error: "MCP error <code>: <message>"
};

[[nodiscard]] McpIncoming parseMcpLine(std::string_view line);

// One message as a line (compact JSON, '\n' at the end; strings escape their newlines).
[[nodiscard]] std::string mcpRequest(int64_t id, std::string_view method,
                                     const OrderedJson& params);
[[nodiscard]] std::string mcpNotification(std::string_view method);
// The answer to a server's request: `{}` for ping, which every party must answer, and -32601
// (method not found) for anything else, since the client offers no capability.
[[nodiscard]] std::string mcpAnswerToServer(const McpIncoming& request);

// Upstream's rows from `contents` (an array): a text whose trimmed form starts with [ or { and
// parses is spread (an array) or pushed (anything else); other text -> {text, mimeType?}; a
// blob -> {blob, mimeType?}; anything else -> the item itself.
[[nodiscard]] OrderedJson mcpContentsToRows(const OrderedJson& contents);

}  // namespace oe::dataset

// MCP's stdio transport: newline-delimited JSON-RPC 2.0 (no Content-Length framing). Reading
// survives garbage (a bad line is answered or dropped, never fatal); writing is one whole line
// per message from any thread.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "oe/common/json.hpp"

namespace oe::mcp {

// JSON-RPC 2.0 and MCP error codes (an open set: a client may send any code back).
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kUnsupportedProtocolVersion = -32022;  // 2026-07-28: data.supported
inline constexpr int kResourceNotFound = -32002;

// One parsed line. A request has an id and a method; a notification a method and no id; a
// response (the client answering a server request) an id and no method, and is ignored.
struct Message {
  enum class Kind { kRequest, kNotification, kResponse };
  Kind kind = Kind::kNotification;
  Json id;  // string or integer, kept as sent so the reply echoes it exactly
  std::string method;
  Json params;  // an object (absent params read as {})
};

// What is wrong with a line that is not a usable message, and the error reply it deserves
// (`id` null when none could be read; JSON-RPC says such errors are answered with id null).
struct FramingError {
  int code = kParseError;
  std::string message;
  Json id;
};

// Parses one line. Never throws; a line of whitespace is neither a message nor an error.
struct Parsed {
  std::optional<Message> message;
  std::optional<FramingError> error;
};
Parsed parseMessage(std::string_view line);

// The reply lines.
Json resultMessage(const Json& id, Json result);
Json errorMessage(const Json& id, int code, std::string_view message, Json data = nullptr);
Json notificationMessage(std::string_view method, Json params);

// The single place a message leaves the server: one line per message, written whole under a
// mutex so that concurrent tool calls never interleave bytes. Invalid UTF-8 in a value (a tool's
// output) is replaced, not thrown on. A failed write (the client went away) turns the writer
// off; the reader sees EOF soon after.
class LineWriter {
 public:
  explicit LineWriter(int fd) : fd_(fd) {}
  // [thread-safe] false once the peer is gone.
  bool write(const Json& message);
  // [thread-safe] The same for a message already serialized on one line (no '\n' in it).
  bool writeLine(std::string_view line);

 private:
  std::mutex mutex_;
  int fd_;
  bool broken_ = false;
};

// Splits a byte stream into lines. A line longer than `max_line` is dropped whole (its bytes
// are skipped up to the next newline) and reported once, so a runaway peer cannot grow memory.
class LineReader {
 public:
  explicit LineReader(int fd, size_t max_line = size_t{64} << 20U) : fd_(fd), max_(max_line) {}
  // The next line without its "\n" (a trailing "\r" is dropped too); nullopt at EOF or on a read
  // error. `overlong` is set when lines were dropped since the last call.
  std::optional<std::string> next(bool& overlong);

 private:
  int fd_;
  size_t max_;
  std::string buffer_;
  size_t scanned_ = 0;  // bytes of buffer_ known to hold no newline
  bool skipping_ = false;
  bool eof_ = false;
};

}  // namespace oe::mcp

// Newline-delimited JSON-RPC framing for `oe mcp`.
#include "oe/mcp/framing.hpp"

#include <unistd.h>

#include <cerrno>

#include "proc_kit/subprocess.hpp"

namespace oe::mcp {
namespace {

bool isValidId(const Json& id) { return id.is_string() || id.is_number_integer(); }

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return {};
  }
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

}  // namespace

Parsed parseMessage(std::string_view line) {
  Parsed out;
  line = trim(line);
  if (line.empty()) {
    return out;
  }
  Json doc = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    out.error = FramingError{kParseError, "Parse error: the line is not JSON", nullptr};
    return out;
  }
  if (doc.is_array()) {
    // MCP 2025-06-18 removed JSON-RPC batching; no current client sends one.
    out.error =
        FramingError{kInvalidRequest, "Invalid Request: batches are not supported", nullptr};
    return out;
  }
  if (!doc.is_object()) {
    out.error =
        FramingError{kInvalidRequest, "Invalid Request: a message is a JSON object", nullptr};
    return out;
  }
  const auto id_it = doc.find("id");
  const bool has_id = id_it != doc.end() && !id_it->is_null();
  if (has_id && !isValidId(*id_it)) {
    out.error = FramingError{kInvalidRequest, "Invalid Request: id must be a string or an integer",
                             nullptr};
    return out;
  }
  const Json id = has_id ? *id_it : Json();
  if (doc.value("jsonrpc", Json()) != "2.0") {
    out.error = FramingError{kInvalidRequest, "Invalid Request: jsonrpc must be \"2.0\"", id};
    return out;
  }
  const auto method_it = doc.find("method");
  if (method_it == doc.end()) {
    if (has_id && (doc.contains("result") || doc.contains("error"))) {
      out.message = Message{Message::Kind::kResponse, id, "", Json::object()};
      return out;
    }
    out.error = FramingError{kInvalidRequest, "Invalid Request: no method", id};
    return out;
  }
  if (!method_it->is_string()) {
    out.error = FramingError{kInvalidRequest, "Invalid Request: method must be a string", id};
    return out;
  }
  Message message;
  message.kind = has_id ? Message::Kind::kRequest : Message::Kind::kNotification;
  message.id = id;
  message.method = method_it->get<std::string>();
  const auto params_it = doc.find("params");
  if (params_it == doc.end() || params_it->is_null()) {
    message.params = Json::object();
  } else if (params_it->is_object()) {
    message.params = std::move(*params_it);
  } else if (has_id) {
    out.error = FramingError{kInvalidParams, "Invalid params: params must be an object", id};
    return out;
  } else {
    message.params = Json::object();  // a notification is never answered, even when malformed
  }
  out.message = std::move(message);
  return out;
}

Json resultMessage(const Json& id, Json result) {
  return Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

Json errorMessage(const Json& id, int code, std::string_view message, Json data) {
  Json error = {{"code", code}, {"message", std::string(message)}};
  if (!data.is_null()) {
    error["data"] = std::move(data);
  }
  return Json{{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

Json notificationMessage(std::string_view method, Json params) {
  return Json{{"jsonrpc", "2.0"}, {"method", std::string(method)}, {"params", std::move(params)}};
}

bool LineWriter::write(const Json& message) {
  // dump() escapes every control character, so the line holds no raw newline.
  return writeLine(message.dump(-1, ' ', false, Json::error_handler_t::replace));
}

bool LineWriter::writeLine(std::string_view text) {
  std::string line;
  line.reserve(text.size() + 1);
  line += text;
  line += '\n';
  std::lock_guard lock(mutex_);
  if (broken_) {
    return false;
  }
  // A reader gone away shows as EPIPE here, not as a SIGPIPE that ends the process.
  prockit::SigpipeBlock sigpipe_guard;
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      broken_ = true;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

std::optional<std::string> LineReader::next(bool& overlong) {
  overlong = false;
  while (true) {
    const auto newline = buffer_.find('\n', scanned_);
    if (newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      scanned_ = 0;
      if (skipping_ || line.size() > max_) {
        overlong = overlong || !skipping_;  // (one that began earlier was reported then)
        skipping_ = false;                  // the tail of an overlong line: dropped with it
        continue;
      }
      if (!line.empty() && line.back() == '\r') {
        line.pop_back();
      }
      return line;
    }
    scanned_ = buffer_.size();
    if (buffer_.size() > max_) {
      buffer_.clear();
      scanned_ = 0;
      skipping_ = true;
      overlong = true;
    }
    if (eof_) {
      if (buffer_.empty() || skipping_) {
        return std::nullopt;
      }
      std::string line = std::move(buffer_);  // a last line without its newline
      buffer_.clear();
      scanned_ = 0;
      return line;
    }
    char chunk[65536];
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      eof_ = true;
      continue;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace oe::mcp

// See mcp_protocol.hpp. Parsing never throws: whatever a server prints, a line is classified.
#include "mcp_protocol.hpp"

#include <array>
#include <utility>

namespace oe::dataset {
namespace {

constexpr std::array<std::string_view, 5> kSupportedVersions = {
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"};

std::string asLine(const OrderedJson& message) {
  std::string text = message.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
  text += '\n';
  return text;
}

// JavaScript truthiness of a mimeType, as upstream's `item.mimeType ? {mimeType} : {}` reads it.
bool truthy(const OrderedJson& value) {
  switch (value.type()) {
    case OrderedJson::value_t::null:
    case OrderedJson::value_t::discarded:
      return false;
    case OrderedJson::value_t::boolean:
      return value.get<bool>();
    case OrderedJson::value_t::string:
      return !value.get_ref<const std::string&>().empty();
    case OrderedJson::value_t::number_integer:
    case OrderedJson::value_t::number_unsigned:
    case OrderedJson::value_t::number_float:
      return value.get<double>() != 0.0;  // NaN cannot come from JSON
    default:
      return true;  // objects and arrays
  }
}

OrderedJson withMimeType(const char* key, const OrderedJson& value, const OrderedJson& item) {
  OrderedJson row = OrderedJson::object();
  row[key] = value;
  if (auto it = item.find("mimeType"); it != item.end() && truthy(*it)) {
    row["mimeType"] = *it;
  }
  return row;
}

std::string errorText(const OrderedJson& error) {
  std::string code = "?";
  std::string message;
  if (error.is_object()) {
    if (auto it = error.find("code"); it != error.end() && it->is_number()) {
      code = it->dump();
    }
    if (auto it = error.find("message"); it != error.end() && it->is_string()) {
      message = it->get<std::string>();
    }
  } else {
    message = error.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
  }
  // The TypeScript SDK's servers already prefix their messages with "MCP error <code>: ".
  if (message.starts_with("MCP error ")) {
    return message;
  }
  return "MCP error " + code + ": " + message;
}

}  // namespace

bool isSupportedMcpVersion(std::string_view version) noexcept {
  for (const std::string_view known : kSupportedVersions) {
    if (known == version) {
      return true;
    }
  }
  return false;
}

McpIncoming parseMcpLine(std::string_view text) {
  McpIncoming in;
  OrderedJson message = OrderedJson::parse(withoutBom(text), nullptr, false);
  if (message.is_discarded() || !message.is_object()) {
    return in;  // a JSON-RPC batch (gone since 2025-06-18) is noise too
  }
  const auto id = message.find("id");
  const bool has_id = id != message.end() && (id->is_string() || id->is_number());
  if (auto method = message.find("method"); method != message.end()) {
    if (!method->is_string()) {
      return in;
    }
    in.method = method->get<std::string>();
    in.kind = has_id ? McpIncoming::Kind::kRequest : McpIncoming::Kind::kNotification;
    if (has_id) {
      in.id = *id;
    }
    return in;
  }
  if (!has_id) {
    return in;
  }
  if (auto error = message.find("error"); error != message.end()) {
    in.kind = McpIncoming::Kind::kResponse;
    in.id = *id;
    in.is_error = true;
    in.error = errorText(*error);
    return in;
  }
  if (auto result = message.find("result"); result != message.end()) {
    in.kind = McpIncoming::Kind::kResponse;
    in.id = *id;
    in.result = std::move(*result);
  }
  return in;
}

std::string mcpRequest(int64_t id, std::string_view method, const OrderedJson& params) {
  OrderedJson message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  message["params"] = params;
  return asLine(message);
}

std::string mcpNotification(std::string_view method) {
  return asLine({{"jsonrpc", "2.0"}, {"method", method}});
}

std::string mcpAnswerToServer(const McpIncoming& request) {
  OrderedJson answer = {{"jsonrpc", "2.0"}, {"id", request.id}};
  if (request.method == "ping") {
    answer["result"] = OrderedJson::object();
  } else {
    answer["error"] = {{"code", -32601}, {"message", "Method not found: " + request.method}};
  }
  return asLine(answer);
}

OrderedJson mcpContentsToRows(const OrderedJson& contents) {
  OrderedJson rows = OrderedJson::array();
  for (const OrderedJson& item : contents) {
    const auto text = item.is_object() ? item.find("text") : item.end();
    if (item.is_object() && text != item.end() && text->is_string()) {
      const std::string_view trimmed = jsTrim(text->get_ref<const std::string&>());
      if (trimmed.starts_with('[') || trimmed.starts_with('{')) {
        OrderedJson parsed = OrderedJson::parse(trimmed, nullptr, false);
        if (!parsed.is_discarded()) {
          if (parsed.is_array()) {
            for (OrderedJson& element : parsed) {
              rows.push_back(std::move(element));
            }
          } else {
            rows.push_back(std::move(parsed));
          }
          continue;
        }
      }
      rows.push_back(withMimeType("text", *text, item));
      continue;
    }
    const auto blob = item.is_object() ? item.find("blob") : item.end();
    if (item.is_object() && blob != item.end() && blob->is_string()) {
      rows.push_back(withMimeType("blob", *blob, item));
      continue;
    }
    rows.push_back(item);
  }
  return rows;
}

}  // namespace oe::dataset

// Tool input and response shaping: see tool_io.hpp.
#include "tool_io.hpp"

#include <cctype>
#include <cmath>
#include <optional>
#include <utility>

namespace oe::tool {
namespace {

std::string dumpCompact(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// nlohmann prefixes its messages with "[json.exception.parse_error.101] "; users need the rest.
std::string parseErrorText(const std::exception& error) {
  std::string text = error.what();
  if (!text.empty() && text.front() == '[') {
    const size_t end = text.find("] ");
    if (end != std::string::npos) {
      text.erase(0, end + 2);
    }
  }
  return text;
}

bool isTruthy(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
    case Json::value_t::discarded:
      return false;
    case Json::value_t::boolean:
      return value.get<bool>();
    case Json::value_t::number_integer:
      return value.get<int64_t>() != 0;
    case Json::value_t::number_unsigned:
      return value.get<uint64_t>() != 0;
    case Json::value_t::number_float: {
      const double number = value.get<double>();
      return number != 0.0 && !std::isnan(number);
    }
    case Json::value_t::string:
      return !value.get_ref<const std::string&>().empty();
    default:
      return true;
  }
}

const Json* member(const Json& object, const char* key) {
  if (!object.is_object()) {
    return nullptr;
  }
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// A compact JSON value at text[i] whose dump is its own text: no whitespace, ASCII only,
// strings with only the escapes nlohmann writes in short form, integers only. Returns the index
// after it, or npos for anything else (the caller then takes the parse-and-dump path, so this
// scanner only has to be right about what it accepts). Objects are taken as they are: the host
// dumps nlohmann objects, which cannot hold a key twice.
size_t skipCanonical(std::string_view text, size_t i, int depth) {
  constexpr size_t kNo = std::string_view::npos;
  if (i >= text.size() || depth > 64) {
    return kNo;
  }
  const char c = text[i];
  if (c == '"') {
    for (++i; i < text.size(); ++i) {
      const auto b = static_cast<unsigned char>(text[i]);
      if (b == '"') {
        return i + 1;
      }
      if (b < 0x20 || b >= 0x80) {
        return kNo;
      }
      if (b == '\\') {
        if (++i >= text.size() || std::string_view("\"\\bfnrt").find(text[i]) == kNo) {
          return kNo;
        }
      }
    }
    return kNo;
  }
  if (c == '{' || c == '[') {
    const char close = c == '{' ? '}' : ']';
    ++i;
    if (i < text.size() && text[i] == close) {
      return i + 1;
    }
    while (true) {
      if (c == '{') {
        if (i >= text.size() || text[i] != '"') {
          return kNo;
        }
        i = skipCanonical(text, i, depth + 1);
        if (i == kNo || i >= text.size() || text[i] != ':') {
          return kNo;
        }
        ++i;
      }
      i = skipCanonical(text, i, depth + 1);
      if (i == kNo || i >= text.size()) {
        return kNo;
      }
      if (text[i] == close) {
        return i + 1;
      }
      if (text[i] != ',') {
        return kNo;
      }
      ++i;
    }
  }
  for (std::string_view literal : {"true", "false", "null"}) {
    if (text.substr(i, literal.size()) == literal) {
      return i + literal.size();
    }
  }
  // -?(0|[1-9][0-9]*), at most 18 digits (no float, no -0: those may not survive a re-dump).
  size_t j = i;
  if (text[j] == '-') {
    ++j;
  }
  const size_t digits_start = j;
  while (j < text.size() && text[j] >= '0' && text[j] <= '9') {
    ++j;
  }
  const size_t digits = j - digits_start;
  const bool leading_zero = digits > 0 && text[digits_start] == '0' && (digits > 1 || j - i > 1);
  if (digits == 0 || digits > 18 || leading_zero) {
    return kNo;
  }
  if (j < text.size() && (text[j] == '.' || text[j] == 'e' || text[j] == 'E')) {
    return kNo;
  }
  return j;
}

// The fast path of buildToolInput: the tool input spliced from the request's own text, when
// the request is canonical compact JSON (what the host sends) and args does not itself hold
// _edge_inputs or _state. nullopt: take the general path.
std::optional<std::string> spliceToolInput(std::string_view request) {
  constexpr size_t kNo = std::string_view::npos;
  if (request.size() < 2 || request.front() != '{') {
    return std::nullopt;
  }
  std::string_view args;
  std::string_view edges;
  std::string_view state;
  size_t i = 1;
  if (request[i] != '}') {
    while (true) {
      const size_t key_end = skipCanonical(request, i, 1);
      if (key_end == kNo || request[i] != '"' || key_end >= request.size() ||
          request[key_end] != ':') {
        return std::nullopt;
      }
      const std::string_view key = request.substr(i, key_end - i);
      const size_t value_end = skipCanonical(request, key_end + 1, 1);
      if (value_end == kNo || value_end >= request.size()) {
        return std::nullopt;
      }
      const std::string_view value = request.substr(key_end + 1, value_end - key_end - 1);
      std::string_view* slot = key == "\"args\""          ? &args
                               : key == "\"edge_inputs\"" ? &edges
                               : key == "\"state_view\""  ? &state
                                                          : nullptr;
      if (slot != nullptr) {
        if (!slot->empty()) {
          return std::nullopt;  // a repeated member: let the parser decide
        }
        *slot = value;
      }
      i = value_end;
      if (request[i] == '}') {
        break;
      }
      if (request[i] != ',') {
        return std::nullopt;
      }
      ++i;
    }
  }
  if (i + 1 != request.size()) {
    return std::nullopt;
  }
  if (args.empty() || args == "null") {
    args = "{}";
  }
  if (args.front() != '{' || args.find("\"_edge_inputs\"") != kNo ||
      args.find("\"_state\"") != kNo) {
    return std::nullopt;  // not an object (an error to report), or keys the input overrides
  }
  if (edges.empty() || edges == "null") {
    edges = "{}";
  }
  if (state.empty() || state == "null") {
    state = "{}";
  }
  std::string input;
  input.reserve(args.size() + edges.size() + state.size() + 32);
  input.append(args, 0, args.size() - 1);
  if (args.size() > 2) {
    input += ',';
  }
  input += "\"_edge_inputs\":";
  input += edges;
  input += ",\"_state\":";
  input += state;
  input += '}';
  return input;
}

// Calls `member(key, value)` for each member of the canonical object at text[0] (key without
// quotes, value as text). False when text is not such an object or `member` returns false.
template <class Member>
bool forEachMember(std::string_view text, Member&& member) {
  constexpr size_t kNo = std::string_view::npos;
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') {
    return false;
  }
  size_t i = 1;
  if (text[i] == '}') {
    return i + 1 == text.size();
  }
  while (true) {
    const size_t key_end = skipCanonical(text, i, 1);
    if (key_end == kNo || text[i] != '"' || key_end >= text.size() || text[key_end] != ':') {
      return false;
    }
    const size_t value_end = skipCanonical(text, key_end + 1, 1);
    if (value_end == kNo || value_end >= text.size()) {
      return false;
    }
    if (!member(text.substr(i + 1, key_end - i - 2),
                text.substr(key_end + 1, value_end - key_end - 1))) {
      return false;
    }
    i = value_end;
    if (text[i] == '}') {
      return i + 1 == text.size();
    }
    if (text[i] != ',') {
      return false;
    }
    ++i;
  }
}

// The content of a canonical JSON string without escapes; nullopt for anything else.
std::optional<std::string> plainString(std::string_view value) {
  if (value.size() < 2 || value.front() != '"' || value.find('\\') != std::string_view::npos) {
    return std::nullopt;
  }
  return std::string(value.substr(1, value.size() - 2));
}

}  // namespace

std::optional<NodeConfig> scanNodeConfig(std::string_view config_json) {
  NodeConfig out;
  bool has_node = false;
  bool has_impl = false;
  const bool ok = forEachMember(config_json, [&](std::string_view key, std::string_view value) {
    if (key == "experience_dir") {
      auto dir = plainString(value);
      out.experience_dir = dir ? std::move(*dir) : std::string();
      return dir.has_value();
    }
    if (key == "sandbox") {
      return false;  // a policy is in force: the general reading takes it (parseNodeConfig)
    }
    if (key != "node") {
      return true;
    }
    has_node = true;
    return forEachMember(value, [&](std::string_view field, std::string_view text) {
      if (field != "id" && field != "impl") {
        return true;
      }
      auto plain = plainString(text);
      if (!plain) {
        return false;
      }
      if (field == "id") {
        out.id = std::move(*plain);
      } else {
        out.impl = std::move(*plain);
        has_impl = true;
      }
      return true;
    });
  });
  if (!ok || !has_node || !has_impl || out.impl.empty()) {
    return std::nullopt;
  }
  return out;
}

std::string preview(std::string_view text, size_t limit) {
  if (text.size() <= limit) {
    return std::string(text);
  }
  size_t cut = limit;
  // Step back over UTF-8 continuation bytes so the preview stays valid text.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0U) == 0x80U) {
    --cut;
  }
  return std::string(text.substr(0, cut)) + "...";
}

Expected<std::string> buildToolInput(std::string_view request_json, const ToolIdentity& who) {
  // The host's request is already compact JSON: splicing it costs a scan instead of a parse
  // into a DOM and a dump (most of a native tool's per-call cost).
  if (auto spliced = spliceToolInput(request_json)) {
    return std::move(*spliced);
  }
  return buildToolInputParsed(request_json, who);
}

Expected<std::string> buildToolInputParsed(std::string_view request_json, const ToolIdentity& who) {
  Json request;
  try {
    request = Json::parse(request_json);
  } catch (const Json::exception& error) {
    return fail(OE_INVALID_ARGUMENT, "Tool \"" + who.id +
                                         "\": the host sent an invocation request that is not "
                                         "valid JSON (" +
                                         parseErrorText(error) + ")");
  }
  if (!request.is_object()) {
    return fail(
        OE_INVALID_ARGUMENT,
        "Tool \"" + who.id + "\": the host sent an invocation request that is not an object");
  }
  Json input = Json::object();
  if (auto it = request.find("args"); it != request.end() && !it->is_null()) {
    if (!it->is_object()) {
      return fail(OE_INVALID_ARGUMENT, "Tool \"" + who.id + "\": args must be an object, got " +
                                           std::string(it->type_name()));
    }
    input = std::move(*it);
  }
  auto take = [&request](const char* key) {
    auto it = request.find(key);
    return it == request.end() || it->is_null() ? Json::object() : std::move(*it);
  };
  input["_edge_inputs"] = take("edge_inputs");
  input["_state"] = take("state_view");
  return dumpCompact(input);
}

Expected<Json> parseToolOutput(std::string_view text, const ToolIdentity& who, Flavour flavour) {
  const char* verb = flavour == Flavour::kExecutable ? "printed" : "wrote";
  size_t first = 0;
  while (first < text.size() && std::isspace(static_cast<unsigned char>(text[first])) != 0) {
    ++first;
  }
  if (first == text.size()) {
    return fail(OE_UNKNOWN, "Tool \"" + who.id + "\" (" + who.impl + ") " + verb +
                                " output that is not JSON (the output was empty): expected a "
                                "JSON object such as {\"state_delta\": {}}");
  }
  try {
    return Json::parse(text);
  } catch (const Json::exception& error) {
    return fail(OE_UNKNOWN, "Tool \"" + who.id + "\" (" + who.impl + ") " + verb +
                                " output that is not JSON (" + parseErrorText(error) +
                                "): " + preview(text.substr(first), 200));
  }
}

Expected<std::string> toResponse(Json result, const ToolIdentity& who, Flavour flavour) {
  if (!result.is_object()) {
    switch (flavour) {
      case Flavour::kExecutable:
        return fail(OE_UNKNOWN, "Tool \"" + who.id + "\" (" + who.impl +
                                    ") must print a JSON object with at least { state_delta } "
                                    "on stdout, got " +
                                    std::string(result.type_name()));
      case Flavour::kNative:
        return fail(OE_UNKNOWN, "Tool \"" + who.id + "\" (" + who.impl +
                                    ") must write a JSON object with at least { state_delta }, "
                                    "got " +
                                    std::string(result.type_name()));
      default:
        return fail(OE_UNKNOWN, "Tool \"" + who.id +
                                    "\" default export must return an object with at least "
                                    "{ state_delta }");
    }
  }
  const Json* delta = member(result, "state_delta");
  if (delta == nullptr || delta->is_null()) {
    return fail(OE_UNKNOWN, "Tool \"" + who.id +
                                "\" returned no state_delta; return { state_delta: {} } when the "
                                "tool writes nothing");
  }
  if (!delta->is_object()) {
    return fail(OE_UNKNOWN, "Tool \"" + who.id +
                                "\" returned a state_delta that is not an object (" +
                                std::string(delta->type_name()) +
                                "); return { state_delta: { <field>: <value> } }");
  }
  Json response = Json::object();
  response["state_delta"] = std::move(result["state_delta"]);
  if (auto it = result.find("edge_output"); it != result.end()) {
    response["edge_output"] = std::move(*it);
  }
  if (auto it = result.find("metrics"); it != result.end() && isTruthy(*it)) {
    response["metrics"] = std::move(*it);
  }
  return dumpCompact(response);
}

}  // namespace oe::tool

// Tool input and response shaping: see tool_io.hpp.
#include "tool_io.hpp"

#include <cctype>
#include <cmath>
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

}  // namespace

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

// See stand_in.hpp.
#include "oe/llm/stand_in.hpp"

#include <algorithm>
#include <string>

namespace oe::llm {
namespace {

// Recursion and size bounds: a schema is outside input, and a self-referencing $ref or a
// minItems of a billion must not take the host down.
constexpr int kMaxDepth = 32;
constexpr int64_t kMaxItems = 16;
constexpr int64_t kMaxStringLength = 256;
// Values built in all: two self-references per level would otherwise double at every level.
constexpr int kMaxValues = 10000;

struct Builder {
  const Json& root;
  int left = kMaxValues;
};

const Json* resolveRef(const Json& root, const std::string& ref) {
  if (!ref.starts_with("#")) {
    return nullptr;
  }
  const Json* at = &root;
  size_t pos = 1;
  while (pos < ref.size()) {
    if (ref[pos] != '/') {
      return nullptr;
    }
    const size_t next = ref.find('/', pos + 1);
    std::string segment =
        ref.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    for (size_t i = 0; (i = segment.find('~', i)) != std::string::npos; ++i) {
      if (i + 1 < segment.size()) {
        segment.replace(i, 2, segment[i + 1] == '1' ? "/" : "~");
      }
    }
    if (!at->is_object() || !at->contains(segment)) {
      return nullptr;
    }
    at = &(*at)[segment];
    pos = next == std::string::npos ? ref.size() : next;
  }
  return at;
}

// `object[key]`, or null when `object` is not an object or has no such member (value() would
// throw on a schema that is a string where an object belongs).
const Json& member(const Json& object, const std::string& key) {
  static const Json kNull;
  if (!object.is_object()) {
    return kNull;
  }
  auto it = object.find(key);
  return it != object.end() ? *it : kNull;
}

int64_t bound(const Json& schema, const char* key, int64_t fallback, int64_t max) {
  auto it = schema.find(key);
  if (it == schema.end() || !it->is_number()) {
    return fallback;
  }
  return std::clamp<int64_t>(static_cast<int64_t>(it->get<double>()), 0, max);
}

Json instance(Builder& b, const Json& schema, int depth);

Json typed(Builder& b, const Json& schema, const std::string& type, int depth) {
  if (type == "null") {
    return nullptr;
  }
  if (type == "boolean") {
    return false;
  }
  if (type == "integer" || type == "number") {
    double value = 0;
    if (auto it = schema.find("minimum"); it != schema.end() && it->is_number()) {
      value = it->get<double>();
    } else if (auto ex = schema.find("exclusiveMinimum"); ex != schema.end() && ex->is_number()) {
      value = ex->get<double>() + 1;
    } else if (auto max = schema.find("maximum"); max != schema.end() && max->is_number()) {
      value = std::min(0.0, max->get<double>());
    }
    if (type == "integer" && value != static_cast<double>(static_cast<int64_t>(value))) {
      value = static_cast<double>(static_cast<int64_t>(value) + (value > 0 ? 1 : 0));
    }
    if (type == "integer") {
      return static_cast<int64_t>(value);
    }
    return value;
  }
  if (type == "string") {
    return std::string(static_cast<size_t>(bound(schema, "minLength", 0, kMaxStringLength)), 'x');
  }
  if (type == "array") {
    Json out = Json::array();
    const int64_t n = bound(schema, "minItems", 0, kMaxItems);
    const Json& items = member(schema, "items");
    for (int64_t i = 0; i < n; ++i) {
      out.push_back(instance(b, items, depth + 1));
    }
    return out;
  }
  if (type == "object") {
    Json out = Json::object();
    const Json& properties = member(schema, "properties");
    const Json& required = member(schema, "required");
    if (required.is_array() && !required.empty()) {
      for (const auto& name : required) {
        if (name.is_string()) {
          const std::string key = name.get<std::string>();
          out[key] = instance(b, member(properties, key), depth + 1);
        }
      }
    } else if (properties.is_object()) {
      for (const auto& [key, sub] : properties.items()) {
        out[key] = instance(b, sub, depth + 1);
      }
    }
    return out;
  }
  return nullptr;
}

Json instance(Builder& b, const Json& schema, int depth) {
  if (!schema.is_object() || depth > kMaxDepth || --b.left < 0) {
    return nullptr;
  }
  if (auto it = schema.find("const"); it != schema.end()) {
    return *it;
  }
  if (auto it = schema.find("enum"); it != schema.end() && it->is_array() && !it->empty()) {
    return it->front();
  }
  if (auto it = schema.find("$ref"); it != schema.end() && it->is_string()) {
    const Json* target = resolveRef(b.root, it->get<std::string>());
    return target != nullptr ? instance(b, *target, depth + 1) : Json();
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (auto it = schema.find(key); it != schema.end() && it->is_array() && !it->empty()) {
      return instance(b, it->front(), depth + 1);
    }
  }
  if (auto it = schema.find("allOf"); it != schema.end() && it->is_array()) {
    Json merged = Json::object();
    for (const auto& part : *it) {
      Json value = instance(b, part, depth + 1);
      if (value.is_object()) {
        merged.update(value);
      } else if (!value.is_null()) {
        return value;
      }
    }
    return merged;
  }
  auto type = schema.find("type");
  if (type != schema.end() && type->is_string()) {
    return typed(b, schema, type->get<std::string>(), depth);
  }
  if (type != schema.end() && type->is_array() && !type->empty() && type->front().is_string()) {
    return typed(b, schema, type->front().get<std::string>(), depth);
  }
  if (schema.contains("properties") || schema.contains("required")) {
    return typed(b, schema, "object", depth);
  }
  return nullptr;
}

}  // namespace

Json standInInstance(const Json& schema) {
  Builder b{schema};
  return instance(b, schema, 0);
}

Json standInResponse(const Json& request) {
  Json response = Json::object();
  response["text"] = "";
  const Json& tools = member(request, "tools");
  if (tools.is_array() && !tools.empty() && tools.front().is_object()) {
    const Json& tool = tools.front();
    Json call = Json::object();
    call["name"] = stringField(tool, "name", "structured_output");
    Json input = standInInstance(member(tool, "input_schema"));
    call["input"] = input.is_object() ? input : Json::object();
    response["tool_calls"] = Json::array({call});
    response["stop_reason"] = "tool_use";
  } else {
    response["text"] = "stand-in answer";
    response["stop_reason"] = "stop";
  }
  response["usage"] = {{"input_tokens", 0}, {"output_tokens", 0}};
  response["model"] = "oe-stand-in";
  return response;
}

Json standInCliOutcome(std::string_view stdout_text) {
  return Json{{"exit_code", 0},
              {"stdout", std::string(stdout_text)},
              {"stderr_head", ""},
              {"stderr_tail", ""}};
}

std::string standInCliStdout(const Json& node_spec) {
  if (!node_spec.is_object() || stringField(node_spec, "output_format", "text") != "json") {
    return "stand-in answer";
  }
  if (auto schema = node_spec.find("schema"); schema != node_spec.end() && schema->is_object()) {
    return standInInstance(*schema).dump();
  }
  Json out = Json::object();
  for (const auto& field : member(node_spec, "writes")) {
    if (field.is_string()) {
      out[field.get<std::string>()] = nullptr;
    }
  }
  return out.dump();
}

}  // namespace oe::llm

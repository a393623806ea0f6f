// Parsing of the create-time config and of the fields agent and skill nodes share.
#include "llm_kit/options.hpp"

#include <cmath>
#include <filesystem>
#include <limits>
#include <utility>

namespace oe::llmkit {

namespace {

std::string describe(const Json& value) {
  std::string text = value.dump();
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

// An integer field >= `minimum`; absent gives `fallback`.
Expected<uint32_t> integerField(const Json& node, const char* key, uint32_t minimum,
                                uint32_t fallback, std::string_view who) {
  auto it = node.find(key);
  if (it == node.end()) {
    return fallback;
  }
  // YAML gives 4096 as an integer; 4096.0 counts too, as it would in JavaScript.
  double number = -1;
  if (it->is_number_integer()) {
    number = static_cast<double>(it->get<int64_t>());
  } else if (it->is_number_float() && std::floor(it->get<double>()) == it->get<double>()) {
    number = it->get<double>();
  }
  if (number < static_cast<double>(minimum) ||
      number > static_cast<double>(std::numeric_limits<uint32_t>::max())) {
    return fail(OE_INVALID_ARGUMENT, std::string(who) + ": " + key + " must be an integer >= " +
                                         std::to_string(minimum) + ", got " + describe(*it));
  }
  return static_cast<uint32_t>(number);
}

}  // namespace

Expected<NodeConfig> parseNodeConfig(std::string_view config_json, std::string_view label) {
  NodeConfig config;
  Json parsed = Json::parse(config_json, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return fail(OE_INVALID_ARGUMENT,
                std::string(label) + ": the node configuration is not a JSON object");
  }
  auto node = parsed.find("node");
  if (node == parsed.end() || !node->is_object()) {
    return fail(OE_INVALID_ARGUMENT,
                std::string(label) + ": the node configuration has no \"node\" object");
  }
  config.node = std::move(*node);
  if (auto dir = parsed.find("experience_dir"); dir != parsed.end() && dir->is_string()) {
    config.experience_dir = dir->get<std::string>();
  }
  if (auto sandbox = parsed.find("sandbox"); sandbox != parsed.end() && sandbox->is_object()) {
    config.sandbox = std::move(*sandbox);
  }
  if (config.experience_dir.empty()) {
    std::error_code ignored;
    config.experience_dir = std::filesystem::current_path(ignored).string();
  }
  return config;
}

std::string resolvePath(const std::string& experience_dir, const std::string& declared) {
  namespace fs = std::filesystem;
  const fs::path path(declared);
  return (path.is_absolute() ? path : fs::path(experience_dir) / path).lexically_normal().string();
}

Expected<std::optional<std::string>> optionalString(const Json& node, const char* key,
                                                    std::string_view who) {
  auto it = node.find(key);
  if (it == node.end() || it->is_null()) {
    return std::optional<std::string>();
  }
  if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
    return fail(OE_INVALID_ARGUMENT, std::string(who) + ": " + key +
                                         " must be a non-empty string, got " + describe(*it));
  }
  return std::optional<std::string>(it->get<std::string>());
}

Expected<LlmNodeOptions> readLlmNodeOptions(const Json& node, std::string_view kind_word) {
  LlmNodeOptions options;
  if (auto id = node.find("id"); id != node.end() && id->is_string()) {
    options.id = id->get<std::string>();
  }
  options.who = std::string(kind_word) + " \"" + options.id + "\"";

  auto model = optionalString(node, "model", options.who);
  if (!model) {
    return std::move(model).failure();
  }
  options.model = std::move(*model);
  auto max_tokens = integerField(node, "max_tokens", 1, kDefaultMaxTokens, options.who);
  if (!max_tokens) {
    return std::move(max_tokens).failure();
  }
  options.max_tokens = *max_tokens;
  auto repairs = integerField(node, "repair_attempts", 0, kDefaultRepairAttempts, options.who);
  if (!repairs) {
    return std::move(repairs).failure();
  }
  options.repair_attempts = *repairs;

  if (auto writes = node.find("writes"); writes != node.end() && writes->is_array()) {
    for (const auto& field : *writes) {
      if (field.is_string()) {
        options.writes.push_back(field.get<std::string>());
      }
    }
  }
  // Upstream: only an object `schema` turns structured output on; other values are ignored.
  if (auto schema = node.find("schema"); schema != node.end() && schema->is_object()) {
    auto compiled = OutputSchema::compile(nlohmann::json(*schema));
    if (!compiled) {
      return fail(OE_INVALID_ARGUMENT, options.who + ": schema is not a valid JSON Schema (" +
                                           compiled.failure().message +
                                           "); fix the node's schema: mapping");
    }
    options.schema = std::move(*compiled);
    options.schema_json = *schema;
  }
  return options;
}

}  // namespace oe::llmkit

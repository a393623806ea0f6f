// valijson behind OutputSchema, with its findings reworded the way AJV (upstream) words them.
#include "llm_kit/output_schema.hpp"

#include <exception>
#include <set>
#include <string_view>
#include <utility>

// Without this, valijson prints and abort()s on a malformed schema instead of throwing.
#ifndef VALIJSON_USE_EXCEPTIONS
#define VALIJSON_USE_EXCEPTIONS 1
#endif
// GCC 12 at -O3 reports a false -Wrestrict inside valijson's json_pointer string handling.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>
#pragma GCC diagnostic pop

namespace oe::llmkit {

using nlohmann::json;

struct OutputSchema::Impl {
  json document;
  valijson::Schema schema;
};

namespace {

bool startsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// Follows one local `$ref` ("#/definitions/x"); anything else is returned unchanged.
const json* deref(const json& root, const json* schema) {
  for (int hops = 0; hops < 16 && schema != nullptr && schema->is_object(); ++hops) {
    auto ref = schema->find("$ref");
    if (ref == schema->end() || !ref->is_string()) {
      return schema;
    }
    const auto& text = ref->get_ref<const std::string&>();
    if (text.empty() || text[0] != '#') {
      return schema;
    }
    try {
      const json::json_pointer pointer(text.substr(1));
      schema = root.contains(pointer) ? &root.at(pointer) : nullptr;
    } catch (const json::exception&) {
      return nullptr;
    }
  }
  return schema;
}

// The subschema for child `segment` of a value described by `schema`, or nullptr.
const json* childSchema(const json& root, const json* schema, const std::string& segment,
                        bool in_array) {
  if (schema == nullptr || !schema->is_object()) {
    return nullptr;
  }
  if (in_array) {
    auto items = schema->find("items");
    if (items != schema->end() && items->is_object()) {
      return deref(root, &*items);
    }
    if (items != schema->end() && items->is_array()) {
      size_t index = 0;
      for (char c : segment) {
        index = index * 10 + static_cast<size_t>(c - '0');
      }
      return index < items->size() ? deref(root, &(*items)[index]) : nullptr;
    }
    return nullptr;
  }
  auto props = schema->find("properties");
  if (props != schema->end() && props->is_object()) {
    if (auto it = props->find(segment); it != props->end()) {
      return deref(root, &*it);
    }
  }
  auto extra = schema->find("additionalProperties");
  return extra != schema->end() && extra->is_object() ? deref(root, &*extra) : nullptr;
}

std::string keyText(const json* schema, const char* key) {
  if (schema == nullptr || !schema->contains(key)) {
    return "?";
  }
  return (*schema)[key].dump();
}

std::string typeText(const json* schema) {
  if (schema == nullptr) {
    return "of another type";
  }
  auto type = schema->find("type");
  if (type == schema->end()) {
    return "of another type";
  }
  if (type->is_string()) {
    return type->get<std::string>();
  }
  std::string out;
  for (const auto& t : *type) {
    out += (out.empty() ? "" : ",") + (t.is_string() ? t.get<std::string>() : t.dump());
  }
  return out;
}

// The description after `prefix` up to the closing quote: valijson's `'<name>'`.
std::string quotedTail(const std::string& description, std::string_view prefix) {
  std::string rest = description.substr(prefix.size());
  return rest.substr(0, rest.find('\''));
}

// AJV's message for valijson's description; "" for wrappers that only repeat a child's failure.
std::string ajvMessage(const std::string& d, const json* schema) {
  if (startsWith(d, "Failed to validate against schema associated with property name") ||
      startsWith(d, "Failed to validate item #") || startsWith(d, "Cannot validate item #") ||
      startsWith(d, "Failed to validate against additional properties schema") ||
      startsWith(d, "Failed to validate against schema associated with pattern") ||
      startsWith(d, "Failed to validate against child schema #")) {
    return {};
  }
  if (startsWith(d, "Value type not permitted")) {
    return "must be " + typeText(schema);
  }
  constexpr std::string_view kRequired = "Missing required property '";
  if (startsWith(d, kRequired)) {
    return "must have required property '" + quotedTail(d, kRequired) + "'";
  }
  constexpr std::string_view kExtra =
      "Object contains a property that could not be validated using 'properties' or "
      "'additionalProperties' constraints: '";
  if (startsWith(d, kExtra)) {
    return "must NOT have additional properties ('" + quotedTail(d, kExtra) + "')";
  }
  if (startsWith(d, "Failed to match against any enum values")) {
    return "must be equal to one of the allowed values " + keyText(schema, "enum");
  }
  if (startsWith(d, "Failed to match expected value set by 'const'")) {
    return "must be equal to constant " + keyText(schema, "const");
  }
  if (startsWith(d, "Failed to match regex")) {
    return "must match pattern " + keyText(schema, "pattern");
  }
  if (startsWith(d, "Expected number greater than or equal to")) {
    return "must be >= " + keyText(schema, "minimum");
  }
  if (startsWith(d, "Expected number greater than")) {
    return "must be > " + keyText(schema, "exclusiveMinimum");
  }
  if (startsWith(d, "Expected number less than or equal to")) {
    return "must be <= " + keyText(schema, "maximum");
  }
  if (startsWith(d, "Expected number less than")) {
    return "must be < " + keyText(schema, "exclusiveMaximum");
  }
  if (startsWith(d, "String should be no fewer than")) {
    return "must NOT have fewer than " + keyText(schema, "minLength") + " characters";
  }
  if (startsWith(d, "String should be no more than")) {
    return "must NOT have more than " + keyText(schema, "maxLength") + " characters";
  }
  if (startsWith(d, "Array should contain no fewer than")) {
    return "must NOT have fewer than " + keyText(schema, "minItems") + " items";
  }
  if (startsWith(d, "Array should contain no more than")) {
    return "must NOT have more than " + keyText(schema, "maxItems") + " items";
  }
  if (startsWith(d, "Object should have no fewer than")) {
    return "must NOT have fewer than " + keyText(schema, "minProperties") + " properties";
  }
  if (startsWith(d, "Object should have no more than")) {
    return "must NOT have more than " + keyText(schema, "maxProperties") + " properties";
  }
  if (startsWith(d, "Elements at indexes #")) {
    return "must NOT have duplicate items";
  }
  if (d.find("anyOf") != std::string::npos) {
    return "must match a schema in anyOf";
  }
  if (startsWith(d, "Failed to validate against exactly one child schema") ||
      d.find("oneOf") != std::string::npos) {
    return "must match exactly one schema in oneOf";
  }
  return d;
}

}  // namespace

OutputSchema::OutputSchema(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OutputSchema::~OutputSchema() = default;

sdk::Expected<std::shared_ptr<const OutputSchema>> OutputSchema::compile(const json& schema) {
  auto impl = std::make_unique<Impl>();
  impl->document = schema;
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(impl->document);
    parser.populateSchema(adapter, impl->schema);
  } catch (const std::exception& error) {
    return sdk::fail(OE_INVALID_ARGUMENT, error.what());
  }
  return std::shared_ptr<const OutputSchema>(new OutputSchema(std::move(impl)));
}

bool OutputSchema::declaresProperty(const std::string& key) const {
  const json& doc = impl_->document;
  auto props = doc.find("properties");
  return props != doc.end() && props->is_object() && props->contains(key);
}

std::vector<std::string> OutputSchema::check(const json& value) const {
  std::vector<std::string> issues;
  valijson::ValidationResults results;
  try {
    valijson::Validator validator(valijson::Validator::kStrongTypes);
    valijson::adapters::NlohmannJsonAdapter target(value);
    if (validator.validate(impl_->schema, target, &results)) {
      return issues;
    }
  } catch (const std::exception& error) {
    issues.push_back(std::string("(root): could not be checked: ") + error.what());
    return issues;
  }
  const json& root = impl_->document;
  std::set<std::string> seen;
  for (const auto& error : results) {
    // context: "<root>", then "[key]" or "[index]" per level.
    std::string pointer;
    const json* schema = deref(root, &root);
    const json* at = &value;
    for (size_t i = 1; i < error.context.size(); ++i) {
      const std::string& c = error.context[i];
      std::string segment = c.size() >= 2 ? c.substr(1, c.size() - 2) : c;
      const bool in_array = at != nullptr && at->is_array();
      schema = childSchema(root, schema, segment, in_array);
      if (at != nullptr && in_array) {
        const size_t index = std::stoul(segment);
        at = index < at->size() ? &(*at)[index] : nullptr;
      } else if (at != nullptr && at->is_object() && at->contains(segment)) {
        at = &(*at)[segment];
      } else {
        at = nullptr;
      }
      json::json_pointer escaped;
      escaped.push_back(segment);  // RFC 6901 escaping of ~ and /
      pointer += escaped.to_string();
    }
    std::string message = ajvMessage(error.description, schema);
    if (message.empty()) {
      continue;
    }
    std::string line = (pointer.empty() ? std::string("(root)") : pointer) + ": " + message;
    if (seen.insert(line).second) {
      issues.push_back(std::move(line));
    }
  }
  if (issues.empty()) {  // only wrappers: still say something
    issues.emplace_back("(root): does not match the schema");
  }
  return issues;
}

}  // namespace oe::llmkit

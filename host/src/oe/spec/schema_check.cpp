// valijson behind a small interface, and the wording of its findings; see schema_check.hpp.
#include "oe/spec/schema_check.hpp"

#include <algorithm>
#include <set>

// Without this, valijson prints and abort()s on a malformed schema (a plugin's, say).
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

#include "oe/expr/js_value.hpp"
#include "oe/spec/suggest.hpp"

namespace oe::spec {

struct SchemaChecker::Impl {
  Json document;
  valijson::Schema schema;
};

namespace {

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

const Json* walkPointer(const Json& root, const std::vector<std::string>& segments) {
  const Json* cur = &root;
  for (const auto& seg : segments) {
    if (cur->is_object()) {
      auto it = cur->find(seg);
      if (it == cur->end()) {
        return nullptr;
      }
      cur = &*it;
    } else if (cur->is_array()) {
      size_t index = 0;
      for (char c : seg) {
        if (c < '0' || c > '9') {
          return nullptr;
        }
        index = index * 10 + static_cast<size_t>(c - '0');
      }
      if (seg.empty() || index >= cur->size()) {
        return nullptr;
      }
      cur = &(*cur)[index];
    } else {
      return nullptr;
    }
  }
  return cur;
}

// Follows local `$ref`s ("#/definitions/x"); a bounded number of hops guards against loops.
const Json* deref(const Json& root, const Json* schema) {
  for (int hops = 0; schema != nullptr && hops < 32; ++hops) {
    if (!schema->is_object()) {
      return schema;
    }
    auto ref = schema->find("$ref");
    if (ref == schema->end() || !ref->is_string()) {
      return schema;
    }
    const auto& text = ref->get_ref<const std::string&>();
    if (!startsWith(text, "#")) {
      return nullptr;  // remote references are not resolved
    }
    schema = walkPointer(root, splitPointer(text.substr(1)));
  }
  return nullptr;
}

const Json* childSchema(const Json& root, const Json* schema, const std::string& segment,
                        bool in_array, int depth = 0) {
  schema = deref(root, schema);
  if (schema == nullptr || !schema->is_object() || depth > 8) {
    return nullptr;
  }
  if (in_array) {
    auto items = schema->find("items");
    if (items != schema->end() && items->is_object()) {
      return deref(root, &*items);
    }
  } else {
    auto props = schema->find("properties");
    if (props != schema->end() && props->is_object()) {
      auto it = props->find(segment);
      if (it != props->end()) {
        return deref(root, &*it);
      }
    }
    auto extra = schema->find("additionalProperties");
    if (extra != schema->end() && extra->is_object()) {
      return deref(root, &*extra);
    }
  }
  for (const char* combinator : {"allOf", "anyOf", "oneOf"}) {
    auto branches = schema->find(combinator);
    if (branches == schema->end() || !branches->is_array()) {
      continue;
    }
    for (const auto& branch : *branches) {
      if (const Json* found = childSchema(root, &branch, segment, in_array, depth + 1)) {
        return found;
      }
    }
  }
  return nullptr;
}

std::string typeWord(std::string_view type) {
  if (type == "string") {
    return "a string";
  }
  if (type == "integer") {
    return "an integer";
  }
  if (type == "number") {
    return "a number";
  }
  if (type == "boolean") {
    return "true or false";
  }
  if (type == "object") {
    return "a mapping";
  }
  if (type == "array") {
    return "a list";
  }
  return std::string(type);
}

std::string describeValue(const Json* value) {
  if (value == nullptr) {
    return "nothing";
  }
  if (value->is_object()) {
    return "a mapping";
  }
  if (value->is_array()) {
    return "a list";
  }
  std::string text = expr::stringify(*value);
  if (text.size() > 60) {
    text = text.substr(0, 57) + "...";
  }
  return text;
}

std::string listValues(const Json& values) {
  std::string out;
  for (const auto& v : values) {
    if (!out.empty()) {
      out += ", ";
    }
    out += v.is_string() ? v.get<std::string>() : expr::stringify(v);
  }
  return out;
}

std::string numberText(const Json& schema, const char* key) {
  auto it = schema.find(key);
  return it == schema.end() ? std::string("?") : expr::stringify(*it);
}

// valijson's wording, rewritten with what the schema at that place asks for.
std::string explain(const std::string& description, const Json* schema, const Json* value) {
  const std::string got = describeValue(value);
  if (schema == nullptr || !schema->is_object()) {
    return description;
  }
  if (startsWith(description, "Value type not permitted")) {
    auto type = schema->find("type");
    std::string want;
    if (type != schema->end() && type->is_string()) {
      want = typeWord(type->get<std::string>());
    } else if (type != schema->end() && type->is_array()) {
      for (const auto& t : *type) {
        want += (want.empty() ? "" : " or ") + typeWord(t.is_string() ? t.get<std::string>() : "");
      }
    }
    return want.empty() ? "has the wrong type, got " + got : "must be " + want + ", got " + got;
  }
  if (startsWith(description, "Failed to match against any enum values") &&
      schema->contains("enum")) {
    return "must be one of: " + listValues((*schema)["enum"]) + "; got " + got;
  }
  if (startsWith(description, "Failed to match expected value set by 'const'") &&
      schema->contains("const")) {
    return "must be " + describeValue(&(*schema)["const"]) + ", got " + got;
  }
  if (startsWith(description, "Failed to match regex") && schema->contains("pattern")) {
    return "must match the pattern " + describeValue(&(*schema)["pattern"]) + ", got " + got;
  }
  if (startsWith(description, "Expected number greater than or equal to")) {
    return "must be at least " + numberText(*schema, "minimum") + ", got " + got;
  }
  if (startsWith(description, "Expected number greater than")) {
    return "must be greater than " +
           numberText(*schema,
                      schema->contains("exclusiveMinimum") ? "exclusiveMinimum" : "minimum") +
           ", got " + got;
  }
  if (startsWith(description, "Expected number less than or equal to")) {
    return "must be at most " + numberText(*schema, "maximum") + ", got " + got;
  }
  if (startsWith(description, "Expected number less than")) {
    return "must be less than " +
           numberText(*schema,
                      schema->contains("exclusiveMaximum") ? "exclusiveMaximum" : "maximum") +
           ", got " + got;
  }
  if (startsWith(description, "String should be no fewer than")) {
    std::string n = numberText(*schema, "minLength");
    return n == "1" ? "must not be empty" : "must be at least " + n + " characters long";
  }
  if (startsWith(description, "String should be no more than")) {
    return "must be at most " + numberText(*schema, "maxLength") + " characters long";
  }
  if (startsWith(description, "Array should contain no fewer than")) {
    std::string n = numberText(*schema, "minItems");
    return "must have at least " + n + (n == "1" ? " item" : " items");
  }
  if (startsWith(description, "Array should contain no more than")) {
    return "must have at most " + numberText(*schema, "maxItems") + " items";
  }
  if (description.find("oneOf") != std::string::npos ||
      description.find("anyOf") != std::string::npos ||
      startsWith(description, "Failed to validate against exactly one child schema")) {
    return "does not match any of the allowed forms";
  }
  return description;
}

// valijson reports a failed child both where it fails and, again, at every parent.
bool isWrapper(const std::string& d) {
  return startsWith(d, "Failed to validate against schema associated with property name") ||
         startsWith(d, "Failed to validate item #") ||
         startsWith(d, "Failed to validate against additional properties schema") ||
         startsWith(d, "Failed to validate against schema associated with pattern") ||
         // allOf / if-then: a plugin's spec schema per source type (dataset); the inner error
         // already says what is wrong.
         startsWith(d, "Failed to validate against a conditional schema") ||
         startsWith(d, "Failed to validate against child schema #");
}

std::string joinPointer(const std::vector<std::string>& segments) {
  std::string out;
  for (const auto& s : segments) {
    appendPointerSegment(out, s);
  }
  return out;
}

}  // namespace

std::vector<std::string> splitPointer(const std::string& pointer) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < pointer.size()) {
    if (pointer[i] != '/') {
      break;
    }
    size_t next = pointer.find('/', i + 1);
    std::string seg = pointer.substr(i + 1, next == std::string::npos ? next : next - i - 1);
    std::string unescaped;
    for (size_t k = 0; k < seg.size(); ++k) {
      if (seg[k] == '~' && k + 1 < seg.size() && (seg[k + 1] == '0' || seg[k + 1] == '1')) {
        unescaped += seg[k + 1] == '0' ? '~' : '/';
        ++k;
      } else {
        unescaped += seg[k];
      }
    }
    out.push_back(std::move(unescaped));
    if (next == std::string::npos) {
      break;
    }
    i = next;
  }
  return out;
}

void appendPointerSegment(std::string& pointer, std::string_view segment) {
  pointer += '/';
  for (char c : segment) {
    if (c == '~') {
      pointer += "~0";
    } else if (c == '/') {
      pointer += "~1";
    } else {
      pointer += c;
    }
  }
}

Result<SchemaChecker> SchemaChecker::compile(const Json& schema) {
  auto impl = std::make_shared<Impl>();
  impl->document = schema;
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(impl->document);
    parser.populateSchema(adapter, impl->schema);
  } catch (const std::exception& e) {
    return makeError(std::string("invalid JSON Schema: ") + e.what());
  }
  return SchemaChecker(std::move(impl));
}

const Json& SchemaChecker::schema() const { return impl_->document; }

const Json* SchemaChecker::schemaAt(const Json& root, const std::string& pointer) {
  // Without the instance we cannot tell arrays from objects: try `items` for numeric segments.
  const Json* schema = deref(root, &root);
  for (const auto& seg : splitPointer(pointer)) {
    if (schema == nullptr) {
      return nullptr;
    }
    bool numeric = !seg.empty() &&
                   std::all_of(seg.begin(), seg.end(), [](char c) { return c >= '0' && c <= '9'; });
    const Json* next = numeric ? childSchema(root, schema, seg, true) : nullptr;
    schema = next != nullptr ? next : childSchema(root, schema, seg, false);
  }
  return schema;
}

std::vector<std::string> SchemaChecker::knownKeys(const Json& root, const Json& schema) {
  std::vector<std::string> keys;
  std::vector<const Json*> todo{deref(root, &schema)};
  for (size_t i = 0; i < todo.size() && i < 64; ++i) {
    const Json* s = todo[i];
    if (s == nullptr || !s->is_object()) {
      continue;
    }
    auto props = s->find("properties");
    if (props != s->end() && props->is_object()) {
      for (auto it = props->begin(); it != props->end(); ++it) {
        if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) {
          keys.push_back(it.key());
        }
      }
    }
    for (const char* combinator : {"allOf", "anyOf", "oneOf"}) {
      auto branches = s->find(combinator);
      if (branches != s->end() && branches->is_array()) {
        for (const auto& b : *branches) {
          todo.push_back(deref(root, &b));
        }
      }
    }
  }
  return keys;
}

std::vector<SchemaIssue> SchemaChecker::check(const Json& value) const {
  std::vector<SchemaIssue> issues;
  valijson::ValidationResults results;
  try {
    valijson::Validator validator(valijson::Validator::kStrongTypes);
    valijson::adapters::NlohmannJsonAdapter target(value);
    if (validator.validate(impl_->schema, target, &results)) {
      return issues;
    }
  } catch (const std::exception& e) {
    issues.push_back(SchemaIssue{"", std::string("could not be checked: ") + e.what(), false});
    return issues;
  }
  std::set<std::pair<std::string, std::string>> seen;
  const Json& root = impl_->document;
  for (const auto& error : results) {
    if (isWrapper(error.description)) {
      continue;
    }
    // context: "<root>", then "[key]" or "[index]" per level.
    std::vector<std::string> segments;
    const Json* schema = deref(root, &root);
    const Json* at = &value;
    for (size_t i = 1; i < error.context.size(); ++i) {
      const std::string& c = error.context[i];
      std::string seg = c.size() >= 2 ? c.substr(1, c.size() - 2) : c;
      bool in_array = at != nullptr && at->is_array();
      schema = schema != nullptr ? childSchema(root, schema, seg, in_array) : nullptr;
      segments.push_back(seg);
      at = at != nullptr ? walkPointer(*at, {seg}) : nullptr;
    }
    std::string pointer = joinPointer(segments);
    if (startsWith(error.description, "Object contains a property that could not be validated")) {
      // valijson names only the first unknown key: report every one, each with a suggestion.
      std::vector<std::string> known =
          schema != nullptr ? knownKeys(root, *schema) : std::vector<std::string>{};
      if (at != nullptr && at->is_object()) {
        for (auto it = at->begin(); it != at->end(); ++it) {
          if (std::find(known.begin(), known.end(), it.key()) != known.end()) {
            continue;
          }
          std::string key_pointer = pointer;
          appendPointerSegment(key_pointer, it.key());
          std::string message = "unknown key \"" + it.key() + "\"" + didYouMean(it.key(), known);
          if (seen.emplace(key_pointer, message).second) {
            issues.push_back(SchemaIssue{key_pointer, std::move(message), true});
          }
        }
      }
      continue;
    }
    if (startsWith(error.description, "Missing required property '")) {
      std::string key = error.description.substr(27);
      key = key.substr(0, key.find('\''));
      std::string message = "missing required key \"" + key + "\"";
      if (seen.emplace(pointer, message).second) {
        issues.push_back(SchemaIssue{pointer, std::move(message), false});
      }
      continue;
    }
    std::string message = explain(error.description, schema, at);
    if (seen.emplace(pointer, message).second) {
      issues.push_back(SchemaIssue{pointer, std::move(message), false});
    }
  }
  return issues;
}

}  // namespace oe::spec

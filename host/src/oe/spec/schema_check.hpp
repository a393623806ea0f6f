// Checks JSON values against a JSON Schema (draft-07, valijson) and says what is wrong in words,
// with the JSON pointer of each value at fault. Used for the experience structure and for the
// schema each node kind's plugin supplies.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"

namespace oe::spec {

struct SchemaIssue {
  std::string pointer;  // relative to the checked value; "" = the value itself
  std::string message;  // e.g. `must be a string, got 3` or `missing required key "impl"`
  bool at_key = false;  // about the key at `pointer` (an unknown key), not its value
};

class SchemaChecker {
 public:
  // Parses the schema once; the checker is then immutable and can be shared and reused.
  static Result<SchemaChecker> compile(const Json& schema);

  // Every problem at once; valijson's "could not validate item/property" wrappers are dropped
  // and each unknown key of a closed object is reported on its own with a suggestion.
  [[nodiscard]] std::vector<SchemaIssue> check(const Json& value) const;

  [[nodiscard]] const Json& schema() const;

  // The subschema that describes the value at `pointer` (following properties, items,
  // additionalProperties and local $refs); nullptr when the schema does not say.
  [[nodiscard]] static const Json* schemaAt(const Json& root, const std::string& pointer);

  // The property names an object subschema lists (its `properties`, through allOf/anyOf/oneOf).
  [[nodiscard]] static std::vector<std::string> knownKeys(const Json& root, const Json& schema);

 private:
  struct Impl;
  explicit SchemaChecker(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// "/graph/nodes/2" -> {"graph", "nodes", "2"} (RFC 6901 unescaping) and back.
[[nodiscard]] std::vector<std::string> splitPointer(const std::string& pointer);
void appendPointerSegment(std::string& pointer, std::string_view segment);

}  // namespace oe::spec

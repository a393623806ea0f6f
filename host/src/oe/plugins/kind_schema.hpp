// The check a kind's spec_schema_json passes before the host uses it: it comes from a plugin, and
// what compiles and applies JSON Schemas (valijson, and oe's own walkers) recurses, so a schema
// nested without end or referring to itself in place would take the process down where it is
// used (`oe validate`, `oe run`, `oe schema`). The loader refuses such a plugin instead.
#pragma once

#include <cstddef>
#include <string_view>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"

namespace oe::plugins {

// JSON containers inside one another: far above what a kind's schema needs, far below what
// exhausts a thread's stack in the recursive code that reads schemas.
inline constexpr size_t kMaxSchemaJsonDepth = 128;
// Subschemas inside one another, counting the $refs followed to get there.
inline constexpr size_t kMaxSchemaDepth = 64;

// The schema parsed, or why it cannot be used: not JSON, not an object, nested too deep, a $ref
// that points nowhere or that leads back to itself in place (without descending into a property
// or an item, so applying it never ends), or not a draft-07 schema valijson can compile. The
// message starts with what is wrong ("is not JSON: ...") and names the place in the schema.
[[nodiscard]] Result<Json> checkKindSchema(std::string_view text);

}  // namespace oe::plugins

// JavaScript value semantics the upstream languages inherit (truthiness, ToNumber, number and
// JSON text, property lookup on a path segment), shared by $.path, when/until and {{...}}.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oe/common/json.hpp"

namespace oe::expr {

// The value a path segment yields: a value inside the walked document (no copy), a computed
// `length` (arrays and strings have one, like JS), or undefined.
struct Lookup {
  const Json* ref = nullptr;
  int64_t length = -1;  // >= 0: the result is this number

  [[nodiscard]] bool defined() const { return ref != nullptr || length >= 0; }
  [[nodiscard]] static Lookup of(const Json& value) { return Lookup{&value, -1}; }
  [[nodiscard]] static Lookup undefined() { return Lookup{}; }
};

// `current[segment]` as JS evaluates it on a JSON value: object member, array index (canonical
// decimal), `length` of an array or string; undefined for everything else.
[[nodiscard]] Lookup lookupSegment(const Lookup& current, std::string_view segment);

// Length of a UTF-8 string in UTF-16 code units (JS `string.length`).
[[nodiscard]] int64_t utf16Length(std::string_view utf8);

// JS Boolean(v) for a JSON value.
[[nodiscard]] bool truthy(const Json& value);

// JS ToNumber for a JSON value (arrays and objects through their string form); NaN when none.
[[nodiscard]] double toNumber(const Json& value);
[[nodiscard]] double stringToNumber(std::string_view text);

// JS Number.prototype.toString() (shortest round-trip digits, JS exponent rules).
[[nodiscard]] std::string numberToString(double value);

// JS String(v) for arrays/objects/primitives: arrays join with ",", objects "[object Object]".
[[nodiscard]] std::string toJsString(const Json& value);

// JSON.stringify(v) without indentation: numbers in JS form (3.0 -> 3), non-finite -> null,
// strings escaped like JS. Key order is the JSON object's (sorted), JS keeps insertion order.
[[nodiscard]] std::string stringify(const Json& value);
void stringifyTo(const Json& value, std::string& out);
// JSON.stringify(v, null, indent): as stringify, with `indent` spaces per level, one member or
// element per line, ": " after keys, and `[]` / `{}` for empty ones. indent 0 is stringify.
[[nodiscard]] std::string stringifyIndented(const Json& value, int indent);
// JSON.stringify of an object whose members are `members` in that order (JS keeps insertion
// order, a Json object sorts its keys), formatted as stringifyIndented. Keys must be distinct.
[[nodiscard]] std::string stringifyIndentedMembers(
    const std::vector<std::pair<std::string_view, const Json*>>& members, int indent);

}  // namespace oe::expr

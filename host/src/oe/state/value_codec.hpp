// How the state store checks and encodes values (internal to oe_state): upstream's type checks
// and their messages, the stored text of a value, and the append encoding of history rows (D17).
// Pure functions, inline so that the store's write path compiles as it did in one file.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/spec/experience.hpp"

namespace oe::state {

inline constexpr size_t kMaxJsonInMessage = 200;

inline const char* typeName(spec::FieldType type) {
  switch (type) {
    case spec::FieldType::kString: return "string";
    case spec::FieldType::kNumber: return "number";
    case spec::FieldType::kBoolean: return "boolean";
    case spec::FieldType::kObject: return "object";
    case spec::FieldType::kArray: return "array";
    case spec::FieldType::kNull: return "null";
    case spec::FieldType::kAny: return "any";
    default: return "unknown";
  }
}

// Upstream's checks (§3.6): kAny ($ref-only or no `type`) and kNull are never checked.
inline bool typeMatches(spec::FieldType type, const Json& value) {
  switch (type) {
    case spec::FieldType::kString: return value.is_string();
    case spec::FieldType::kNumber: return value.is_number();
    case spec::FieldType::kBoolean: return value.is_boolean();
    case spec::FieldType::kObject: return value.is_object();
    case spec::FieldType::kArray: return value.is_array();
    default: return true;
  }
}

// The JS-style name of a value's type, as upstream's message shows it.
inline const char* valueTypeName(const Json& value) {
  if (value.is_number()) {
    return "number";
  }
  return value.type_name();
}

// JSON for an error message, cut at ~200 bytes on a UTF-8 character boundary.
inline std::string shortJson(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() <= kMaxJsonInMessage) {
    return text;
  }
  size_t cut = kMaxJsonInMessage - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  text.resize(cut);
  text += "...";
  return text;
}

// jsonQuoted without its string: ids, keys and hex input keys need no escaping and are copied.
inline void appendQuoted(std::string& out, std::string_view s) {
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x80 || c == '"' || c == '\\') {
      out += jsonQuoted(s);
      return;
    }
  }
  out += '"';
  out += s;
  out += '"';
}

inline std::string inQuotes(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  out += s;
  out += '"';
  return out;
}

// Serialises a value the way it is stored; invalid UTF-8 in a string is an error for the node,
// not an exception.
inline Result<std::string> toText(const Json& value, std::string_view node_id,
                                  std::string_view field) {
  try {
    return value.dump();
  } catch (const Json::exception& e) {
    return makeError("Node " + inQuotes(node_id) + " wrote a value to field " + inQuotes(field) +
                     " that cannot be stored as JSON (" + e.what() +
                     "). Fix the node's output (strings must be UTF-8).");
  }
}

// D17: the value_old of a history row that records an append onto an array of `length`
// elements. An array field's real old value is never an object, so a reader cannot mistake it.
inline std::string appendMarker(size_t length) {
  return "{\"$oe_append\":{\"from_length\":" + std::to_string(length) + "}}";
}

// Appends the items of each append row (array texts) to `value`, the array text they were
// appended onto; a value that is not an array counts as [] (the merge rule).
template <class RowPtrs>
inline void appendItems(std::string& value, const RowPtrs& appends) {
  while (!value.empty() && (value.back() == ' ' || value.back() == '\n' || value.back() == '\t' ||
                            value.back() == '\r')) {
    value.pop_back();
  }
  if (value.size() < 2 || value.front() != '[' || value.back() != ']') {
    value = "[]";
  }
  bool empty = value.find_first_not_of(" \n\t\r", 1) == value.size() - 1;
  size_t extra = 0;
  for (const auto* a : appends) {
    extra += a->new_text.size();
  }
  value.reserve(value.size() + extra);
  for (const auto* a : appends) {
    const std::string& items = a->new_text;
    if (items.size() <= 2) {
      continue;  // "[]"
    }
    if (empty) {
      value = items;
      empty = false;
      continue;
    }
    value.pop_back();
    value += ',';
    value.append(items, 1, std::string::npos);
  }
}

// The from_length of an append marker (D17); nullopt for any other value.
inline std::optional<size_t> appendedOnto(const Json& old) {
  if (!old.is_object() || old.size() != 1) {
    return std::nullopt;
  }
  const auto it = old.find("$oe_append");
  if (it == old.end() || !it->is_object()) {
    return std::nullopt;
  }
  const auto len = it->find("from_length");
  if (len == it->end() || !len->is_number_unsigned()) {
    return std::nullopt;
  }
  return len->get<size_t>();
}

inline Json parseStored(std::string_view text) {
  Json value = Json::parse(text, nullptr, false);
  // A row edited by hand into invalid JSON is shown as its raw text rather than dropped.
  return value.is_discarded() ? Json(std::string(text)) : value;
}

}  // namespace oe::state

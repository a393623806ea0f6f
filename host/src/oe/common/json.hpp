// The JSON type used across the host. nlohmann's default object is a sorted std::map, which
// makes dump() canonical (cache keys rely on this).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace oe {
using Json = nlohmann::json;

// `s` as a JSON string literal, quotes included; invalid UTF-8 is replaced, not thrown on.
inline std::string jsonQuoted(std::string_view s) {
  // The common case (ids, keys, timestamps) needs no escaping: the same text as the dump below.
  bool plain = true;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x80 || c == '"' || c == '\\') {
      plain = false;
      break;
    }
  }
  if (plain) {
    return std::string(1, '"').append(s).append(1, '"');
  }
  return Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The string at `key` of `object`, or `fallback` when `object` is not an object or the member
// is absent or not a string. For JSON oe did not write itself (model answers, provider
// responses, files a user may edit): nlohmann's value() throws there when a member has another
// type, and a hostile answer must not abort the process.
inline std::string stringField(const Json& object, std::string_view key,
                               std::string_view fallback = {}) {
  if (object.is_object()) {
    if (auto it = object.find(key); it != object.end() && it->is_string()) {
      return it->get<std::string>();
    }
  }
  return std::string(fallback);
}
}  // namespace oe

// Writing rows as JSON text directly (no DOM per value), and the JavaScript-isms the upstream
// messages use.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace oe::dataset {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// Appends `text` as a JSON string literal (quotes included). Bytes that are not valid UTF-8
// become U+FFFD, so the result always parses.
void appendJsonString(std::string& out, std::string_view text);

// JavaScript's `typeof` of a parsed JSON value ("object" for null, arrays and objects), as
// upstream's messages print it.
[[nodiscard]] const char* jsTypeOf(const OrderedJson& value) noexcept;

// The useful part of a JSON parse error: "line L, column C: <what>" (`with_line`) or
// "column C: <what>" (for one line of a JSONL file).
[[nodiscard]] std::string parseProblem(const nlohmann::json::parse_error& error, bool with_line);

// JavaScript's String.prototype.trim for the whitespace JSON texts hold: ASCII whitespace and a
// byte order mark (at the start) go.
[[nodiscard]] std::string_view jsTrim(std::string_view text) noexcept;

// Text with a UTF-8 byte order mark removed from its start.
[[nodiscard]] std::string_view withoutBom(std::string_view text) noexcept;

}  // namespace oe::dataset

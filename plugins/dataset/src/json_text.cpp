// JSON string escaping with UTF-8 repair, and helpers shared by the sources.
#include "json_text.hpp"

#include <array>
#include <cstdint>

namespace oe::dataset {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence starting at text[i], or 0 when it is not one.
size_t utf8Length(std::string_view text, size_t i) noexcept {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  size_t len = 0;
  uint32_t min = 0;
  uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1FU;
    min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0FU;
    min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07U;
    min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > text.size()) {
    return 0;
  }
  for (size_t k = 1; k < len; ++k) {
    const unsigned char cont = byte(i + k);
    if ((cont & 0xC0U) != 0x80U) {
      return 0;
    }
    cp = (cp << 6U) | (cont & 0x3FU);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return len;
}

}  // namespace

void appendJsonString(std::string& out, std::string_view text) {
  static constexpr std::array<char, 16> kHex = {'0', '1', '2', '3', '4', '5', '6', '7',
                                                '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  out.reserve(out.size() + text.size() + 2);
  out += '"';
  size_t run_start = 0;  // plain bytes are copied in runs, not one by one
  size_t i = 0;
  const auto flush = [&] { out.append(text.substr(run_start, i - run_start)); };
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      const size_t len = utf8Length(text, i);
      if (len > 0) {
        i += len;
        continue;
      }
      flush();
      out += kReplacement;
      run_start = ++i;
      continue;
    }
    flush();
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        out += "\\u00";
        out += kHex[c >> 4U];
        out += kHex[c & 0x0FU];
        break;
    }
    run_start = ++i;
  }
  flush();
  out += '"';
}

const char* jsTypeOf(const OrderedJson& value) noexcept {
  switch (value.type()) {
    case OrderedJson::value_t::string:
      return "string";
    case OrderedJson::value_t::boolean:
      return "boolean";
    case OrderedJson::value_t::number_integer:
    case OrderedJson::value_t::number_unsigned:
    case OrderedJson::value_t::number_float:
      return "number";
    default:
      return "object";  // typeof null, [] and {} are all "object" in JavaScript
  }
}

std::string parseProblem(const nlohmann::json::parse_error& error, bool with_line) {
  // what(): "[json.exception.parse_error.101] parse error at line 1, column 3: syntax error ..."
  std::string text = error.what();
  const std::string_view marker = with_line ? "parse error at " : "parse error at line 1, ";
  if (const size_t at = text.find(marker); at != std::string::npos) {
    return text.substr(at + marker.size());
  }
  return text;
}

std::string_view withoutBom(std::string_view text) noexcept {
  return text.starts_with("\xEF\xBB\xBF") ? text.substr(3) : text;
}

std::string_view jsTrim(std::string_view text) noexcept {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  if (text.starts_with("\xEF\xBB\xBF")) {
    text.remove_prefix(3);
  }
  const size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) {
    return {};
  }
  const size_t end = text.find_last_not_of(kSpace);
  return text.substr(begin, end - begin + 1);
}

}  // namespace oe::dataset

// JavaScript value semantics on JSON values; see js_value.hpp.
#include "oe/expr/js_value.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace oe::expr {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A canonical array index as JS property keys spell it: "0", "12" (no sign, no leading zero).
bool parseIndex(std::string_view s, size_t& out) {
  if (s.empty() || s.size() > 15 || (s.size() > 1 && s[0] == '0')) {
    return false;
  }
  size_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') {
      return false;
    }
    v = v * 10 + static_cast<size_t>(c - '0');
  }
  out = v;
  return true;
}

bool isJsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

void appendEscaped(std::string_view s, std::string& out) {
  static constexpr std::array<char, 16> kHex = {'0', '1', '2', '3', '4', '5', '6', '7',
                                                '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
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
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

}  // namespace

Lookup lookupSegment(const Lookup& current, std::string_view segment) {
  if (current.ref == nullptr) {
    return Lookup::undefined();  // undefined, or a number (a length): no properties we model
  }
  const Json& v = *current.ref;
  if (v.is_object()) {
    auto it = v.find(segment);
    return it == v.end() ? Lookup::undefined() : Lookup::of(*it);
  }
  if (v.is_array()) {
    if (segment == "length") {
      return Lookup{nullptr, static_cast<int64_t>(v.size())};
    }
    size_t index = 0;
    if (parseIndex(segment, index) && index < v.size()) {
      return Lookup::of(v[index]);
    }
    return Lookup::undefined();
  }
  if (v.is_string() && segment == "length") {
    return Lookup{nullptr, utf16Length(v.get_ref<const std::string&>())};
  }
  return Lookup::undefined();
}

int64_t utf16Length(std::string_view utf8) {
  int64_t n = 0;
  for (char ch : utf8) {
    auto c = static_cast<unsigned char>(ch);
    if ((c & 0xC0) != 0x80) {
      ++n;  // a lead byte starts a code point
    }
    if (c >= 0xF0) {
      ++n;  // outside the BMP: a surrogate pair in UTF-16
    }
  }
  return n;
}

bool truthy(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
    case Json::value_t::discarded:
      return false;
    case Json::value_t::boolean:
      return value.get<bool>();
    case Json::value_t::number_integer:
      return value.get<int64_t>() != 0;
    case Json::value_t::number_unsigned:
      return value.get<uint64_t>() != 0;
    case Json::value_t::number_float: {
      double d = value.get<double>();
      return d != 0.0 && !std::isnan(d);
    }
    case Json::value_t::string:
      return !value.get_ref<const std::string&>().empty();
    default:
      return true;  // arrays, objects, binary
  }
}

double stringToNumber(std::string_view text) {
  size_t b = 0;
  size_t e = text.size();
  while (b < e && isJsSpace(text[b])) {
    ++b;
  }
  while (e > b && isJsSpace(text[e - 1])) {
    --e;
  }
  std::string_view s = text.substr(b, e - b);
  if (s.empty()) {
    return 0.0;
  }
  if (s.size() > 2 && s[0] == '0' &&
      (s[1] == 'x' || s[1] == 'X' || s[1] == 'o' || s[1] == 'O' || s[1] == 'b' || s[1] == 'B')) {
    int base = (s[1] == 'x' || s[1] == 'X') ? 16 : (s[1] == 'o' || s[1] == 'O') ? 8 : 2;
    uint64_t v = 0;
    auto r = std::from_chars(s.data() + 2, s.data() + s.size(), v, base);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
      return kNaN;
    }
    return static_cast<double>(v);
  }
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "Infinity") {
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  if (s.empty() || !((s[0] >= '0' && s[0] <= '9') || s[0] == '.')) {
    return kNaN;  // also rejects from_chars' "inf"/"nan" spellings, which JS does not accept
  }
  double v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    return kNaN;
  }
  return negative ? -v : v;
}

double toNumber(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return 0.0;
    case Json::value_t::boolean:
      return value.get<bool>() ? 1.0 : 0.0;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return value.get<double>();
    case Json::value_t::string:
      return stringToNumber(value.get_ref<const std::string&>());
    case Json::value_t::array:
      return stringToNumber(toJsString(value));
    default:
      return kNaN;
  }
}

std::string numberToString(double value) {
  if (std::isnan(value)) {
    return "NaN";
  }
  if (std::isinf(value)) {
    return value < 0 ? "-Infinity" : "Infinity";
  }
  if (value == 0) {
    return "0";  // also -0, as JS prints it
  }
  std::array<char, 64> buf{};
  auto r = std::to_chars(buf.data(), buf.data() + buf.size(), value, std::chars_format::scientific);
  std::string_view sci(buf.data(), static_cast<size_t>(r.ptr - buf.data()));
  // sci is "[-]d[.ddd]e[+-]xx": split into sign, digits and decimal exponent.
  std::string out;
  if (sci[0] == '-') {
    out += '-';
    sci.remove_prefix(1);
  }
  size_t epos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, epos)) {
    if (c != '.') {
      digits += c;
    }
  }
  int exp10 = 0;
  std::string_view exp_text = sci.substr(epos + 1);
  if (!exp_text.empty() && exp_text[0] == '+') {
    exp_text.remove_prefix(1);
  }
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exp10);
  const int k = static_cast<int>(digits.size());
  const int n = exp10 + 1;  // position of the decimal point relative to the digits
  if (k <= n && n <= 21) {
    out += digits;
    out.append(static_cast<size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out += digits.substr(0, static_cast<size_t>(n));
    out += '.';
    out += digits.substr(static_cast<size_t>(n));
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-n), '0');
    out += digits;
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out += digits.substr(1);
    }
    out += 'e';
    out += (n - 1) < 0 ? '-' : '+';
    out += std::to_string(std::abs(n - 1));
  }
  return out;
}

std::string toJsString(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case Json::value_t::number_integer:
      return std::to_string(value.get<int64_t>());
    case Json::value_t::number_unsigned:
      return std::to_string(value.get<uint64_t>());
    case Json::value_t::number_float:
      return numberToString(value.get<double>());
    case Json::value_t::string:
      return value.get<std::string>();
    case Json::value_t::array: {
      std::string out;
      bool first = true;
      for (const auto& el : value) {
        if (!first) {
          out += ',';
        }
        first = false;
        if (!el.is_null()) {
          out += toJsString(el);  // null and undefined elements join as ""
        }
      }
      return out;
    }
    default:
      return "[object Object]";
  }
}

void stringifyTo(const Json& value, std::string& out) {
  switch (value.type()) {
    case Json::value_t::null:
    case Json::value_t::discarded:
      out += "null";
      break;
    case Json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      break;
    case Json::value_t::number_integer:
      out += std::to_string(value.get<int64_t>());
      break;
    case Json::value_t::number_unsigned:
      out += std::to_string(value.get<uint64_t>());
      break;
    case Json::value_t::number_float: {
      double d = value.get<double>();
      out += std::isfinite(d) ? numberToString(d) : std::string("null");
      break;
    }
    case Json::value_t::string:
      appendEscaped(value.get_ref<const std::string&>(), out);
      break;
    case Json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& el : value) {
        if (!first) {
          out += ',';
        }
        first = false;
        stringifyTo(el, out);
      }
      out += ']';
      break;
    }
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, el] : value.items()) {
        if (!first) {
          out += ',';
        }
        first = false;
        appendEscaped(key, out);
        out += ':';
        stringifyTo(el, out);
      }
      out += '}';
      break;
    }
    default:
      out += "null";  // binary values never come from YAML or JSON text
  }
}

std::string stringify(const Json& value) {
  std::string out;
  stringifyTo(value, out);
  return out;
}

namespace {

void stringifyIndentedTo(const Json& value, int indent, int depth, std::string& out) {
  const bool container = value.is_array() || value.is_object();
  if (!container || value.empty()) {
    stringifyTo(value, out);
    return;
  }
  const auto newline = [&](int level) {
    out += '\n';
    out.append(static_cast<size_t>(indent) * static_cast<size_t>(level), ' ');
  };
  out += value.is_array() ? '[' : '{';
  bool first = true;
  for (const auto& [key, el] : value.items()) {
    if (!first) {
      out += ',';
    }
    first = false;
    newline(depth + 1);
    if (value.is_object()) {
      appendEscaped(key, out);
      out += ": ";
    }
    stringifyIndentedTo(el, indent, depth + 1, out);
  }
  newline(depth);
  out += value.is_array() ? ']' : '}';
}

}  // namespace

std::string stringifyIndentedMembers(
    const std::vector<std::pair<std::string_view, const Json*>>& members, int indent) {
  std::string out;
  if (members.empty()) {
    return "{}";
  }
  indent = std::min(std::max(indent, 0), 10);
  out += '{';
  bool first = true;
  for (const auto& [key, value] : members) {
    if (!first) {
      out += ',';
    }
    first = false;
    if (indent > 0) {
      out += '\n';
      out.append(static_cast<size_t>(indent), ' ');
    }
    appendEscaped(key, out);
    out += indent > 0 ? ": " : ":";
    if (indent > 0) {
      stringifyIndentedTo(*value, indent, 1, out);
    } else {
      stringifyTo(*value, out);
    }
  }
  if (indent > 0) {
    out += '\n';
  }
  out += '}';
  return out;
}

std::string stringifyIndented(const Json& value, int indent) {
  std::string out;
  if (indent <= 0) {
    stringifyTo(value, out);
  } else {
    stringifyIndentedTo(value, std::min(indent, 10), 0, out);  // JS caps the indent at 10
  }
  return out;
}

}  // namespace oe::expr

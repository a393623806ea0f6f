// Prompt placeholder substitution; see interpolate.hpp.
#include "oe/expr/interpolate.hpp"

#include "oe/expr/ident.hpp"
#include "oe/expr/js_value.hpp"

namespace oe::expr {

namespace {

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

struct Placeholder {
  size_t end = 0;        // one past the closing "}}"
  std::string_view key;  // e.g. "$item.id"
};

// Matches `{{ key }}` at `pos` (which points at "{{"); nullopt-like end == 0 when it does not.
Placeholder match(std::string_view s, size_t pos) {
  size_t i = pos + 2;
  while (i < s.size() && isSpace(s[i])) {
    ++i;
  }
  size_t key_start = i;
  if (i < s.size() && s[i] == '$') {
    ++i;
  }
  if (i >= s.size() || !isIdentStart(s[i])) {
    return {};
  }
  while (i < s.size() && isIdentChar(s[i])) {
    ++i;
  }
  // D3: dotted segments (object keys, array indexes, `length`).
  while (i + 1 < s.size() && s[i] == '.' && isIdentChar(s[i + 1])) {
    i += 2;
    while (i < s.size() && isIdentChar(s[i])) {
      ++i;
    }
  }
  size_t key_end = i;
  while (i < s.size() && isSpace(s[i])) {
    ++i;
  }
  if (i + 1 >= s.size() || s[i] != '}' || s[i + 1] != '}') {
    return {};
  }
  return Placeholder{i + 2, s.substr(key_start, key_end - key_start)};
}

Lookup find(const Json& values, std::string_view key) {
  size_t dot = key.find('.');
  std::string_view head = key.substr(0, dot);
  if (!values.is_object()) {
    return Lookup::undefined();
  }
  auto it = values.find(head);
  if (it == values.end()) {
    return Lookup::undefined();
  }
  Lookup cur = Lookup::of(*it);
  while (dot != std::string_view::npos && cur.defined()) {
    size_t next = key.find('.', dot + 1);
    std::string_view seg =
        key.substr(dot + 1, next == std::string_view::npos ? next : next - dot - 1);
    cur = lookupSegment(cur, seg);
    dot = next;
  }
  return cur;
}

}  // namespace

Result<std::string> interpolate(std::string_view tmpl, const Json& values, bool strict) {
  std::string out;
  out.reserve(tmpl.size());
  size_t copied = 0;  // tmpl[0, copied) is already in `out`
  size_t pos = tmpl.find("{{");
  while (pos != std::string_view::npos) {
    Placeholder p = match(tmpl, pos);
    if (p.end == 0) {
      pos = tmpl.find("{{", pos + 1);  // like a global regex: retry from the next character
      continue;
    }
    Lookup found = find(values, p.key);
    if (!found.defined()) {
      if (strict) {
        return makeError("Prompt placeholder \"{{" + std::string(p.key) +
                         "}}\" has no value in the input bundle");
      }
      pos = tmpl.find("{{", p.end);  // left verbatim
      continue;
    }
    out.append(tmpl.substr(copied, pos - copied));
    if (found.ref == nullptr) {
      out += std::to_string(found.length);
    } else if (found.ref->is_string()) {
      out += found.ref->get_ref<const std::string&>();
    } else {
      stringifyTo(*found.ref, out);
    }
    copied = p.end;
    pos = tmpl.find("{{", p.end);
  }
  out.append(tmpl.substr(copied));
  return out;
}

}  // namespace oe::expr

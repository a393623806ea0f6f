// `$.path` parsing and resolution; see state_path.hpp.
#include "oe/expr/state_path.hpp"

#include "oe/expr/ident.hpp"

namespace oe::expr {

std::optional<StatePath> StatePath::parse(std::string_view s) {
  if (s.size() < 3 || s[0] != '$' || s[1] != '.') {
    return std::nullopt;
  }
  std::vector<std::string> segments;
  size_t i = 2;
  while (true) {
    size_t start = i;
    if (i >= s.size() || !isIdentStart(s[i])) {
      return std::nullopt;
    }
    while (i < s.size() && isIdentChar(s[i])) {
      ++i;
    }
    segments.emplace_back(s.substr(start, i - start));
    if (i == s.size()) {
      break;
    }
    if (s[i] != '.') {
      return std::nullopt;
    }
    ++i;
  }
  return StatePath(std::string(s), std::move(segments));
}

bool StatePath::looksLikePath(std::string_view s) {
  return s.size() >= 2 && s[0] == '$' && s[1] == '.' && !parse(s).has_value();
}

Lookup StatePath::lookup(const StateReader& state) const {
  const Json* root = state.field(segments_.front());
  if (root == nullptr) {
    return Lookup::undefined();
  }
  Lookup cur = Lookup::of(*root);
  for (size_t i = 1; i < segments_.size() && cur.defined(); ++i) {
    cur = lookupSegment(cur, segments_[i]);
  }
  return cur;
}

std::optional<Json> StatePath::resolve(const StateReader& state) const {
  Lookup found = lookup(state);
  if (found.ref != nullptr) {
    return *found.ref;
  }
  if (found.length >= 0) {
    return Json(found.length);
  }
  return std::nullopt;
}

}  // namespace oe::expr

// `$.field.sub` values (reference §2.2): the string form that args, for_each.source and
// pipelines.items use to read state. Parsed once; resolved against a StateReader each time.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/expr/js_value.hpp"
#include "oe/expr/state_reader.hpp"

namespace oe::expr {

class StatePath {
 public:
  // Whole-string match of ^\$\.[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$; nullopt when
  // `s` is not a path, which makes it a plain literal (`$.items.0`, `$.a[0]` included).
  static std::optional<StatePath> parse(std::string_view s);

  // True when `s` looks like an attempt at a path (starts with "$.") but does not parse:
  // `oe validate` warns about those, since they silently stay literal strings.
  static bool looksLikePath(std::string_view s);

  // The state field the path starts at ("$.a.b" -> "a").
  [[nodiscard]] const std::string& field() const { return segments_.front(); }
  [[nodiscard]] const std::vector<std::string>& segments() const { return segments_; }
  [[nodiscard]] const std::string& text() const { return text_; }

  // The value (deep copy); nullopt = undefined. Objects are walked by key; `length` on an array
  // or a string gives its length, like JS.
  [[nodiscard]] std::optional<Json> resolve(const StateReader& state) const;

  // The same walk without a copy (the reference stays valid while the state is unchanged).
  [[nodiscard]] Lookup lookup(const StateReader& state) const;

 private:
  StatePath(std::string text, std::vector<std::string> segments)
      : text_(std::move(text)), segments_(std::move(segments)) {}

  std::string text_;
  std::vector<std::string> segments_;  // never empty
};

}  // namespace oe::expr

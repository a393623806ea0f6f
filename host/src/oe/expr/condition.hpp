// `when:` / `until:` boolean expressions (reference §2.3, D8): compiled once (every syntax error
// is found by `oe validate`, with its column), evaluated against the state many times.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/expr/state_reader.hpp"

namespace oe::expr {

namespace detail {
struct EvalValue;  // a sub-expression's value while evaluating (condition.cpp)
}  // namespace detail

// Grammar (low to high precedence):
//   or   := and ('||' and)*          and := cmp ('&&' cmp)*
//   cmp  := unary [('=='|'!='|'>'|'<'|'>='|'<=') unary]      (not chained)
//   unary:= '!' unary | atom                                    (D8: `!`)
//   atom := '(' or ')' | number | 'str' | "str" | true | false | null (D8) | $.path
//         | length '(' [or] ')'
// Tokens after a complete expression are an error (D8; upstream ignored them).
class Condition {
 public:
  // Errors start with "column <N>: " (1-based byte column in `source`), then upstream's text:
  // `Unterminated string in expression: <src>`, `Unexpected character "<c>" in expression:
  // <src>`, `Unexpected identifier "<x>" without parens`, `Unexpected end of expression`,
  // `Unknown function: <fn>`, and (D8) `Unexpected token "<tok>" after the end of the expression`.
  static Result<Condition> compile(std::string_view source);

  // The value of the expression; an undefined result (a bare missing `$.path`) is a discarded
  // Json (`is_discarded()`). Never throws.
  [[nodiscard]] Json evaluate(const StateReader& state) const;

  // JS truthiness of the result, without copying any state value. Never throws.
  [[nodiscard]] bool test(const StateReader& state) const;

  [[nodiscard]] const std::string& source() const { return source_; }

  // The state fields the expression reads (first segment of each `$.path`), in order, unique.
  [[nodiscard]] const std::vector<std::string>& fields() const { return fields_; }

 private:
  enum class Op : uint8_t {
    kLiteral,
    kPath,
    kNot,
    kAnd,
    kOr,
    kEq,
    kNe,
    kGt,
    kLt,
    kGe,
    kLe,
    kLength,
  };
  struct Node {
    Op op = Op::kLiteral;
    uint32_t a = 0;        // child, or index into literals_ / paths_
    uint32_t b = 0;        // second child
    bool has_arg = false;  // kLength with an argument
  };
  class Parser;

  [[nodiscard]] detail::EvalValue eval(uint32_t node, const StateReader& state) const;
  [[nodiscard]] detail::EvalValue compare(const Node& node, const StateReader& state) const;
  [[nodiscard]] bool isNullLiteral(uint32_t node) const;

  std::string source_;
  std::vector<Node> nodes_;
  std::vector<Json> literals_;
  std::vector<std::vector<std::string>> paths_;  // segments, first = state field
  std::vector<std::string> fields_;
  uint32_t root_ = 0;
};

}  // namespace oe::expr

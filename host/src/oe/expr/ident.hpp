// Identifier characters of `$.path` segments, `{{placeholders}}` and condition names (ASCII,
// as upstream's regular expressions: [A-Za-z_][A-Za-z0-9_]*). Internal to oe_expr.
#pragma once

namespace oe::expr {

inline bool isIdentStart(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
inline bool isIdentChar(char c) { return isIdentStart(c) || (c >= '0' && c <= '9'); }

}  // namespace oe::expr

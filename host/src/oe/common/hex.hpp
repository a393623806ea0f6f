// The value of one hexadecimal digit, either case: what percent-decoding, signature headers and
// OTLP headers read.
#pragma once

namespace oe {

// 0-15, or -1 for a character that is not a hex digit.
[[nodiscard]] constexpr int hexDigitValue(char c) noexcept {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

}  // namespace oe

// libFuzzer target: the static import scanners the cache key runs on every .mjs/.js/.py tool
// (oe/cache/module_imports.hpp). Input: the first byte picks the language, the rest is the
// module's text. They must never crash, hang or read out of bounds on any text, and what they
// return must be plain strings (no NUL bytes beyond what the input held).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "oe/cache/module_imports.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1U) == 0) {
    for (const auto& specifier : oe::cache::jsImportSpecifiers(text)) {
      if (specifier.size() > text.size()) {
        __builtin_trap();  // a specifier is a piece of the text
      }
    }
  } else {
    for (const auto& import : oe::cache::pyImports(text)) {
      if (import.module.size() > text.size() || import.level < 0) {
        __builtin_trap();
      }
    }
  }
  return 0;
}

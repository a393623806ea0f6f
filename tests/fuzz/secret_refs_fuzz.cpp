// libFuzzer target: the `${secret:NAME}` reference scanner and the secret set's substitution and
// redaction, on any text a node's definition or a prompt file can hold. Invariants: every
// reference found is well-formed and in range; after substituting two known secrets and
// redacting, neither value is left in any form the redactor knows.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "oe/secrets/secret_set.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const oe::secrets::SecretSet kSet = [] {
    oe::secrets::SecretSet set;
    set.add("A", "value-AAAA");
    set.add("B_2", "x\"y\\z-BBBB");
    return set;
  }();
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  size_t last_end = 0;
  for (const oe::secrets::SecretRef& ref : oe::secrets::findReferences(text)) {
    if (ref.begin < last_end || ref.end > text.size() || ref.begin >= ref.end ||
        !text.substr(ref.begin).starts_with("${secret:") || text[ref.end - 1] != '}' ||
        !oe::secrets::isSecretName(ref.name)) {
      std::abort();
    }
    last_end = ref.end;
  }
  const size_t malformed = oe::secrets::malformedAt(text);
  if (malformed != std::string_view::npos && !text.substr(malformed).starts_with("${secret:")) {
    std::abort();
  }

  for (const bool json_string : {false, true}) {
    std::string substituted = kSet.substitute(text, json_string);
    kSet.redact(substituted);
    if (kSet.leaks(substituted)) {
      std::abort();
    }
  }
  return 0;
}

// libFuzzer target: oe-sandbox's reading of its --confinement JSON (docs/policy.md). Whatever it
// accepts must write back to the same confinement: fromJson(toJson(c)) == c.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "oe/sandbox/confinement.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const oe::Json json = oe::Json::parse(input, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return 0;
  }
  auto confinement = oe::sandbox::fromJson(json);
  if (!confinement) {
    if (confinement.error().message.empty()) {
      std::abort();  // a refusal always says what is wrong
    }
    return 0;
  }
  auto again = oe::sandbox::fromJson(oe::sandbox::toJson(*confinement));
  if (!again || !(*again == *confinement)) {
    std::abort();
  }
  return 0;
}

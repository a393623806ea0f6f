// libFuzzer target: what `oe ultra` takes from a model before it touches the disk or runs a
// draft: a synthesis answer (its file paths through the traversal guard) and an output schema
// (the smoke run's stand-in answer is built from it). Input: JSON; a synthesis-shaped object is
// read as one, any JSON value is also used as a schema; bytes that are not JSON are one path.
// Whatever the bytes, the guard either refuses a path or returns one that stays inside the
// draft folder, and the stand-in builder ends with a bounded value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "oe/llm/stand_in.hpp"
#include "oe/ultra/draft.hpp"

namespace {

void checkPath(std::string_view path) {
  auto guarded = oe::ultra::guardedPath(path);
  if (!guarded) {
    return;
  }
  const std::string& p = *guarded;
  // Inside the folder: relative, no ".." segment, not empty.
  if (p.empty() || p.front() == '/' || p == ".." || p.starts_with("../") ||
      p.find("/../") != std::string::npos || p.ends_with("/..")) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const oe::Json json = oe::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    checkPath(text);
    return 0;
  }
  if (json.is_object()) {
    const oe::ultra::Synthesis synthesis = oe::ultra::Synthesis::fromJson(json);
    for (const auto& file : synthesis.files) {
      checkPath(file.path);
    }
    (void)oe::ultra::pathProblems(synthesis);
  }
  const oe::Json value = oe::llm::standInInstance(json);
  if (value.dump().size() > (size_t{64} << 20)) {
    std::abort();  // the builder's bounds did not hold
  }
  return 0;
}

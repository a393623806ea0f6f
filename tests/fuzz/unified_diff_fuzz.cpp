// libFuzzer target: the unified-diff parser and applier behind `oe evolve` (a model writes the
// diff). Input: the original file, a line "=====", then the diff; without the separator, the
// whole input is the diff, applied to a fixed experience.yaml. Whatever the bytes, parsing and
// applying return a value or an error, and an applied patch that only adds lines keeps every
// line of the original.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "oe/evolve/unified_diff.hpp"

namespace {

constexpr std::string_view kDefaultOriginal =
    "name: demo\n"
    "version: 0.1.0\n"
    "state:\n"
    "  schema:\n"
    "    score: { type: number }\n"
    "graph:\n"
    "  nodes:\n"
    "    - id: score\n"
    "      kind: tool\n"
    "      args: { threshold: 0.5 }\n"
    "      writes: [score]\n"
    "  edges: []\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::optional<std::string> original{std::string(kDefaultOriginal)};
  std::string_view diff = input;
  if (const size_t sep = input.find("\n=====\n"); sep != std::string_view::npos) {
    original = std::string(input.substr(0, sep + 1));
    diff = input.substr(sep + 7);
  }
  auto patches = oe::evolve::parseUnifiedDiff(diff);
  if (!patches) {
    return 0;
  }
  for (const auto& patch : *patches) {
    (void)oe::evolve::safeRelativePath(patch.target());
    auto applied = oe::evolve::applyFilePatch(patch, patch.createsFile() ? std::nullopt : original);
    if (!applied || !applied->text) {
      continue;
    }
    bool adds_only = true;
    for (const auto& hunk : patch.hunks) {
      for (const auto& line : hunk.lines) {
        adds_only = adds_only && line.op != '-';
      }
    }
    if (adds_only && !patch.createsFile() && applied->text->size() + 1 < original->size()) {
      std::abort();  // adding lines never makes a file shorter (one final newline aside)
    }
  }
  return 0;
}

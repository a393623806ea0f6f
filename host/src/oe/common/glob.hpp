// Glob patterns over a folder's files (a node's `cache.inputs`): `*`, `?` and `[...]` within one
// path segment, `**` for any number of folders.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace oe {

// Empty when `pattern` is one globMatches accepts, else what is wrong with it, in words for
// an error message: empty, absolute, a `..` segment, under .openexpertise/, an unclosed `[`.
[[nodiscard]] std::string globProblem(std::string_view pattern);

// The paths below `root` that `pattern` (relative, '/'-separated; a leading "./" is ignored)
// matches, sorted: files, and folders that a segment names (their files count through them).
// A wildcard does not match a name that starts with a dot unless the pattern's segment does
// (`.env`, `.*`), and `**` does not enter such folders; .openexpertise is never matched.
// Stops after `max_matches` matches and sets `*truncated`.
[[nodiscard]] std::vector<std::filesystem::path> globMatches(const std::filesystem::path& root,
                                                             std::string_view pattern,
                                                             size_t max_matches, bool* truncated);

}  // namespace oe

// What `oe submit` needs besides git: upstream's registry repository, the owner/repo of a GitHub
// remote, and the tags of --tags.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oe::registry {

// Where upstream's registry takes submissions (reference §9.2, `oe submit`).
inline constexpr std::string_view kUpstreamRepo = "xingchengxu/OpenExpertise";

// owner/repo of a GitHub remote (https://github.com/o/r(.git), git@github.com:o/r(.git),
// ssh://git@github.com/o/r(.git)); nullopt for any other host.
std::optional<std::pair<std::string, std::string>> githubRepo(std::string url);

// "a, b,c" -> {"a", "b", "c"}: blanks around each tag dropped, empty tags skipped.
std::vector<std::string> splitTags(const std::string& text);

}  // namespace oe::registry

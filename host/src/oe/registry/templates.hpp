// `oe init`'s templates: where they are (share/oe/templates beside bin/, in an install and in the
// build tree alike), which there are, and copying one into a new experience folder.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oe::registry {

// Replaced by the experience's name in every file of a template.
inline constexpr std::string_view kNameToken = "__NAME__";

// share/oe/templates next to the executable's bin/ folder; nullopt when it is not there.
std::optional<std::filesystem::path> templateRoot();

// The templates under `root` (folders with an experience.yaml): name -> folder, in name order.
std::map<std::string, std::filesystem::path> listTemplates(const std::filesystem::path& root);

// A template's `description:`, without trailing blanks; empty when it has none.
std::string templateDescription(const std::filesystem::path& folder);

// Letters, digits, `_`, `-` and `.`, not starting with `-` or `.`: safe unquoted in YAML and
// JSON, and a valid folder name.
bool plainName(std::string_view name);

// Copies the template `from` into `target` (which exists and is empty), naming the experience
// `name` (every __NAME__ replaced), its .openexpertise/ left out; `written` gets the files
// written, relative to `target`. The message says which file could not be written.
std::optional<std::string> scaffold(const std::filesystem::path& from,
                                    const std::filesystem::path& target, const std::string& name,
                                    std::vector<std::filesystem::path>& written);

}  // namespace oe::registry

// The registry of experiences `oe registry` lists and `oe install NAME` resolves: a JSON file
// shipped with oe (share/oe/registry.json), or the one OE_REGISTRY names.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "oe/common/json.hpp"

namespace oe::registry {

// share/oe next to oe's bin/ folder (the build tree has the same layout), where the data shipped
// with oe lives; nullopt when it is not there.
std::optional<std::filesystem::path> shippedDataDir();

// One entry, upstream's fields plus oe's `url`: a git URL or path cloned instead of
// https://github.com/<owner>/<repo>.git (a mirror, a private server, a test's local repository).
struct RegistryEntry {
  std::string name;
  std::string owner;
  std::string repo;
  std::string ref;
  std::string description;
  std::vector<std::string> tags;
  std::string subpath;  // empty: the repository's root
  std::string url;      // empty: the GitHub repository
};

struct Registry {
  std::filesystem::path file;
  std::vector<RegistryEntry> entries;
};

// OE_REGISTRY when set, else the shipped file.
std::optional<std::filesystem::path> registryFile();

// Reads `file`: `{"experiences": [entry...]}` or a bare array of entries. The error names the
// file and the entry that is wrong.
struct RegistryLoad {
  std::optional<Registry> registry;
  std::string error;
};
RegistryLoad loadRegistry(const std::filesystem::path& file);

// The entry as JSON, upstream's fields, with `subpath` and `url` only when set.
Json registryEntryJson(const RegistryEntry& entry);

}  // namespace oe::registry

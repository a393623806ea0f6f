// Reading the registry file (see registry.hpp).
#include "oe/registry/registry.hpp"

#include <algorithm>
#include <cstdlib>

#include "oe/common/file.hpp"

namespace oe::registry {

namespace fs = std::filesystem;

std::optional<fs::path> shippedDataDir() {
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    return std::nullopt;
  }
  fs::path root = exe.parent_path().parent_path() / OE_DATA_INSTALL_SUBDIR;
  if (!fs::is_directory(root, ec)) {
    return std::nullopt;
  }
  return root;
}

std::optional<fs::path> registryFile() {
  const char* env = std::getenv("OE_REGISTRY");  // NOLINT(concurrency-mt-unsafe): read only
  if (env != nullptr && *env != '\0') {
    return fs::path(env);
  }
  if (auto data = shippedDataDir()) {
    return *data / "registry.json";
  }
  return std::nullopt;
}

namespace {

// The first problem wins: `error` is only set while empty.
std::string entryString(const Json& entry, const char* key, std::string& error,
                        const std::string& where, bool required) {
  if (!error.empty()) {
    return "";
  }
  const auto it = entry.find(key);
  if (it == entry.end() || it->is_null()) {
    if (required) {
      error = where + " has no \"" + key + "\"";
    }
    return "";
  }
  if (!it->is_string()) {
    error = where + ": \"" + key + "\" must be a string";
    return "";
  }
  return it->get<std::string>();
}

}  // namespace

RegistryLoad loadRegistry(const fs::path& file) {
  RegistryLoad out;
  const auto text = readFile(file);
  if (!text) {
    out.error = "cannot read the registry " + file.string() +
                " (OE_REGISTRY names another file; unset it for the one shipped with oe)";
    return out;
  }
  const Json doc = Json::parse(*text, nullptr, false);
  if (doc.is_discarded()) {
    out.error = file.string() + " is not valid JSON";
    return out;
  }
  const Json* list = &doc;
  if (doc.is_object() && doc.contains("experiences")) {
    list = &doc["experiences"];
  }
  if (!list->is_array()) {
    out.error = file.string() + " must hold an array of entries, or {\"experiences\": [...]}";
    return out;
  }
  Registry registry{file, {}};
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& item = (*list)[i];
    const std::string where = file.string() + ": entry " + std::to_string(i + 1);
    if (!item.is_object()) {
      out.error = where + " is not an object";
      return out;
    }
    RegistryEntry entry;
    std::string error;
    entry.name = entryString(item, "name", error, where, true);
    const std::string named = entry.name.empty() ? where : where + " (" + entry.name + ")";
    entry.url = entryString(item, "url", error, named, false);
    // Without a url the entry is a GitHub repository, which needs both.
    entry.owner = entryString(item, "owner", error, named, entry.url.empty());
    entry.repo = entryString(item, "repo", error, named, entry.url.empty());
    entry.ref = entryString(item, "ref", error, named, false);
    entry.description = entryString(item, "description", error, named, false);
    entry.subpath = entryString(item, "subpath", error, named, false);
    if (item.contains("tags")) {
      const Json& tags = item["tags"];
      if (!tags.is_array() ||
          !std::all_of(tags.begin(), tags.end(), [](const Json& t) { return t.is_string(); })) {
        error = error.empty() ? named + ": \"tags\" must be an array of strings" : error;
      } else {
        for (const Json& tag : tags) {
          entry.tags.push_back(tag.get<std::string>());
        }
      }
    }
    if (!error.empty()) {
      out.error = error;
      return out;
    }
    registry.entries.push_back(std::move(entry));
  }
  out.registry = std::move(registry);
  return out;
}

Json registryEntryJson(const RegistryEntry& entry) {
  Json out = Json::object();
  out["name"] = entry.name;
  if (!entry.owner.empty() || entry.url.empty()) {
    out["owner"] = entry.owner;
    out["repo"] = entry.repo;
  }
  out["ref"] = entry.ref;
  out["description"] = entry.description;
  out["tags"] = entry.tags;
  if (!entry.subpath.empty()) {
    out["subpath"] = entry.subpath;
  }
  if (!entry.url.empty()) {
    out["url"] = entry.url;
  }
  return out;
}

}  // namespace oe::registry

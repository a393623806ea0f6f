// Plugin manifests: written from a loaded library, read and checked without loading it.
#include "oe/plugins/manifest.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include "oe/common/file.hpp"
#include "oe/plugins/kind_schema.hpp"
#include "oe/plugins/plugin_library.hpp"

namespace oe::plugins {
namespace {

// A manifest is a few kilobytes; its kind schemas are strings, so the document itself nests
// four levels. Both bounds keep a hostile file (it comes with the library, from anywhere) from
// costing more than reading it.
constexpr size_t kMaxManifestBytes = size_t{16} << 20U;
constexpr int kMaxManifestNesting = 16;

struct FlagName {
  uint32_t bit;
  const char* name;
};
constexpr FlagName kFlagNames[] = {{OE_NODE_KIND_REENTRANT, "reentrant"},
                                   {OE_NODE_KIND_NOT_CACHEABLE, "not_cacheable"}};

// The deepest nesting of arrays and objects in a JSON text, outside strings; counted before
// parsing so that the parser and the DOM never see a deep document.
int nestingOf(std::string_view text) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

Result<uint32_t> parseAbi(const Json& value, std::string_view field) {
  const std::string text = value.is_string() ? value.get<std::string>() : std::string();
  const size_t dot = text.find('.');
  uint32_t major = 0;
  uint32_t minor = 0;
  try {
    if (dot == std::string::npos || dot == 0 || dot + 1 == text.size() ||
        text.find_first_not_of("0123456789.") != std::string::npos) {
      throw std::invalid_argument("shape");
    }
    major = static_cast<uint32_t>(std::stoul(text.substr(0, dot)));
    minor = static_cast<uint32_t>(std::stoul(text.substr(dot + 1)));
  } catch (const std::exception&) {
    return makeError(std::string(field) + " is not a \"MAJOR.MINOR\" string");
  }
  if (major > 0xFFFFU || minor > 0xFFFFU) {
    return makeError(std::string(field) + " is out of range");
  }
  return OE_ABI_MAKE_VERSION(major, minor);
}

std::string stringOr(const Json& object, const char* key, const std::string& fallback = "") {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

bool isHexDigest(const std::string& text) {
  return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

std::filesystem::path manifestPath(const std::filesystem::path& library) {
  std::filesystem::path out = library;
  out += std::string(kManifestSuffix);
  return out;
}

std::string manifestHint(const std::filesystem::path& library) {
  return "rebuild it with oe_add_plugin() (which writes its manifest), or run `" +
         std::string(kManifestTool) + " " + library.string() +
         "` (which loads it: only for a library you trust)";
}

Json flagNames(uint32_t flags) {
  Json names = Json::array();
  for (const FlagName& flag : kFlagNames) {
    if ((flags & flag.bit) != 0) {
      names.push_back(flag.name);
    }
  }
  return names;
}

PluginManifest describeLibrary(const PluginLibrary& library) {
  PluginManifest out;
  out.id = library.id();
  out.version = library.version();
  out.description = library.description();
  out.abi_version = library.abiVersion();
  out.min_host_abi = library.minHostAbi();
  out.sha256 = library.fileSha256();
  for (const KindTable& entry : library.kinds()) {
    KindManifest kind;
    kind.kind = entry.table.kind;
    kind.description = entry.table.description != nullptr ? entry.table.description : "";
    kind.flags = entry.table.flags;
    if (entry.table.spec_schema_json != nullptr) {
      kind.spec_schema_json = entry.table.spec_schema_json;
    }
    out.kinds.push_back(std::move(kind));
  }
  out.llm_providers = library.llmProviders();
  return out;
}

Json manifestJson(const PluginManifest& manifest) {
  Json kinds = Json::array();
  for (const KindManifest& kind : manifest.kinds) {
    Json item = {
        {"kind", kind.kind}, {"description", kind.description}, {"flags", flagNames(kind.flags)}};
    item["spec_schema_json"] = kind.spec_schema_json ? Json(*kind.spec_schema_json) : Json();
    kinds.push_back(std::move(item));
  }
  return Json{
      {"oe_plugin_manifest", kManifestFormat},
      {"sha256", manifest.sha256},
      {"plugin",
       {{"id", manifest.id}, {"version", manifest.version}, {"description", manifest.description}}},
      {"abi",
       {{"version", abiVersionString(manifest.abi_version)},
        {"min_host", abiVersionString(manifest.min_host_abi)}}},
      {"kinds", std::move(kinds)},
      {"llm_providers", manifest.llm_providers},
      {"generated_by", std::string(kManifestTool) + " " + OE_VERSION_STRING}};
}

Result<PluginManifest> parseManifest(std::string_view text, std::string_view where) {
  const std::string at(where);
  if (text.size() > kMaxManifestBytes) {
    return makeError(at + "is larger than " + std::to_string(kMaxManifestBytes >> 20U) +
                     " MiB; no manifest oe writes is");
  }
  if (nestingOf(text) > kMaxManifestNesting) {
    return makeError(at + "nests JSON more than " + std::to_string(kMaxManifestNesting) +
                     " levels deep; no manifest oe writes does");
  }
  const Json doc = Json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return makeError(at + "is not a JSON object");
  }
  const auto format = doc.find("oe_plugin_manifest");
  if (format == doc.end() || !format->is_number_integer() || *format != kManifestFormat) {
    return makeError(at + "is not an oe plugin manifest of format " +
                     std::to_string(kManifestFormat));
  }
  PluginManifest out;
  out.sha256 = stringOr(doc, "sha256");
  if (!isHexDigest(out.sha256)) {
    return makeError(at + "has no \"sha256\" of 64 lowercase hex digits");
  }
  const auto plugin = doc.find("plugin");
  if (plugin == doc.end() || !plugin->is_object() || stringOr(*plugin, "id").empty()) {
    return makeError(at + "has no \"plugin\": {\"id\": ...}");
  }
  out.id = stringOr(*plugin, "id");
  out.version = stringOr(*plugin, "version");
  out.description = stringOr(*plugin, "description");
  const auto abi = doc.find("abi");
  if (abi == doc.end() || !abi->is_object()) {
    return makeError(at + "has no \"abi\": {\"version\", \"min_host\"}");
  }
  auto version = parseAbi(abi->value("version", Json()), "abi.version");
  auto min_host = parseAbi(abi->value("min_host", Json()), "abi.min_host");
  if (!version || !min_host) {
    return makeError(at + (version ? min_host : version).error().message);
  }
  out.abi_version = *version;
  out.min_host_abi = *min_host;
  // The ABI rule of loading, in its words: a manifest says what loading would refuse.
  if (auto refused = abiRefusal(out.abi_version, out.min_host_abi)) {
    return makeError(at + "plugin \"" + out.id + "\": " + *refused);
  }
  const auto kinds = doc.find("kinds");
  if (kinds == doc.end() || !kinds->is_array()) {
    return makeError(at + "has no \"kinds\" array");
  }
  for (size_t i = 0; i < kinds->size(); ++i) {
    const Json& item = (*kinds)[i];
    const std::string which = "kinds[" + std::to_string(i) + "]";
    if (!item.is_object() || stringOr(item, "kind").empty()) {
      return makeError(at + which + " has no \"kind\" name");
    }
    KindManifest kind;
    kind.kind = stringOr(item, "kind");
    kind.description = stringOr(item, "description");
    const Json flags = item.value("flags", Json::array());
    if (!flags.is_array()) {
      return makeError(at + which + " (\"" + kind.kind + "\"): \"flags\" is not an array");
    }
    for (const Json& name : flags) {
      const FlagName* known = nullptr;
      for (const FlagName& flag : kFlagNames) {
        if (name.is_string() && name == flag.name) {
          known = &flag;
        }
      }
      if (known == nullptr) {
        return makeError(at + which + " (\"" + kind.kind + "\") sets the flag " + name.dump() +
                         ", which this oe does not know (known: reentrant, not_cacheable)");
      }
      kind.flags |= known->bit;
    }
    const auto schema = item.find("spec_schema_json");
    if (schema != item.end() && !schema->is_null()) {
      if (!schema->is_string()) {
        return makeError(at + which + " (\"" + kind.kind +
                         "\"): \"spec_schema_json\" is not the schema's JSON text");
      }
      kind.spec_schema_json = schema->get<std::string>();
      // As when the plugin loads: nothing that applies the schema later may be taken down by it.
      if (auto checked = checkKindSchema(*kind.spec_schema_json); !checked) {
        return makeError(at + "plugin \"" + out.id + "\", node kind #" + std::to_string(i) +
                         " (\"" + kind.kind + "\"): its spec_schema_json " +
                         checked.error().message);
      }
    }
    out.kinds.push_back(std::move(kind));
  }
  const Json providers = doc.value("llm_providers", Json::array());
  if (!providers.is_array()) {
    return makeError(at + "\"llm_providers\" is not an array");
  }
  for (const Json& name : providers) {
    if (!name.is_string() || name.get<std::string>().empty()) {
      return makeError(at + "\"llm_providers\" holds " + name.dump() + ", not a provider name");
    }
    out.llm_providers.push_back(name.get<std::string>());
  }
  return out;
}

Result<void> writeManifest(const std::filesystem::path& library, const PluginManifest& manifest) {
  const std::filesystem::path path = manifestPath(library);
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << manifestJson(manifest).dump(2) << '\n';
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      return makeError("cannot write " + tmp.string());
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    return makeError("cannot write " + path.string() + ": " + ec.message());
  }
  return {};
}

Result<PluginManifest> readManifest(const std::filesystem::path& library, std::string_view sha256) {
  const std::filesystem::path path = manifestPath(library);
  const std::string where = library.string() + ": ";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return makeError(where + "no manifest (" + path.filename().string() +
                     " beside it), and oe does not load a plugin that is not built in to "
                     "learn what it provides; " +
                     manifestHint(library));
  }
  const auto size = std::filesystem::file_size(path, ec);
  std::optional<std::string> text;
  if (!ec && size <= kMaxManifestBytes) {
    text = readFile(path);
  }
  if (!text) {
    return makeError(where + "its manifest " + path.filename().string() +
                     (ec || size <= kMaxManifestBytes ? " cannot be read" : " is too large") +
                     "; " + manifestHint(library));
  }
  auto parsed = parseManifest(*text, where + "its manifest " + path.filename().string() + " ");
  if (!parsed) {
    return makeError(parsed.error().message + "; " + manifestHint(library));
  }
  if (parsed->sha256 != sha256) {
    return makeError(where + "its manifest " + path.filename().string() +
                     " is stale: it describes the library with sha256 " +
                     parsed->sha256.substr(0, 12) + "..., but the library's is " +
                     std::string(sha256.substr(0, 12)) + "... (rebuilt or replaced since); " +
                     manifestHint(library));
  }
  return parsed;
}

}  // namespace oe::plugins

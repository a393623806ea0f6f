// A plugin's manifest: what the host knows of a plugin library without running any of its code
// (id, version, ABI, kinds with their schemas, LLM provider names), written beside the library
// as <library>.oe-manifest.json by oe-plugin-manifest and bound to it by the library's SHA-256
// (docs/trust.md has the format and the rules).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"

namespace oe::plugins {

class PluginLibrary;

inline constexpr std::string_view kManifestSuffix = ".oe-manifest.json";
// The format this host writes and reads; a manifest of another format is refused like a stale
// one (the command that makes a new one is named).
inline constexpr int kManifestFormat = 1;
// The command that (re)writes a manifest, as the messages name it.
inline constexpr std::string_view kManifestTool = "oe-plugin-manifest";

struct KindManifest {
  std::string kind;
  std::string description;
  uint32_t flags = 0;                           // OE_NODE_KIND_* bits
  std::optional<std::string> spec_schema_json;  // the plugin's text, byte for byte
};

struct PluginManifest {
  std::string id;
  std::string version;
  std::string description;
  uint32_t abi_version = 0;
  uint32_t min_host_abi = 0;
  std::string sha256;  // of the library file the manifest describes
  std::vector<KindManifest> kinds;
  std::vector<std::string> llm_providers;  // oe.llm-provider/1's `providers`
};

// <library>.oe-manifest.json, beside the library.
[[nodiscard]] std::filesystem::path manifestPath(const std::filesystem::path& library);

// What a loaded library says of itself; `sha256` is the library file's (fileSha256()).
[[nodiscard]] PluginManifest describeLibrary(const PluginLibrary& library);

[[nodiscard]] Json manifestJson(const PluginManifest& manifest);
// Parses and checks a manifest's text as the host would the loaded plugin's descriptor: the
// format, the fields' types, the ABI (the same rule and words as loading), flag bits this host
// knows, kind names, and every kind schema through checkKindSchema. `where` starts each error.
[[nodiscard]] Result<PluginManifest> parseManifest(std::string_view text, std::string_view where);

// Writes manifestPath(library) (a temporary file renamed over it, so a reader never sees half).
[[nodiscard]] Result<void> writeManifest(const std::filesystem::path& library,
                                         const PluginManifest& manifest);

// The manifest beside `library`, checked against the library's current `sha256`. The error is a
// refusal that starts with the library's path and names the command that writes a manifest (a
// missing, unreadable, malformed, stale or incompatible one alike).
[[nodiscard]] Result<PluginManifest> readManifest(const std::filesystem::path& library,
                                                  std::string_view sha256);

// "rebuild it with oe_add_plugin(), or run `oe-plugin-manifest <library>`": the hint a refusal
// for a missing or stale manifest ends with.
[[nodiscard]] std::string manifestHint(const std::filesystem::path& library);

// Flag bits by the names a manifest uses ("reentrant", "not_cacheable").
[[nodiscard]] Json flagNames(uint32_t flags);

}  // namespace oe::plugins

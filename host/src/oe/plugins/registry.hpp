// Discovery of plugins along the search path and the kind -> plugin table. The host knows no
// node kind of its own: every kind in a graph must be found here. Plugins that are not built in
// are described by their manifests, or loaded once they are trusted (docs/trust.md).
#pragma once

#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/plugins/manifest.hpp"
#include "oe/plugins/plugin_library.hpp"

namespace oe::plugins {

class TrustGate;

// What a registry may do with a plugin that is not built in (the folder beside this oe holds
// the built-in ones; they load either way).
enum class Access {
  // Read its manifest, never load it: validate, graph, schema, install, installed, plugins,
  // doctor, the MCP tools. Its kinds are known, none can run.
  kDescribe,
  // Load it once the trust gate admits it: whatever runs plugins.
  kExecute,
};

// One plugin library found on the search path.
struct PluginEntry {
  std::filesystem::path path;  // canonical folder + file name
  bool builtin = false;        // in the folder beside this oe
  PluginManifest manifest;     // from the loaded library, or from its manifest file
  std::shared_ptr<PluginLibrary> library;     // null when only described
  const oe_llm_provider* provider = nullptr;  // its oe.llm-provider/1 table, when loaded
  // The library's SHA-256: the manifest's, else (a built-in library) read on first use.
  [[nodiscard]] const std::string& sha256() const;
};

struct LoadedKind {
  std::shared_ptr<PluginLibrary> library;  // pins the code while anything uses the kind; null
                                           // when only described
  const oe_node_kind* kind = nullptr;        // the host's full-size copy (KindTable::table); null
                                             // when only described
  const oe_node_kind* descriptor = nullptr;  // the plugin's own, for create; nullptr = `kind`
  const PluginEntry* plugin = nullptr;       // where it comes from (set by the registry)
  const KindManifest* info = nullptr;        // its name, flags and schema (set by the registry)
};

// The id of the plugin serving a kind, as messages name it; a kind no library holds is one
// compiled into the process (the unit tests' in-process kinds).
inline std::string_view pluginIdOf(const LoadedKind& kind) {
  return kind.library ? std::string_view(kind.library->id()) : std::string_view("(in-process)");
}

// An LLM provider name (oe.llm-provider/1) and the plugin that serves it.
struct LoadedProvider {
  const PluginEntry* plugin = nullptr;
  const oe_llm_provider* table = nullptr;  // null when the plugin is only described
};

struct Refusal {
  std::filesystem::path path;
  std::string reason;      // full message, starting with the path
  bool untrusted = false;  // refused by the trust gate (Access::kExecute), not by the loader
};

class PluginRegistry {
 public:
  // `gate` (kExecute only): asked before a library that is not built in loads; without one,
  // every such library is refused as untrusted. It must outlive loadFrom.
  PluginRegistry(LogSink* log_sink, Access access, TrustGate* gate = nullptr)
      : log_sink_(log_sink), access_(access), gate_(gate) {}
  // The libraries outlive the registry when something else holds them; its sink does not.
  ~PluginRegistry();
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  // The search path, highest precedence first: <experience>/plugins, $OE_PLUGIN_PATH (':'-
  // separated), <exe>/../lib/oe/plugins (the install's folder, or the build tree's: both share
  // the layout).
  static std::vector<std::filesystem::path> searchPath(
      const std::optional<std::filesystem::path>& experience_dir);
  // The folder of the built-in plugins (the last entry of searchPath), canonical when it exists.
  static std::filesystem::path builtinDir();

  // Finds every *.so in the folders, in order: a built-in one is loaded; another is described
  // by its manifest (kDescribe) or loaded once trusted (kExecute). Then decides who provides
  // each kind and LLM provider name (setOverrides).
  void loadFrom(const std::vector<std::filesystem::path>& dirs);
  // The experience's `plugins: { override: [...] }`: the names (kinds or LLM providers) that a
  // plugin which is not built in may take from a built-in one. Without a name there, the
  // built-in plugin keeps it and the other is reported (a warning naming the override to
  // write). Among plugins of the same standing, the first on the search path keeps a name.
  void setOverrides(std::vector<std::string> names);
  // The experience's `plugins: { isolation: ... }` (docs/trust.md, "Process isolation"), set
  // before loadFrom: "process" or "in-process" for every plugin that is not built in (`all`)
  // or by plugin id (the manifest's id; wins over `all`). $OE_PLUGIN_ISOLATION (and
  // --plugin-isolation) win over it; it wins over a library's trust record.
  struct ExperienceIsolation {
    std::string all;
    std::map<std::string, std::string, std::less<>> by_id;
  };
  void setExperienceIsolation(ExperienceIsolation asked) { experience_isolation_ = std::move(asked); }

  [[nodiscard]] const LoadedKind* find(std::string_view kind) const;
  [[nodiscard]] const LoadedProvider* provider(std::string_view name) const;
  // Every library found and not refused, in search order.
  [[nodiscard]] const std::deque<PluginEntry>& plugins() const { return plugins_; }
  // The libraries loaded (built in, or trusted under kExecute), in search order.
  [[nodiscard]] const std::vector<std::shared_ptr<PluginLibrary>>& libraries() const {
    return libraries_;
  }
  [[nodiscard]] const std::map<std::string, LoadedKind, std::less<>>& kinds() const { return kinds_; }
  [[nodiscard]] const std::map<std::string, LoadedProvider, std::less<>>& providers() const {
    return providers_;
  }
  [[nodiscard]] const std::vector<Refusal>& refusals() const { return refusals_; }
  [[nodiscard]] bool anyUntrusted() const;
  // Problems that are not refusals: names kept by another plugin (see setOverrides).
  [[nodiscard]] std::vector<std::string> warnings() const;
  // The names both a built-in plugin and another one provide, with every such other plugin's
  // kind schema: what setOverrides can change, so a spec snapshot's context covers it.
  [[nodiscard]] std::string contestedContext() const;
  [[nodiscard]] Access access() const { return access_; }

 private:
  void resolve();

  LogSink* log_sink_;
  Access access_;
  TrustGate* gate_;
  std::deque<PluginEntry> plugins_;  // stable addresses: LoadedKind points into it
  std::vector<std::shared_ptr<PluginLibrary>> libraries_;
  std::vector<std::string> overrides_;
  ExperienceIsolation experience_isolation_;
  std::map<std::string, LoadedKind, std::less<>> kinds_;
  std::map<std::string, LoadedProvider, std::less<>> providers_;
  std::vector<Refusal> refusals_;
  std::vector<std::string> resolution_warnings_;
};

}  // namespace oe::plugins

// Discovery of plugins along the search path and the kind -> plugin table. The host knows no
// node kind of its own: every kind in a graph must be found here.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oe/plugins/plugin_library.hpp"

namespace oe::plugins {

struct LoadedKind {
  std::shared_ptr<PluginLibrary> library;  // pins the code while anything uses the kind
  const oe_node_kind* kind = nullptr;        // the host's full-size copy (KindTable::table)
  const oe_node_kind* descriptor = nullptr;  // the plugin's own, for create; nullptr = `kind`
};

struct Refusal {
  std::filesystem::path path;
  std::string reason;  // full message, starting with the path
};

class PluginRegistry {
 public:
  explicit PluginRegistry(LogSink* log_sink) : log_sink_(log_sink) {}
  // The libraries outlive the registry when something else holds them; its sink does not.
  ~PluginRegistry();
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  // The search path, highest precedence first: <experience>/plugins, $OE_PLUGIN_PATH (':'-
  // separated), <exe>/../lib/oe/plugins (the install's folder, or the build tree's: both share
  // the layout).
  static std::vector<std::filesystem::path> searchPath(
      const std::optional<std::filesystem::path>& experience_dir);

  // Loads every *.so in the folders, in order. A kind already provided by an earlier plugin
  // keeps its first provider (so vendored and OE_PLUGIN_PATH plugins override built-in ones).
  void loadFrom(const std::vector<std::filesystem::path>& dirs);

  [[nodiscard]] const LoadedKind* find(std::string_view kind) const;
  [[nodiscard]] const std::vector<std::shared_ptr<PluginLibrary>>& libraries() const {
    return libraries_;
  }
  [[nodiscard]] const std::map<std::string, LoadedKind, std::less<>>& kinds() const { return kinds_; }
  [[nodiscard]] const std::vector<Refusal>& refusals() const { return refusals_; }
  [[nodiscard]] const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  LogSink* log_sink_;
  std::vector<std::shared_ptr<PluginLibrary>> libraries_;
  std::map<std::string, LoadedKind, std::less<>> kinds_;
  std::vector<Refusal> refusals_;
  std::vector<std::string> warnings_;
};

}  // namespace oe::plugins

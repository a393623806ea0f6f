// `plugins: { isolation: ... }` (docs/trust.md, "Process isolation"): where an experience asks
// its plugins that are not built in to run, for all of them or per plugin id. Plugins are
// loaded before the experience is parsed (a spec snapshot is only good for the same plugins),
// so a run reads this key first with scanPluginIsolation, which parses only that block.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "oe/common/json.hpp"

namespace oe::spec {

struct PluginIsolationSpec {
  std::string all;  // "process", "in-process" or "" (not asked)
  // per plugin id (the manifest's `plugin.id`); wins over `all` for that plugin
  std::map<std::string, std::string, std::less<>> by_id;

  [[nodiscard]] bool empty() const { return all.empty() && by_id.empty(); }
  // What it asks for the plugin `id`: its own entry, else `all`, else "".
  [[nodiscard]] std::string forPlugin(std::string_view id) const;
};

// From the parsed `plugins:` object; values of the wrong type are skipped (the schema reports
// them with their line).
[[nodiscard]] PluginIsolationSpec pluginIsolationFrom(const Json& plugins);

// The key read from experience.yaml's text without parsing the rest: the top-level `plugins:`
// block of a block-style document (a flow-style document is parsed whole). A text it cannot
// read yields an empty spec: the full parse that follows reports the error.
[[nodiscard]] PluginIsolationSpec scanPluginIsolation(std::string_view yaml_text);

}  // namespace oe::spec

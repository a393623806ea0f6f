// `oe plugins`: what is installed, where it came from, and what was refused and why. Nothing that
// is not built in is loaded: such plugins are listed from their manifests (docs/trust.md).
#include <iostream>
#include <memory>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"

namespace oe::cli {

void addPluginsCommand(CLI::App& app, int& exit_code) {
  struct Args {
    bool json = false;
    std::string experience;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("plugins", "List the plugins found on the search path");
  cmd->add_flag("--json", a->json, "Print a JSON array");
  cmd->add_option("--experience", a->experience, "Also search <dir>/plugins");
  cmd->callback([a, &exit_code] {
    StderrLog sink;
    plugins::PluginRegistry registry(&sink, plugins::Access::kDescribe);
    std::optional<std::filesystem::path> dir;
    if (!a->experience.empty()) {
      dir = spec::resolveExperiencePath(a->experience).parent_path();
    }
    loadPlugins(registry, dir);
    if (dir) {
      // Who keeps a name also depends on the experience's plugins.override.
      auto loaded = spec::loadExperience(spec::resolveExperiencePath(a->experience));
      if (const auto* model = loaded.experience ? &*loaded.experience
                              : loaded.partial  ? &*loaded.partial
                                                : nullptr) {
        registry.setOverrides(model->plugin_overrides);
      }
    }
    // What a run would do with each: the built-in plugins load, the others only when trusted.
    const std::vector<plugins::TrustRecord> trust = ops::userTrustRecords();
    Json list = Json::array();
    for (const plugins::PluginEntry& entry : registry.plugins()) {
      const plugins::PluginManifest& m = entry.manifest;
      Json kinds = Json::array();
      std::string kinds_text;
      for (const plugins::KindManifest& kind : m.kinds) {
        kinds.push_back(kind.kind);
        if (!kinds_text.empty()) {
          kinds_text.push_back(',');
        }
        kinds_text.append(kind.kind);
        const plugins::LoadedKind* served = registry.find(kind.kind);
        if (served != nullptr && served->plugin != &entry) {
          // Another plugin keeps this kind (a built-in one, or an earlier one); say so.
          kinds_text.append(" (shadowed)");
        }
      }
      std::string providers_text;
      for (const std::string& name : m.llm_providers) {
        providers_text += (providers_text.empty() ? "" : ",") + name;
        const plugins::LoadedProvider* served = registry.provider(name);
        if (served != nullptr && served->plugin != &entry) {
          providers_text.append(" (shadowed)");
        }
      }
      const std::string abi = plugins::abiVersionString(m.abi_version);
      const std::string trusted = ops::trustLabel(entry, trust);
      list.push_back({{"id", m.id},
                      {"version", m.version},
                      {"abi", abi},
                      {"kinds", kinds},
                      {"llm_providers", m.llm_providers},
                      {"path", entry.path.string()},
                      {"built_in", entry.builtin},
                      {"trust", trusted}});
      if (!a->json) {
        std::cout << m.id << "  " << m.version << "  abi " << abi << "  kinds: "
                  << (kinds_text.empty() ? "-" : kinds_text)
                  << (providers_text.empty() ? "" : "  llm providers: " + providers_text) << "  ["
                  << trusted << "]  " << entry.path.string() << '\n';
      }
    }
    if (a->json) {
      std::cout << list.dump(2) << '\n';
    } else if (registry.plugins().empty()) {
      std::cout << "no plugins found; searched:";
      for (const auto& d : plugins::PluginRegistry::searchPath(dir)) {
        std::cout << ' ' << d.string();
      }
      std::cout << '\n';
    }
    for (const auto& refusal : registry.refusals()) {
      std::cerr << "oe: refused plugin " << refusal.reason << '\n';
    }
    for (const auto& warning : registry.warnings()) {
      std::cerr << "oe: warning: " << warning << '\n';
    }
    exit_code = registry.refusals().empty() ? kExitOk : kExitFailed;
  });
}

}  // namespace oe::cli

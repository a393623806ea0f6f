// `oe plugins`: what is installed, where it came from, and what was refused and why.
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
    plugins::PluginRegistry registry(&sink);
    std::optional<std::filesystem::path> dir;
    if (!a->experience.empty()) {
      dir = spec::resolveExperiencePath(a->experience).parent_path();
    }
    loadPlugins(registry, dir);
    Json list = Json::array();
    for (const auto& lib : registry.libraries()) {
      Json kinds = Json::array();
      std::string kinds_text;
      for (const plugins::KindTable& entry : lib->kinds()) {
        const oe_node_kind* kind = &entry.table;
        kinds.push_back(kind->kind);
        if (!kinds_text.empty()) {
          kinds_text.push_back(',');
        }
        kinds_text.append(kind->kind);
        const plugins::LoadedKind* served = registry.find(kind->kind);
        if (served != nullptr && served->library != lib) {
          // Another plugin earlier on the search path provides this kind; say so.
          kinds_text.append(" (shadowed)");
        }
      }
      const std::string abi = plugins::abiVersionString(lib->abiVersion());
      list.push_back({{"id", lib->id()}, {"version", lib->version()}, {"abi", abi},
                      {"kinds", kinds}, {"path", lib->path().string()}});
      if (!a->json) {
        std::cout << lib->id() << "  " << lib->version() << "  abi " << abi << "  kinds: "
                  << (kinds_text.empty() ? "-" : kinds_text) << "  " << lib->path().string() << '\n';
      }
    }
    if (a->json) {
      std::cout << list.dump(2) << '\n';
    } else if (registry.libraries().empty()) {
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

// `oe registry [--json]`: the experiences of the registry file (the one shipped with oe, or
// OE_REGISTRY), each installable by name with `oe install NAME`.
#include <iostream>
#include <memory>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/registry/registry.hpp"

namespace oe::cli {

using registry::loadRegistry;
using registry::registryEntryJson;
using registry::RegistryEntry;
using registry::registryFile;

void addRegistryCommand(CLI::App& app, int& exit_code) {
  struct Args {
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("registry", "List the experiences oe install knows by name");
  cmd->add_flag("--json", a->json, "Print the entries as a JSON array");
  cmd->callback([a, &exit_code] {
    const auto file = registryFile();
    if (!file) {
      std::cerr << "oe: the registry is missing: it belongs in " << OE_DATA_INSTALL_SUBDIR
                << "/registry.json next to oe's bin/ folder (reinstall oe), or set OE_REGISTRY "
                   "to a registry file\n";
      exit_code = kExitFailed;
      return;
    }
    const auto loaded = loadRegistry(*file);
    if (!loaded.registry) {
      std::cerr << "oe: " << loaded.error << '\n';
      exit_code = kExitFailed;
      return;
    }
    const auto& entries = loaded.registry->entries;
    if (a->json) {
      Json list = Json::array();
      for (const RegistryEntry& entry : entries) {
        list.push_back(registryEntryJson(entry));
      }
      std::cout << list.dump(2) << '\n';
      exit_code = kExitOk;
      return;
    }
    if (entries.empty()) {
      std::cout << "the registry " << file->string() << " has no entries (OE_REGISTRY names "
                << "another; oe install also takes gh:owner/repo[/sub/path][@ref], a git URL "
                << "or a path)\n";
      exit_code = kExitOk;
      return;
    }
    for (const RegistryEntry& entry : entries) {
      std::string where = entry.url.empty() ? "gh:" + entry.owner + "/" + entry.repo : entry.url;
      if (!entry.subpath.empty()) {
        where += (entry.url.empty() ? "/" : "//") + entry.subpath;
      }
      if (!entry.ref.empty()) {
        where += "@" + entry.ref;
      }
      std::string tags;
      for (const std::string& tag : entry.tags) {
        tags += (tags.empty() ? "" : ",") + tag;
      }
      std::cout << entry.name << "  " << where << "  " << entry.description
                << (tags.empty() ? "" : "  [" + tags + "]") << '\n';
    }
    exit_code = kExitOk;
  });
}

}  // namespace oe::cli

// `oe schema`: the JSON Schema of experience.yaml for an editor's YAML language server, with the
// fields of every loaded plugin's node kinds (or, with --core, the structure alone).
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/spec/editor_schema.hpp"
#include "oe/spec/schema.hpp"

namespace oe::cli {

void addSchemaCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::string experience;
    bool core = false;
    bool open_kinds = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "schema",
      "Print the experience.yaml JSON Schema, with the loaded kinds' fields (for editors)");
  CLI::Option* experience =
      cmd->add_option("--experience", a->experience,
                      "Also load the kinds of <dir>/plugins, as `oe run <dir>` does");
  auto* core = cmd->add_flag("--core", a->core,
                             "Only the experience structure, without any kind's fields")
                    ->excludes(experience);
  cmd->add_flag("--open-kinds", a->open_kinds,
                "Accept any `kind` name (the loaded kinds only offered), not only the loaded ones")
      ->excludes(core);
  cmd->callback([a, &exit_code] {
    if (a->core) {
      std::cout << spec::experienceJsonSchema().dump(2) << '\n';
      exit_code = kExitOk;
      return;
    }
    std::optional<std::filesystem::path> dir;
    if (!a->experience.empty()) {
      // A folder still being written may have plugins/ and no experience.yaml yet.
      std::error_code ec;
      const std::filesystem::path given = a->experience;
      dir = std::filesystem::is_directory(given, ec)
                ? given
                : spec::resolveExperiencePath(given).parent_path();
      if (dir->empty()) {
        dir = ".";  // `--experience flow.yaml`: the yaml file in the current folder
      }
      if (!std::filesystem::is_directory(*dir, ec)) {
        std::cerr << "oe: --experience " << a->experience
                  << ": no such folder. Name the experience's folder (or its yaml file).\n";
        exit_code = kExitUsage;
        return;
      }
    }
    StderrLog sink;
    plugins::PluginRegistry registry(&sink, plugins::Access::kDescribe);
    loadPlugins(registry, dir);
    if (dir) {
      // The experience's plugins.override decides whose schema a contested kind has.
      auto loaded = spec::loadExperience(spec::resolveExperiencePath(*dir));
      if (loaded.experience) {
        registry.setOverrides(loaded.experience->plugin_overrides);
      }
    }
    reportPluginProblems(registry);
    std::cout << spec::editorJsonSchema(kindCatalog(registry), a->open_kinds).dump(2) << '\n';
    exit_code = kExitOk;
  });
}

}  // namespace oe::cli

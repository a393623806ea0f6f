// `oe install <spec>` and `oe installed`: an experience cloned with git into
// .openexpertise/experiences/<name>/, validated as `oe validate` would before it is kept, with
// where it came from in its .oe-install.json; and the list of those installs (registry/installer).
#include <iostream>
#include <memory>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/registry/install.hpp"
#include "oe/registry/installer.hpp"

namespace oe::cli {
namespace {

namespace fs = std::filesystem;

// `oe validate`'s check of `dir`, with the plugins it would load, printing nothing.
registry::Validation quietValidation(const fs::path& dir) {
  StderrLog sink;
  plugins::PluginRegistry registry(&sink, plugins::Access::kDescribe);
  Checked checked = checkExperience(dir, registry, /*strict=*/false, /*report_problems=*/false);
  return {checked.loaded.experience.has_value(), std::move(checked.diagnostics)};
}

}  // namespace

void addInstallCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::string spec;
    std::string ref;
    std::string subpath;
    std::string experience = ".";
    bool force = false;
    int64_t timeout_ms = 300000;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "install", "Clone an experience into .openexpertise/experiences/<name>/ and validate it");
  cmd->add_option("spec", a->spec,
                  "A registry name, gh:owner/repo[/sub/path][@ref], a git URL[@ref] or a path "
                  "to a git repository")
      ->required();
  cmd->add_option("--ref", a->ref, "The branch, tag or commit to install (overrides @ref)");
  cmd->add_option("--subpath", a->subpath, "The experience's folder inside the repository");
  cmd->add_option("--experience", a->experience,
                  "The folder whose .openexpertise/experiences/ receives the install")
      ->capture_default_str();
  cmd->add_flag("--force", a->force, "Replace an existing install of the same name");
  cmd->add_option("--timeout-ms", a->timeout_ms, "How long git may take to clone")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{3600000}));
  cmd->callback([a, &exit_code] {
    std::string error;
    auto source = registry::resolveSpec(a->spec, a->subpath, error);
    if (!source) {
      std::cerr << "oe: " << error << '\n';
      exit_code = kExitUsage;
      return;
    }
    if (!a->ref.empty()) {
      source->ref = a->ref;
    }
    registry::InstallRequest request{a->spec, *source, a->experience, a->force,
                                     std::chrono::milliseconds(a->timeout_ms)};
    const registry::InstallOutcome installed =
        registry::installExperience(request, quietValidation);
    printDiagnostics(installed.diagnostics);  // the errors that refused it, or warnings
    if (!installed.ok()) {
      std::cerr << "oe: " << installed.error << '\n';
      exit_code = kExitFailed;
      return;
    }
    std::cout << "installed " << source->name << " from " << installed.shown << " (commit "
              << installed.commit.substr(0, 12) << ") into " << installed.target.string() << '\n'
              << "run it: oe run " << installed.target.string() << '\n';
    exit_code = kExitOk;
  });
}

void addInstalledCommand(CLI::App& app, int& exit_code) {
  struct Args {
    bool json = false;
    std::string experience = ".";
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("installed", "List what oe install put here");
  cmd->add_flag("--json", a->json, "Print the installs as a JSON array");
  cmd->add_option("--experience", a->experience,
                  "The folder whose .openexpertise/experiences/ is listed")
      ->capture_default_str();
  cmd->callback([a, &exit_code] {
    const Json list = registry::listInstalls(a->experience, quietValidation);
    exit_code = kExitOk;
    if (a->json) {
      std::cout << list.dump(2) << '\n';
      return;
    }
    if (list.empty()) {
      std::cout << "nothing installed in " << registry::installsDir(a->experience).string()
                << " (oe install <spec> installs an experience)\n";
      return;
    }
    for (const Json& item : list) {
      const std::string source = item["source"].get<std::string>();
      const std::string subpath = item["subpath"].get<std::string>();
      const std::string ref = item["ref"].get<std::string>();
      std::cout << item["name"].get<std::string>() << "  "
                << (source.empty() ? "(no " + std::string(registry::kInstallRecordFile) + ")"
                                   : source + (subpath.empty() ? "" : "//" + subpath) +
                                         (ref.empty() ? "" : "@" + ref))
                << "  " << item["commit"].get<std::string>().substr(0, 12) << "  "
                << item["installed_at"].get<std::string>() << "  "
                << (item["valid"].get<bool>()
                        ? std::string("valid")
                        : "INVALID (" + std::to_string(item["errors"].get<size_t>()) +
                              " errors: oe validate " + item["path"].get<std::string>() + ")")
                << '\n';
    }
  });
}

}  // namespace oe::cli

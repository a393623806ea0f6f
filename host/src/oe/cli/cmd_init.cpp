// `oe init [name] --template T` and `--list-templates`: scaffolds an experience folder from one
// of the templates installed with oe (host/templates/ in the source tree), ready to validate
// and run as it is.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/common/file.hpp"
#include "oe/registry/templates.hpp"

namespace oe::cli {
namespace {

namespace fs = std::filesystem;
using registry::listTemplates;
using registry::plainName;
using registry::scaffold;
using registry::templateDescription;
using registry::templateRoot;

}  // namespace

void addInitCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::string name;
    std::string template_name = "tool-only";
    bool list = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("init", "Create an experience folder from a template");
  cmd->add_option("name", a->name, "The folder to create; its last part names the experience");
  cmd->add_option("-t,--template", a->template_name,
                  "tool-only, agent, cli-agent or full-pipeline (--list-templates)")
      ->capture_default_str();
  cmd->add_flag("--list-templates", a->list, "List the templates and what each holds");
  cmd->callback([a, &exit_code] {
    const auto root = templateRoot();
    if (!root) {
      std::cerr << "oe: the templates are missing: they belong in " << OE_TEMPLATE_INSTALL_SUBDIR
                << " next to oe's bin/ folder; reinstall oe (cmake --install)\n";
      exit_code = kExitFailed;
      return;
    }
    const auto templates = listTemplates(*root);
    if (a->list) {
      for (const auto& [name, folder] : templates) {
        std::cout << name << "  " << templateDescription(folder) << '\n';
      }
      exit_code = kExitOk;
      return;
    }
    if (a->name.empty()) {
      std::cerr << "oe: missing required argument: name (oe init NAME [--template T]; "
                   "oe init --list-templates lists the templates)\n";
      exit_code = kExitUsage;
      return;
    }
    auto chosen = templates.find(a->template_name);
    if (chosen == templates.end()) {
      std::string names;
      for (const auto& entry : templates) {
        names += (names.empty() ? "" : ", ") + entry.first;
      }
      std::cerr << "oe: no template \"" << a->template_name << "\"; the templates are " << names
                << '\n';
      exit_code = kExitUsage;
      return;
    }
    const fs::path target = fs::path(a->name).lexically_normal();
    std::string name = (target.has_filename() ? target : target.parent_path()).filename().string();
    if (name == "." || name == "..") {
      name = fs::absolute(target).lexically_normal().parent_path().filename().string();
    }
    // The name goes into experience.yaml and package.json unquoted: keep it a plain word.
    if (!plainName(name)) {
      std::cerr << "oe: \"" << name << "\" cannot name an experience: use letters, digits, `_`, "
                << "`-` and `.` (e.g. my-flow)\n";
      exit_code = kExitUsage;
      return;
    }
    std::error_code ec;
    if (fs::exists(target, ec)) {
      if (!fs::is_directory(target, ec)) {
        std::cerr << "oe: " << target.string()
                  << " exists and is not a folder; pick another name\n";
        exit_code = kExitFailed;
        return;
      }
      if (!fs::is_empty(target, ec)) {
        std::cerr << "oe: " << target.string()
                  << " already exists and is not empty; oe init only writes into a new or "
                     "empty folder (pick another name, or move its files away)\n";
        exit_code = kExitFailed;
        return;
      }
    }
    fs::create_directories(target, ec);
    if (ec) {
      std::cerr << "oe: cannot create " << target.string() << ": " << ec.message() << '\n';
      exit_code = kExitFailed;
      return;
    }
    std::vector<fs::path> written;
    if (auto error = scaffold(chosen->second, target, name, written)) {
      std::cerr << "oe: " << *error << '\n';
      exit_code = kExitFailed;
      return;
    }
    std::cout << "created " << target.string() << " from the " << chosen->first << " template:\n";
    for (const fs::path& file : written) {
      std::cout << "  " << file.string() << '\n';
    }
    std::cout << "next: oe validate " << target.string() << ", then see "
              << (target / "README.md").string() << " to run it\n";
    exit_code = kExitOk;
  });
}

}  // namespace oe::cli

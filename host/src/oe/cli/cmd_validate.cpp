// `oe validate [path]`: every error at once, each with file:line:column (D8, D9): structural
// and reference errors together (spec::checkLoaded), before anything runs.
#include <algorithm>
#include <iostream>
#include <memory>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"

namespace oe::cli {

void addValidateCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::string path = ".";
    bool strict = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("validate", "Check an experience without running it");
  cmd->add_option("path", a->path, "Experience folder or yaml file")->capture_default_str();
  cmd->add_flag("--strict", a->strict, "Treat warnings (unknown keys) as errors");
  cmd->callback([a, &exit_code] {
    StderrLog sink;
    plugins::PluginRegistry registry(&sink, plugins::Access::kDescribe);
    const Checked checked = checkExperience(a->path, registry, a->strict);
    const std::vector<Diagnostic>& diagnostics = checked.diagnostics;
    const spec::Experience* experience = checked.model();
    printDiagnostics(diagnostics);
    if (!checked.valid()) {
      printErrorCount(diagnostics, experience != nullptr ? experience->file.string() : "");
      exit_code = kExitFailed;
      return;
    }
    std::cout << "experience valid: " << experience->file.string() << " ("
              << experience->nodes.size()
              << (experience->nodes.size() == 1 ? " node, " : " nodes, ")
              << experience->edges.size() << (experience->edges.size() == 1 ? " edge)" : " edges)")
              << '\n';
    exit_code = kExitOk;
  });
}

}  // namespace oe::cli

// argv -> command. CLI11 parses; parse errors exit 2 as upstream's commander did.
#include "oe/cli/app.hpp"

#include <iostream>

#include "oe/cli/commands.hpp"
#include "oe/plugins/host_context.hpp"

namespace oe::cli {

int main(int argc, char** argv) {
  plugins::initHostServices();
  CLI::App app{"oe: run AI workflows written as YAML (OpenExpertise-compatible)", "oe"};
  app.set_version_flag("-V,--version", OE_VERSION_STRING);
  app.require_subcommand(1);
  int exit_code = kExitOk;
  addRunCommand(app, exit_code);
  addResumeCommand(app, exit_code);
  addValidateCommand(app, exit_code);
  addPluginsCommand(app, exit_code);
  addStateCommand(app, exit_code);
  addResetStateCommand(app, exit_code);
  addInspectCommand(app, exit_code);
  addSchemaCommand(app, exit_code);
  addRunsCommand(app, exit_code);
  addCacheCommand(app, exit_code);
  addGcCommand(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  return exit_code;
}

}  // namespace oe::cli

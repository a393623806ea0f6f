// argv -> command. CLI11 parses; parse errors exit 2 as upstream's commander did.
#include "oe/cli/app.hpp"

#include <cstdlib>
#include <csignal>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/cli/commands.hpp"
#include "oe/plugins/crash_guard.hpp"
#include "oe/plugins/host_context.hpp"
#include "oe/plugins/plugin_isolation.hpp"

namespace oe::cli {

int main(int argc, char** argv, std::string_view build_commit) {
  // A reader that goes away (`oe run ... | head -2`) must not kill a run halfway: with SIGPIPE
  // ignored, a write to a closed stdout or stderr fails with EPIPE, the stream stops printing
  // and the run goes on to its end, its log and state whole. Set before any thread exists.
  // The programs oe starts get the default disposition back (proc_kit's spawn and `oe demo`
  // reset it), as an ignored signal would otherwise be inherited across exec.
  std::signal(SIGPIPE, SIG_IGN);
  plugins::initHostServices();
  // A plugin that crashes the process is named on stderr and in the run's log before oe dies
  // (crash_guard.hpp). Set before any thread exists, as SIGPIPE above.
  plugins::installCrashHandler();
  CLI::App app{"oe: run AI workflows written as YAML (OpenExpertise-compatible)", "oe"};
  app.set_version_flag("-V,--version",
                       "oe " OE_VERSION_STRING " (commit " + std::string(build_commit) + ")");
  app.require_subcommand(1);
  int exit_code = kExitOk;
  addRunCommand(app, exit_code);
  addResumeCommand(app, exit_code);
  addApproveCommand(app, exit_code);
  addRejectCommand(app, exit_code);
  addValidateCommand(app, exit_code);
  addPluginsCommand(app, exit_code);
  addTrustCommand(app, exit_code);
  addStateCommand(app, exit_code);
  addResetStateCommand(app, exit_code);
  addInspectCommand(app, exit_code);
  addApplyDiffCommand(app, exit_code);
  addSchemaCommand(app, exit_code);
  addRunsCommand(app, exit_code);
  addCacheCommand(app, exit_code);
  addGcCommand(app, exit_code);
  addEvolveCommand(app, exit_code);
  addDiffCommand(app, exit_code);
  addGraphCommand(app, exit_code);
  addDoctorCommand(app, exit_code);
  addInitCommand(app, exit_code);
  addRegistryCommand(app, exit_code);
  addInstallCommand(app, exit_code);
  addInstalledCommand(app, exit_code);
  addSubmitCommand(app, exit_code);
  addDemoCommand(app, exit_code);
  addUltraCommand(app, exit_code);
  addUltraReviseCommand(app, exit_code);
  addMcpCommand(app, exit_code);
  addServeCommand(app, exit_code);
  addStoreCommand(app, exit_code);
  addWorkerCommand(app, exit_code);
  addPluginHostCommand(app, exit_code);
  // `--plugin-isolation MODE` is accepted anywhere on the line, by every command: it sets
  // OE_PLUGIN_ISOLATION, so what this oe starts (workers, `oe mcp`'s runs) runs plugins the same
  // way (docs/trust.md, "Process isolation").
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    std::optional<std::string> mode;
    if (arg == "--plugin-isolation") {
      if (i + 1 >= argc) {
        std::cerr << "oe: --plugin-isolation needs a value: process or in-process\n";
        return kExitUsage;
      }
      mode = argv[++i];
    } else if (arg.starts_with("--plugin-isolation=")) {
      mode = std::string(arg.substr(std::string_view("--plugin-isolation=").size()));
    }
    if (!mode) {
      args.push_back(argv[i]);
      continue;
    }
    if (auto parsed = plugins::parseIsolation(*mode, "--plugin-isolation"); !parsed) {
      std::cerr << "oe: " << parsed.error().message << '\n';
      return kExitUsage;
    }
    ::setenv("OE_PLUGIN_ISOLATION", mode->c_str(), 1);
  }
  argc = static_cast<int>(args.size());
  args.push_back(nullptr);
  argv = args.data();
  // CLI11 would call an unknown command a missing one ("A subcommand is required"). The top
  // level takes no positional argument, so the first one is the command.
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with('-')) {
      continue;
    }
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_group().empty()) {  // hidden (plugin-host)
        known = known || sub->check_name(std::string(arg));
        continue;
      }
      names += (names.empty() ? "" : ", ") + sub->get_name();
      known = known || sub->check_name(std::string(arg));
    }
    if (!known) {
      std::cerr << "oe: unknown command \"" << arg << "\"; the commands are " << names
                << " (`oe --help` says what each does)\n";
      return kExitUsage;
    }
    break;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  return exit_code;
}

}  // namespace oe::cli

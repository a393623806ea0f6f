// `oe plugin-host --fd N LIBRARY`: hidden; the helper process oe starts for a plugin under
// `isolation: process` (docs/trust.md, "Process isolation"). It is the same binary, so an
// install has nothing more to ship; it is not for people to run.
#include <string>

#include "oe/cli/commands.hpp"
#include "oe/plugins/plugin_isolation.hpp"

namespace oe::cli {

void addPluginHostCommand(CLI::App& app, int& exit_code) {
  struct Args {
    int fd = -1;
    std::string library;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("plugin-host", "Serve one plugin to the oe that started it");
  cmd->group("");  // hidden from --help and from the list of commands
  cmd->add_option("--fd", a->fd, "The socket oe passed")->required();
  cmd->add_option("library", a->library, "The plugin library")->required();
  cmd->callback([a, &exit_code] { exit_code = plugins::runPluginHost(a->fd, a->library); });
}

}  // namespace oe::cli

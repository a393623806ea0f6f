// `oe graph [path]`: validates, then prints the graph as a Mermaid flowchart (upstream's style)
// or, with --html, as a self-contained page; -o writes either to a file.
#include <iostream>
#include <memory>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/report/graph_render.hpp"

namespace oe::cli {

using report::GraphDirection;
using report::graphHtml;
using report::mermaidGraph;


void addGraphCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::string path = ".";
    bool lr = false;
    bool html = false;
    std::string out;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("graph", "Draw an experience's graph (Mermaid, or HTML)");
  cmd->add_option("path", a->path, "Experience folder or yaml file")->capture_default_str();
  cmd->add_flag("--lr", a->lr, "Left to right (flowchart LR) instead of top down");
  cmd->add_flag("--html", a->html, "A self-contained HTML page drawing the graph as SVG");
  cmd->add_option("-o,--out", a->out, "Write to this file instead of stdout");
  cmd->callback([a, &exit_code] {
    StderrLog sink;
    plugins::PluginRegistry registry(&sink, plugins::Access::kDescribe);
    // The same loading and messages as `oe validate`: a graph is only drawn for a valid file.
    const auto experience = loadValidated(a->path, registry, /*strict=*/false);
    if (!experience) {
      exit_code = kExitFailed;
      return;
    }
    const GraphDirection direction = a->lr ? GraphDirection::kLeftRight : GraphDirection::kTopDown;
    const std::string text =
        a->html ? graphHtml(*experience, direction) : mermaidGraph(*experience, direction);
    exit_code = writeOutput(a->out, text, "-o") ? kExitOk : kExitFailed;
  });
}

}  // namespace oe::cli

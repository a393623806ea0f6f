// `oe doctor [--json]`: what this oe needs on this machine, checked (ops/doctor): Node.js for
// .mjs/.js tools, the coding CLIs, an LLM provider, a writable .openexpertise/, and every plugin
// readable (the built-in ones loaded, the others described by their manifests, as `oe validate`
// sees them) and trusted, with the plugin folders searched (in order) and what each held.
#include <algorithm>
#include <iostream>
#include <memory>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/ops/doctor.hpp"

namespace oe::cli {
namespace {

using ops::CheckStatus;

std::string_view statusMark(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass:
      return "\xE2\x9C\x93";  // ✓
    case CheckStatus::kWarn:
      return "\xE2\x9A\xA0";  // ⚠
    case CheckStatus::kFail:
      return "\xE2\x9C\x97";  // ✗
    default:
      return "?";
  }
}

void printPluginFolders(const std::vector<ops::PluginFolder>& folders) {
  std::cout << "\nPlugin folders, in search order (a kind comes from the built-in plugin that "
               "provides it, unless the experience's plugins.override names it; else from the "
               "first plugin that provides it):\n";
  int index = 0;
  for (const ops::PluginFolder& f : folders) {
    std::cout << "  " << ++index << ". " << f.path.string() << " (" << f.origin << "): ";
    if (f.state == "missing") {
      std::cout << "not there\n";
      continue;
    }
    if (f.state == "repeated") {
      std::cout << "already searched above\n";
      continue;
    }
    const size_t count = f.plugins.size();
    std::cout << count << (count == 1 ? " plugin" : " plugins");
    if (!f.refused.empty()) {
      std::cout << ", " << f.refused.size() << " refused";
    }
    std::cout << '\n';
    for (const Json& p : f.plugins) {
      std::string kinds;
      for (const Json& kind : p["kinds"]) {
        const bool shadowed =
            std::find(p["shadowed"].begin(), p["shadowed"].end(), kind) != p["shadowed"].end();
        kinds +=
            (kinds.empty() ? "" : ",") + kind.get<std::string>() + (shadowed ? " (shadowed)" : "");
      }
      std::string providers;
      for (const Json& name : p["llm_providers"]) {
        const auto& shadowed_names = p["shadowed_llm_providers"];
        const bool shadowed =
            std::find(shadowed_names.begin(), shadowed_names.end(), name) != shadowed_names.end();
        providers += (providers.empty() ? "" : ",") + name.get<std::string>() +
                     (shadowed ? " (shadowed)" : "");
      }
      std::cout << "       " << p["id"].get<std::string>() << ' ' << p["version"].get<std::string>()
                << "  kinds: " << (kinds.empty() ? "-" : kinds)
                << (providers.empty() ? "" : "  llm providers: " + providers) << "  ["
                << p["trust"].get<std::string>() << "]  (" << p["file"].get<std::string>()
                << ")\n";
    }
    for (const Json& r : f.refused) {
      std::cout << "       refused " << r["file"].get<std::string>() << '\n';
    }
  }
}

}  // namespace

void addDoctorCommand(CLI::App& app, int& exit_code) {
  struct Args {
    bool json = false;
    std::string experience = ".";
    int64_t timeout_ms = 5000;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("doctor", "Check what oe needs on this machine");
  cmd->add_flag("--json", a->json, "Print {checks, plugin_dirs, summary} as JSON");
  cmd->add_option("--experience", a->experience,
                  "The folder whose .openexpertise/ and plugins/ are checked")
      ->capture_default_str();
  cmd->add_option("--timeout-ms", a->timeout_ms, "How long each `--version` may take")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{600000}));
  cmd->callback([a, &exit_code] {
    const ops::DoctorReport report =
        ops::runDoctor(a->experience, std::chrono::milliseconds(a->timeout_ms));
    if (a->json) {
      std::cout << report.toJson().dump(2) << '\n';
    } else {
      for (const ops::Check& check : report.checks) {
        std::cout << statusMark(check.status) << ' ' << check.name << ": " << check.detail << '\n';
      }
      printPluginFolders(report.plugin_folders);
      std::cout << "\nSummary: " << report.passed << " passed \xC2\xB7 " << report.warned
                << " warnings \xC2\xB7 " << report.failed << " failures\n";
    }
    exit_code = report.failed > 0 ? kExitFailed : kExitOk;
  });
}

}  // namespace oe::cli

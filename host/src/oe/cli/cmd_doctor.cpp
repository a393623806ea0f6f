// `oe doctor [--json]`: what this oe needs on this machine, checked: Node.js for .mjs/.js tools,
// the coding CLIs, an LLM provider, a writable .openexpertise/, and every plugin loading, with the
// plugin folders searched (in order) and what each held.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <future>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "proc_kit/supervisor.hpp"

namespace oe::cli {
namespace {

enum class Status { kPass, kWarn, kFail };

struct Check {
  std::string name;
  Status status = Status::kPass;
  std::string detail;
};

std::string_view statusName(Status status) {
  switch (status) {
    case Status::kPass:
      return "pass";
    case Status::kWarn:
      return "warn";
    case Status::kFail:
    default:
      return "fail";
  }
}

std::string_view statusMark(Status status) {
  switch (status) {
    case Status::kPass:
      return "\xE2\x9C\x93";  // ✓
    case Status::kWarn:
      return "\xE2\x9A\xA0";  // ⚠
    case Status::kFail:
      return "\xE2\x9C\x97";  // ✗
    default:
      return "?";
  }
}

std::string firstTextLine(std::string_view text) {
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) {
    return "";
  }
  text.remove_prefix(start);
  return std::string(text.substr(0, text.find_first_of("\r\n")));
}

// What `<program> --version` said, or why it said nothing.
struct VersionProbe {
  std::optional<std::string> path;  // nullopt: not on PATH
  bool answered = false;            // exited 0 within the deadline
  std::string text;                 // the first line of stdout, or what went wrong
};

// Runs `<name> --version` in its own process group with a deadline, so a CLI that hangs (waits
// for a login, a prompt) costs at most `deadline` and leaves nothing running.
VersionProbe probeVersion(const std::string& name, std::chrono::milliseconds deadline) {
  VersionProbe probe;
  probe.path = prockit::findOnPath(name);
  if (!probe.path) {
    return probe;
  }
  prockit::SpawnRequest request;
  request.path = *probe.path;
  request.argv = {name, "--version"};
  prockit::SuperviseOptions options;
  options.timeout = deadline;
  options.kill_grace = std::chrono::milliseconds(500);
  options.max_stdout = size_t{64} << 10U;
  options.clean_group_on_exit = true;
  prockit::CancelToken token(nullptr);
  auto result = prockit::supervise(std::move(request), options, token);
  if (!result) {
    probe.text = "cannot start " + *probe.path + ": " + result.failure().message;
    return probe;
  }
  switch (result->ending) {
    case prockit::Ending::kExited:
      if (WIFEXITED(result->wait_status) && WEXITSTATUS(result->wait_status) == 0) {
        probe.answered = true;
        probe.text = firstTextLine(result->stdout_text);
        if (probe.text.empty()) {
          probe.text = firstTextLine(result->stderr_tail);
        }
      } else {
        const std::string err = firstTextLine(result->stderr_tail);
        probe.text = "`" + name + " --version` ended with " +
                     prockit::describeWaitStatus(result->wait_status) +
                     (err.empty() ? "" : ": " + err);
      }
      break;
    case prockit::Ending::kTimedOut:
      probe.text = "`" + name + " --version` did not answer within " +
                   std::to_string(deadline.count()) + " ms (stopped)";
      break;
    case prockit::Ending::kCancelled:
    case prockit::Ending::kStalled:
    case prockit::Ending::kOverflow:
    case prockit::Ending::kStopped:
    default:
      probe.text = "`" + name + " --version` printed too much or stopped early";
      break;
  }
  return probe;
}

constexpr int kMinNodeMajor = 20;

Check nodeCheck(const VersionProbe& probe) {
  constexpr std::string_view kWho = "only .mjs/.js tools need it";
  Check check{"Node.js >= 20", Status::kFail, ""};
  if (!probe.path) {
    check.detail = "`node` is not on PATH; " + std::string(kWho) +
                   " (install Node.js 20 or later, or write tools as executables or .so)";
    return check;
  }
  if (!probe.answered) {
    check.detail = probe.text + "; " + std::string(kWho);
    return check;
  }
  // "v20.11.1"
  const std::string& version = probe.text;
  const size_t digits = version.find_first_of("0123456789");
  const int major = digits == std::string::npos ? -1 : std::atoi(version.c_str() + digits);
  if (major < kMinNodeMajor) {
    check.detail = *probe.path + " is " + (version.empty() ? "of an unknown version" : version) +
                   ", older than 20; " + std::string(kWho) + " (install Node.js 20 or later)";
    return check;
  }
  check.status = Status::kPass;
  check.detail = version + " (" + *probe.path + ")";
  return check;
}

Check cliCheck(const std::string& name, std::string_view provider, const VersionProbe& probe) {
  Check check{name, Status::kWarn, ""};
  const std::string who = "cli-agent nodes with provider: " + std::string(provider) + " need it";
  if (!probe.path) {
    check.detail = "`" + name + "` is not on PATH; " + who;
  } else if (!probe.answered) {
    check.detail = probe.text + "; " + who;
  } else {
    check.status = Status::kPass;
    check.detail = probe.text + " (" + *probe.path + ")";
  }
  return check;
}

Check providerCheck() {
  Check check{"LLM provider", Status::kWarn, ""};
  std::string found;
  for (const char* name : {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"}) {
    const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read only
    if (value != nullptr && *value != '\0') {
      found += (found.empty() ? "" : ", ") + std::string(name);
    }
  }
  if (found.empty()) {
    check.detail =
        "none of ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENAI_BASE_URL is set; agent and skill "
        "nodes need one (or run from a recording: oe run --llm-replay FILE)";
  } else {
    check.status = Status::kPass;
    check.detail = found + " set";  // the names only: never print a key
  }
  return check;
}

// A file created and removed in `dir`: the only test that also holds for root (who ignores
// permission bits) and for read-only mounts.
std::optional<std::string> writeProbe(const std::filesystem::path& dir) {
  std::string pattern = (dir / ".oe-doctor-XXXXXX").string();
  const int fd = mkstemp(pattern.data());
  if (fd < 0) {
    return std::string(std::strerror(errno));  // NOLINT(concurrency-mt-unsafe): one thread
  }
  close(fd);
  unlink(pattern.c_str());
  return std::nullopt;
}

Check stateFolderCheck(const std::filesystem::path& folder) {
  const std::filesystem::path state = folder / ".openexpertise";
  Check check{".openexpertise/ writable", Status::kFail, ""};
  std::error_code ec;
  if (std::filesystem::exists(state, ec)) {
    if (!std::filesystem::is_directory(state, ec)) {
      check.detail = state.string() + " exists but is not a folder; move it away so runs can " +
                     "keep their state there";
    } else if (auto err = writeProbe(state)) {
      check.detail = "cannot write in " + state.string() + ": " + *err +
                     "; runs keep their state, logs and cache there (fix its permissions)";
    } else {
      check.status = Status::kPass;
      check.detail = state.string();
    }
    return check;
  }
  if (!std::filesystem::is_directory(folder, ec)) {
    check.detail =
        folder.string() + " is not a folder; pass an experience folder with " + "--experience DIR";
  } else if (auto err = writeProbe(folder)) {
    check.detail = "cannot create " + state.string() + ": " + *err +
                   "; runs keep their state, logs and cache there (run from a writable folder)";
  } else {
    check.status = Status::kPass;
    check.detail = state.string() + " (created by the first run)";
  }
  return check;
}

// One folder of the plugin search path, as doctor reports it: where it came from and what was
// found in it, so a user sees why a kind comes from one plugin and not another.
struct PluginFolder {
  std::filesystem::path path;
  std::string origin;            // why it is searched
  std::string state;             // "searched", "missing" or "repeated"
  Json plugins = Json::array();  // {id, version, abi, kinds, shadowed, file} per library loaded
  Json refused = Json::array();  // {file, reason} per library that did not load
};

// The search path's own order (PluginRegistry::searchPath): the experience's plugins/ first,
// then $OE_PLUGIN_PATH's entries, then the folder beside this oe. Named by matching, not by
// position, so a folder listed twice is named after its first role.
std::string pluginFolderOrigin(const std::filesystem::path& dir,
                               const std::filesystem::path& experience_plugins) {
  if (dir == experience_plugins) {
    return "the experience's plugins/";
  }
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read only
  if (const char* env = std::getenv("OE_PLUGIN_PATH"); env != nullptr) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      if (rest.substr(0, colon) == dir.string()) {
        return "OE_PLUGIN_PATH";
      }
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    }
  }
  return "beside this oe binary";
}

std::vector<PluginFolder> pluginChecks(const std::filesystem::path& folder,
                                       std::vector<Check>& checks) {
  StderrLog sink;
  plugins::PluginRegistry registry(&sink);
  const auto dirs = plugins::PluginRegistry::searchPath(folder);
  registry.loadFrom(dirs);
  for (const auto& lib : registry.libraries()) {
    std::string kinds;
    for (const plugins::KindTable& entry : lib->kinds()) {
      kinds += (kinds.empty() ? "" : ",") + std::string(entry.table.kind);
    }
    checks.push_back({"plugin " + lib->id(), Status::kPass,
                      lib->version() + ", kinds: " + (kinds.empty() ? "-" : kinds) + " (" +
                          lib->path().string() + ")"});
  }
  for (const auto& refusal : registry.refusals()) {
    checks.push_back({"plugin " + refusal.path.filename().string(), Status::kFail, refusal.reason});
  }
  if (registry.libraries().empty() && registry.refusals().empty()) {
    std::string searched;
    for (const auto& d : dirs) {
      searched += (searched.empty() ? "" : " ") + d.string();
    }
    checks.push_back({"plugins", Status::kWarn,
                      "no plugins found, so no node kind can run; searched: " + searched});
  }

  // The registry loads each folder once, from its canonical path; its libraries and refusals
  // are matched back to the folder they came from the same way.
  std::vector<PluginFolder> folders;
  std::set<std::filesystem::path> seen;
  for (const auto& dir : dirs) {
    PluginFolder report{dir, pluginFolderOrigin(dir, folder / "plugins"), "searched"};
    std::error_code ec;
    const auto canonical = std::filesystem::canonical(dir, ec);
    if (ec || !std::filesystem::is_directory(canonical, ec)) {
      report.state = "missing";
    } else if (!seen.insert(canonical).second) {
      report.state = "repeated";
    } else {
      for (const auto& lib : registry.libraries()) {
        if (lib->path().parent_path() != canonical) {
          continue;
        }
        Json kinds = Json::array();
        Json shadowed = Json::array();  // its kinds that an earlier plugin provides instead
        for (const plugins::KindTable& entry : lib->kinds()) {
          kinds.push_back(entry.table.kind);
          const plugins::LoadedKind* served = registry.find(entry.table.kind);
          if (served != nullptr && served->library != lib) {
            shadowed.push_back(entry.table.kind);
          }
        }
        report.plugins.push_back({{"id", lib->id()},
                                  {"version", lib->version()},
                                  {"abi", plugins::abiVersionString(lib->abiVersion())},
                                  {"kinds", kinds},
                                  {"shadowed", shadowed},
                                  {"file", lib->path().filename().string()}});
      }
      for (const auto& refusal : registry.refusals()) {
        if (refusal.path.parent_path() == canonical) {
          report.refused.push_back(
              {{"file", refusal.path.filename().string()}, {"reason", refusal.reason}});
        }
      }
    }
    folders.push_back(std::move(report));
  }
  return folders;
}

Json pluginFoldersJson(const std::vector<PluginFolder>& folders) {
  Json out = Json::array();
  for (const PluginFolder& f : folders) {
    out.push_back({{"path", f.path.string()},
                   {"origin", f.origin},
                   {"state", f.state},
                   {"plugins", f.plugins},
                   {"refused", f.refused}});
  }
  return out;
}

void printPluginFolders(const std::vector<PluginFolder>& folders) {
  std::cout << "\nPlugin folders, in search order (a kind comes from the first plugin that "
               "provides it):\n";
  int index = 0;
  for (const PluginFolder& f : folders) {
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
      std::cout << "       " << p["id"].get<std::string>() << ' ' << p["version"].get<std::string>()
                << "  kinds: " << (kinds.empty() ? "-" : kinds) << "  ("
                << p["file"].get<std::string>() << ")\n";
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
    const std::chrono::milliseconds deadline(a->timeout_ms);
    const std::filesystem::path folder = a->experience;
    // The four programs at once: a hanging one costs one deadline, not four.
    struct Cli {
      std::string name;
      std::string_view provider;
    };
    const std::vector<Cli> clis = {
        {"claude", "claude-code"}, {"codex", "codex"}, {"gemini", "gemini"}};
    auto node = std::async(std::launch::async, probeVersion, std::string("node"), deadline);
    std::vector<std::future<VersionProbe>> cli_probes;
    cli_probes.reserve(clis.size());
    for (const Cli& cli : clis) {
      cli_probes.push_back(std::async(std::launch::async, probeVersion, cli.name, deadline));
    }
    std::vector<Check> checks;
    checks.push_back(nodeCheck(node.get()));
    for (size_t i = 0; i < clis.size(); ++i) {
      checks.push_back(cliCheck(clis[i].name, clis[i].provider, cli_probes[i].get()));
    }
    checks.push_back(providerCheck());
    checks.push_back(stateFolderCheck(folder));
    const std::vector<PluginFolder> plugin_folders = pluginChecks(folder, checks);

    int passed = 0;
    int warned = 0;
    int failed = 0;
    Json list = Json::array();
    for (const Check& check : checks) {
      passed += check.status == Status::kPass ? 1 : 0;
      warned += check.status == Status::kWarn ? 1 : 0;
      failed += check.status == Status::kFail ? 1 : 0;
      list.push_back(
          {{"name", check.name}, {"status", statusName(check.status)}, {"detail", check.detail}});
    }
    if (a->json) {
      const Json out = {{"checks", list},
                        {"plugin_dirs", pluginFoldersJson(plugin_folders)},
                        {"summary", {{"passed", passed}, {"warned", warned}, {"failed", failed}}}};
      std::cout << out.dump(2) << '\n';
    } else {
      for (const Check& check : checks) {
        std::cout << statusMark(check.status) << ' ' << check.name << ": " << check.detail << '\n';
      }
      printPluginFolders(plugin_folders);
      std::cout << "\nSummary: " << passed << " passed \xC2\xB7 " << warned << " warnings \xC2\xB7 "
                << failed << " failures\n";
    }
    exit_code = failed > 0 ? kExitFailed : kExitOk;
  });
}

}  // namespace oe::cli

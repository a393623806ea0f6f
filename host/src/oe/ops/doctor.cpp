// The checks of `oe doctor` (see doctor.hpp).
#include "oe/ops/doctor.hpp"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <future>
#include <set>

#include "oe/ops/context.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/plugins/trust_store.hpp"
#include "oe/spec/loader.hpp"
#include "oe/run/policy_confinement.hpp"
#include "proc_kit/supervisor.hpp"

namespace oe::ops {
namespace {

constexpr int kMinNodeMajor = 20;

std::string firstTextLine(std::string_view text) {
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) {
    return "";
  }
  text.remove_prefix(start);
  return std::string(text.substr(0, text.find_first_of("\r\n")));
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

// A kind or LLM provider name of `entry` that another plugin keeps (the built-in one, or an
// earlier one on the search path), as the registry resolved it.
bool shadowedKind(const plugins::PluginRegistry& registry, const plugins::PluginEntry& entry,
                  const std::string& kind) {
  const plugins::LoadedKind* served = registry.find(kind);
  return served != nullptr && served->plugin != &entry;
}

std::vector<PluginFolder> pluginChecks(const std::filesystem::path& folder,
                                       std::vector<Check>& checks) {
  StderrLog sink;
  // As `oe validate` sees them: the built-in plugins loaded, the others read from their
  // manifests, none of their code run.
  plugins::PluginRegistry registry(&sink, plugins::Access::kDescribe);
  const auto dirs = plugins::PluginRegistry::searchPath(folder);
  registry.loadFrom(dirs);
  {
    // The experience's plugins.override decides who keeps a contested name, as in a run.
    auto loaded = spec::loadExperience(spec::resolveExperiencePath(folder));
    if (loaded.experience) {
      registry.setOverrides(loaded.experience->plugin_overrides);
    }
  }
  const std::vector<plugins::TrustRecord> trust = userTrustRecords();
  for (const plugins::PluginEntry& entry : registry.plugins()) {
    const plugins::PluginManifest& m = entry.manifest;
    std::string kinds;
    for (const plugins::KindManifest& kind : m.kinds) {
      kinds += (kinds.empty() ? "" : ",") + kind.kind;
    }
    const std::string trusted = trustLabel(entry, trust);
    const bool runs = entry.builtin || trusted == "trusted";
    checks.push_back({"plugin " + m.id, runs ? CheckStatus::kPass : CheckStatus::kWarn,
                      m.version + ", kinds: " + (kinds.empty() ? "-" : kinds) + " (" +
                          entry.path.string() + "; " + trusted +
                          (runs ? std::string(")")
                                : "; a run refuses it until you review it and run " +
                                      plugins::trustCommand(entry.path) + ")")});
  }
  for (const auto& refusal : registry.refusals()) {
    checks.push_back(
        {"plugin " + refusal.path.filename().string(), CheckStatus::kFail, refusal.reason});
  }
  for (const std::string& warning : registry.warnings()) {
    checks.push_back({"plugin names", CheckStatus::kWarn, warning});
  }
  if (registry.plugins().empty() && registry.refusals().empty()) {
    std::string searched;
    for (const auto& d : dirs) {
      searched += (searched.empty() ? "" : " ") + d.string();
    }
    checks.push_back({"plugins", CheckStatus::kWarn,
                      "no plugins found, so no node kind can run; searched: " + searched});
  }

  // The registry reads each folder once, from its canonical path; its plugins and refusals
  // are matched back to the folder they came from the same way.
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read only
  const char* oe_plugin_path = std::getenv("OE_PLUGIN_PATH");
  std::vector<PluginFolder> folders;
  std::set<std::filesystem::path> seen;
  for (const auto& dir : dirs) {
    PluginFolder report{dir, pluginFolderOrigin(dir, folder / "plugins", oe_plugin_path),
                        "searched"};
    std::error_code ec;
    const auto canonical = std::filesystem::canonical(dir, ec);
    if (ec || !std::filesystem::is_directory(canonical, ec)) {
      report.state = "missing";
    } else if (!seen.insert(canonical).second) {
      report.state = "repeated";
    } else {
      for (const plugins::PluginEntry& entry : registry.plugins()) {
        if (entry.path.parent_path() != canonical) {
          continue;
        }
        const plugins::PluginManifest& m = entry.manifest;
        Json kinds = Json::array();
        Json shadowed = Json::array();  // its kinds that another plugin provides instead
        for (const plugins::KindManifest& kind : m.kinds) {
          kinds.push_back(kind.kind);
          if (shadowedKind(registry, entry, kind.kind)) {
            shadowed.push_back(kind.kind);
          }
        }
        Json shadowed_providers = Json::array();
        for (const std::string& name : m.llm_providers) {
          const plugins::LoadedProvider* served = registry.provider(name);
          if (served != nullptr && served->plugin != &entry) {
            shadowed_providers.push_back(name);
          }
        }
        report.plugins.push_back({{"id", m.id},
                                  {"version", m.version},
                                  {"abi", plugins::abiVersionString(m.abi_version)},
                                  {"kinds", kinds},
                                  {"shadowed", shadowed},
                                  {"llm_providers", m.llm_providers},
                                  {"shadowed_llm_providers", shadowed_providers},
                                  {"built_in", entry.builtin},
                                  {"trust", trustLabel(entry, trust)},
                                  {"file", entry.path.filename().string()}});
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

}  // namespace

std::string_view toString(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kWarn:
      return "warn";
    case CheckStatus::kFail:
    default:
      return "fail";
  }
}

VersionProbe probeVersion(const std::string& name, std::chrono::milliseconds deadline,
                          const char* path_list) {
  VersionProbe probe;
  probe.path = prockit::findOnPath(name, path_list);
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

Check nodeCheck(const VersionProbe& probe) {
  constexpr std::string_view kWho = "only .mjs/.js tools need it";
  Check check{"Node.js >= 20", CheckStatus::kFail, ""};
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
  check.status = CheckStatus::kPass;
  check.detail = version + " (" + *probe.path + ")";
  return check;
}

Check cliCheck(const std::string& name, std::string_view provider, const VersionProbe& probe) {
  Check check{name, CheckStatus::kWarn, ""};
  const std::string who = "cli-agent nodes with provider: " + std::string(provider) + " need it";
  if (!probe.path) {
    check.detail = "`" + name + "` is not on PATH; " + who;
  } else if (!probe.answered) {
    check.detail = probe.text + "; " + who;
  } else {
    check.status = CheckStatus::kPass;
    check.detail = probe.text + " (" + *probe.path + ")";
  }
  return check;
}

Check providerCheck(const std::function<const char*(const char*)>& env) {
  Check check{"LLM provider", CheckStatus::kWarn, ""};
  std::string found;
  for (const char* name : {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"}) {
    const char* value = env(name);
    if (value != nullptr && *value != '\0') {
      found += (found.empty() ? "" : ", ") + std::string(name);
    }
  }
  if (found.empty()) {
    check.detail =
        "none of ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENAI_BASE_URL is set; agent and skill "
        "nodes need one (or run from a recording: oe run --llm-replay FILE)";
  } else {
    check.status = CheckStatus::kPass;
    check.detail = found + " set";  // the names only: never print a key
  }
  return check;
}

Check stateFolderCheck(const std::filesystem::path& folder) {
  const std::filesystem::path state = folder / ".openexpertise";
  Check check{".openexpertise/ writable", CheckStatus::kFail, ""};
  std::error_code ec;
  if (std::filesystem::exists(state, ec)) {
    if (!std::filesystem::is_directory(state, ec)) {
      check.detail = state.string() + " exists but is not a folder; move it away so runs can " +
                     "keep their state there";
    } else if (auto err = writeProbe(state)) {
      check.detail = "cannot write in " + state.string() + ": " + *err +
                     "; runs keep their state, logs and cache there (fix its permissions)";
    } else {
      check.status = CheckStatus::kPass;
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
    check.status = CheckStatus::kPass;
    check.detail = state.string() + " (created by the first run)";
  }
  return check;
}

std::vector<Check> sandboxChecks(const sandbox::KernelFeatures& kernel, bool per_namespace_pid_max,
                                 bool kernel_root, const std::optional<std::string>& sandbox_exe) {
  std::vector<Check> out;
  if (sandbox_exe) {
    out.push_back({"oe-sandbox", CheckStatus::kPass, *sandbox_exe});
  } else {
    out.push_back({"oe-sandbox", CheckStatus::kFail,
                   "not found next to oe nor in its libexec/oe folder; nodes with a policy "
                   "cannot run (reinstall oe)"});
  }
  if (kernel.landlock_abi > 0) {
    out.push_back({"sandbox: Landlock", CheckStatus::kPass,
                   "ABI " + std::to_string(kernel.landlock_abi) + ": policy fs rules enforced"});
  } else {
    out.push_back(
        {"sandbox: Landlock", CheckStatus::kWarn,
         (kernel.landlock_note.empty() ? std::string("not available") : kernel.landlock_note) +
             "; a policy with fs: runs only under enforce: best_effort, unconfined"});
  }
  std::string present;
  std::string missing;
  for (const auto& [name, has] : {std::pair<const char*, bool>{"user", kernel.user_ns},
                                  {"network", kernel.net_ns},
                                  {"mount", kernel.mount_ns},
                                  {"pid", kernel.pid_ns}}) {
    std::string& list = has ? present : missing;
    list += (list.empty() ? "" : ", ") + std::string(name);
  }
  if (missing.empty() || (kernel_root && missing == "user")) {
    out.push_back({"sandbox: namespaces", CheckStatus::kPass,
                   present + ": network none/loopback/allow-list and read-only .git enforced"});
  } else {
    out.push_back({"sandbox: namespaces", CheckStatus::kWarn,
                   "cannot create " + missing +
                       " namespaces; policies with network: or a writable .git run only under "
                       "enforce: best_effort (a container may forbid them: "
                       "--security-opt seccomp=unconfined, or run oe on the host)"});
  }
  if (!kernel_root) {
    out.push_back({"sandbox: process limit", CheckStatus::kPass, "RLIMIT_NPROC"});
  } else if (per_namespace_pid_max && kernel.pid_ns) {
    out.push_back({"sandbox: process limit", CheckStatus::kPass,
                   "a PID namespace's own pid_max (root is exempt from RLIMIT_NPROC)"});
  } else {
    out.push_back({"sandbox: process limit", CheckStatus::kWarn,
                   "as root, limits.processes needs Linux 6.14 or later (a PID namespace's own "
                   "pid_max); it runs only under enforce: best_effort here"});
  }
  // Not a warning when absent: nothing oe enforces needs it today.
  out.push_back({"sandbox: cgroup v2", CheckStatus::kPass,
                 kernel.cgroup_v2 ? std::string("mounted")
                                  : std::string("not mounted (not needed: limits are rlimits and a "
                                                "PID namespace's pid_max)")});
  return out;
}

std::string pluginFolderOrigin(const std::filesystem::path& dir,
                               const std::filesystem::path& experience_plugins,
                               const char* oe_plugin_path) {
  if (dir == experience_plugins) {
    return "the experience's plugins/";
  }
  if (oe_plugin_path != nullptr) {
    std::string_view rest(oe_plugin_path);
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

Json DoctorReport::toJson() const {
  Json list = Json::array();
  for (const Check& check : checks) {
    list.push_back(
        {{"name", check.name}, {"status", toString(check.status)}, {"detail", check.detail}});
  }
  Json dirs = Json::array();
  for (const PluginFolder& f : plugin_folders) {
    dirs.push_back({{"path", f.path.string()},
                    {"origin", f.origin},
                    {"state", f.state},
                    {"plugins", f.plugins},
                    {"refused", f.refused}});
  }
  return {{"checks", list},
          {"plugin_dirs", dirs},
          {"summary", {{"passed", passed}, {"warned", warned}, {"failed", failed}}}};
}

DoctorReport runDoctor(const std::filesystem::path& folder, std::chrono::milliseconds deadline) {
  // The four programs at once: a hanging one costs one deadline, not four.
  struct Cli {
    std::string name;
    std::string_view provider;
  };
  const std::vector<Cli> clis = {
      {"claude", "claude-code"}, {"codex", "codex"}, {"gemini", "gemini"}};
  const auto probe = [deadline](const std::string& name) { return probeVersion(name, deadline); };
  auto node = std::async(std::launch::async, probe, std::string("node"));
  std::vector<std::future<VersionProbe>> cli_probes;
  cli_probes.reserve(clis.size());
  for (const Cli& cli : clis) {
    cli_probes.push_back(std::async(std::launch::async, probe, cli.name));
  }
  DoctorReport report;
  report.checks.push_back(nodeCheck(node.get()));
  for (size_t i = 0; i < clis.size(); ++i) {
    report.checks.push_back(cliCheck(clis[i].name, clis[i].provider, cli_probes[i].get()));
  }
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read only
  report.checks.push_back(providerCheck([](const char* name) { return std::getenv(name); }));
  report.checks.push_back(stateFolderCheck(folder));
  for (Check& check : sandboxChecks(sandbox::probeKernel(), sandbox::hasPerNamespacePidMax(),
                                    sandbox::isKernelRoot(), run::sandboxExecutable())) {
    report.checks.push_back(std::move(check));
  }
  report.plugin_folders = pluginChecks(folder, report.checks);
  for (const Check& check : report.checks) {
    report.passed += check.status == CheckStatus::kPass ? 1 : 0;
    report.warned += check.status == CheckStatus::kWarn ? 1 : 0;
    report.failed += check.status == CheckStatus::kFail ? 1 : 0;
  }
  return report;
}

}  // namespace oe::ops

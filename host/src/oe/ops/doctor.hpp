// `oe doctor` without the CLI: what this oe needs on this machine, checked as values: Node.js for
// .mjs/.js tools, the coding CLIs, an LLM provider, a writable .openexpertise/, and every plugin
// readable (the built-in ones loaded, the others described by their manifests, as `oe validate`
// sees them) and trusted, with the plugin folders searched (in order) and what each held.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/sandbox/kernel.hpp"

namespace oe::ops {

enum class CheckStatus { kPass, kWarn, kFail };
[[nodiscard]] std::string_view toString(CheckStatus status);  // pass, warn, fail

struct Check {
  std::string name;
  CheckStatus status = CheckStatus::kPass;
  std::string detail;  // what was found, or what is wrong and what to do
};

// What `<program> --version` said, or why it said nothing.
struct VersionProbe {
  std::optional<std::string> path;  // nullopt: not on PATH
  bool answered = false;            // exited 0 within the deadline
  std::string text;                 // the first line of stdout, or what went wrong
};

// Runs `<name> --version`, `name` looked up in `path_list` (colon-separated; null: PATH), in its
// own process group with a deadline, so a CLI that hangs (waits for a login, a prompt) costs at
// most `deadline` and leaves nothing running.
[[nodiscard]] VersionProbe probeVersion(const std::string& name, std::chrono::milliseconds deadline,
                                        const char* path_list = nullptr);

// Node.js 20 or later (a fail: .mjs/.js tools need it).
[[nodiscard]] Check nodeCheck(const VersionProbe& probe);
// A coding CLI that cli-agent nodes with `provider` run (a warning when it is missing).
[[nodiscard]] Check cliCheck(const std::string& name, std::string_view provider,
                             const VersionProbe& probe);
// An LLM provider's key or URL in the environment (`env`: getenv's shape); names only, never a
// value.
[[nodiscard]] Check providerCheck(const std::function<const char*(const char*)>& env);
// `folder`/.openexpertise/ can be written (or created): a file is made and removed in it.
[[nodiscard]] Check stateFolderCheck(const std::filesystem::path& folder);
// What this kernel lets oe-sandbox enforce for a node's policy (docs/policy.md): Landlock and its
// ABI, the namespaces, the process limit, cgroup v2, and where oe-sandbox is. `sandbox_exe`:
// sandboxExecutable()'s answer. A mechanism missing is a warning (only policies that need it
// and say enforce: required are refused); oe-sandbox missing is a failure.
[[nodiscard]] std::vector<Check> sandboxChecks(const sandbox::KernelFeatures& kernel,
                                               bool per_namespace_pid_max, bool kernel_root,
                                               const std::optional<std::string>& sandbox_exe);

// One folder of the plugin search path, as doctor reports it: where it came from and what was
// found in it, so a user sees why a kind comes from one plugin and not another.
struct PluginFolder {
  std::filesystem::path path;
  std::string origin;            // why it is searched
  std::string state;             // "searched", "missing" or "repeated"
  // {id, version, abi, kinds, shadowed, llm_providers, shadowed_llm_providers, built_in, trust,
  // file} per library found
  Json plugins = Json::array();
  Json refused = Json::array();  // {file, reason} per library refused
};

// Why `dir` is on the search path (PluginRegistry::searchPath's order): the experience's
// plugins/ (`experience_plugins`), an entry of `oe_plugin_path` ($OE_PLUGIN_PATH, may be null),
// else the folder beside this oe. Named by matching, not by position, so a folder listed twice
// is named after its first role.
[[nodiscard]] std::string pluginFolderOrigin(const std::filesystem::path& dir,
                                             const std::filesystem::path& experience_plugins,
                                             const char* oe_plugin_path);

struct DoctorReport {
  std::vector<Check> checks;
  std::vector<PluginFolder> plugin_folders;
  int passed = 0;
  int warned = 0;
  int failed = 0;
  // {checks: [{name, status, detail}], plugin_dirs: [...], summary: {passed, warned, failed}}
  [[nodiscard]] Json toJson() const;
};

// Every check, for the experience folder `folder` (its .openexpertise/ and plugins/); each
// `--version` may take `deadline`, and the four programs are asked at once.
[[nodiscard]] DoctorReport runDoctor(const std::filesystem::path& folder,
                                     std::chrono::milliseconds deadline);

}  // namespace oe::ops

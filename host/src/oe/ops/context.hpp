// What every front end (the CLI, the MCP tools) needs before it can act on an experience: its
// plugins loaded (the experience's own plugins/ folder included), and the experience checked as
// `oe validate` checks it, as values. Plugin log lines and plugin problems go to stderr, which is
// the log of `oe mcp` as it is the terminal of a command.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/diagnostic.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/plugins/trust_store.hpp"
#include "oe/spec/experience.hpp"
#include "oe/spec/loader.hpp"

namespace oe::ops {

// Plugin log lines on stderr: "[plugin-id] message".
class StderrLog final : public plugins::LogSink {
 public:
  void write(oe_log_level level, std::string_view source, std::string_view message) override;
  // While a live view owns the terminal, lines go to it (printed above its region) instead of
  // straight to stderr, which would tear its frame. Set before a run starts, reset after.
  void divertTo(std::function<void(std::string)> to) { divert_ = std::move(to); }

 private:
  std::function<void(std::string)> divert_;
};

// Loads the plugins an experience can use (its own plugins/ folder included).
void loadPlugins(plugins::PluginRegistry& registry,
                 const std::optional<std::filesystem::path>& experience_dir);
// Prints refused plugins and plugin warnings to stderr as warnings; a library refused as
// untrusted is not among them (a front end that runs plugins stops on it: untrustedErrors).
void reportPluginProblems(const plugins::PluginRegistry& registry);

// The trust gate of a process that runs plugins (docs/trust.md): the user's trust store, and,
// when stdin and stderr are both a terminal, a question on it for each library that is not
// trusted ("trust and load ...? [y/N]"), asked once, a yes recorded.
std::unique_ptr<plugins::TrustGate> trustGate();
// A terminal's question about one library, on stderr, the answer read from stdin.
bool askOnTerminal(const plugins::TrustGate::Question& question);
// The user's trust records (trustStorePath()); none when there is no store or it cannot be read
// (what lists plugins says so; only `oe trust` writes it).
std::vector<plugins::TrustRecord> userTrustRecords();
// "built in", "trusted", "changed since it was trusted" or "not trusted": whether a run would
// load `entry` without asking.
std::string trustLabel(const plugins::PluginEntry& entry,
                       const std::vector<plugins::TrustRecord>& records);
// Each library the registry refused as untrusted, as an error whose file is the library and
// whose message ends with the `oe trust` command to run.
std::vector<Diagnostic> untrustedErrors(const plugins::PluginRegistry& registry);

// What `oe validate` checks, as values (`oe mcp`'s oe_validate and oe_graph return them rather
// than print them): the load, and every diagnostic once the plugins are read into `registry`
// (only when there is a model to check them against) with the experience's plugins.override; a
// kind nobody provides names the plugins that were found but not read, and an override that
// overrides nothing is a warning. Front ends that only look pass a kDescribe registry. `report_problems`: the plugins' problems
// go to stderr (reportPluginProblems); `oe install` checks quietly.
struct Checked {
  spec::LoadResult loaded;
  std::vector<Diagnostic> diagnostics;
  // The model checked: the experience, or the partial one of a structural error; null for a YAML
  // error or a missing file.
  [[nodiscard]] const spec::Experience* model() const;
  [[nodiscard]] bool valid() const { return loaded.experience && !hasErrors(diagnostics); }
};
Checked checkExperience(const std::filesystem::path& path_arg, plugins::PluginRegistry& registry,
                        bool strict, bool report_problems = true);

// An experience loaded, its plugins loaded into the registry (with its plugins.override) and
// validated, as values; plugin problems go to stderr (reportPluginProblems). A library the
// registry refused as untrusted is an error (untrustedErrors) and nothing else is checked.
struct Validated {
  std::optional<spec::Experience> experience;  // nullopt when there was an error
  std::vector<Diagnostic> diagnostics;         // every finding (a spec snapshot has none)
  std::string file;  // the file the model came from, for "N errors in <file>"; empty when unknown
};
// `for_run`: the experience is about to run, so a spec snapshot of the unchanged file is used (or
// written, after a load without any diagnostic), and what only loading needs is dropped: the
// source positions and, from Experience::raw, the graph's nodes and edges, which the typed model
// holds (docs/performance.md). `starts_programs` false: the run starts none of the programs nodes
// name (x-oe-program; `oe run --llm-replay` answers the CLIs from a recording), so a program
// missing from PATH is not looked for; before a run that starts them it is an error, for `oe
// validate` a warning.
Validated loadValidated(const std::filesystem::path& path_arg, plugins::PluginRegistry& registry,
                        bool strict, bool for_run = false, bool starts_programs = true);

// RFC 3986 percent-encoding of everything but the unreserved characters, and its inverse
// (nullopt for a malformed escape).
std::string percentEncode(std::string_view text);
std::optional<std::string> percentDecode(std::string_view text);

}  // namespace oe::ops

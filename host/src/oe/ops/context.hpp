// What every front end (the CLI, the MCP tools) needs before it can act on an experience: its
// plugins loaded (the experience's own plugins/ folder included), and the experience checked as
// `oe validate` checks it, as values. Plugin log lines and plugin problems go to stderr, which is
// the log of `oe mcp` as it is the terminal of a command.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/diagnostic.hpp"
#include "oe/plugins/registry.hpp"
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
// Prints refused plugins and plugin warnings to stderr as warnings.
void reportPluginProblems(const plugins::PluginRegistry& registry);

// What `oe validate` checks, as values (`oe mcp`'s oe_validate and oe_graph return them rather
// than print them): the load, and every diagnostic once the plugins are loaded into `registry`
// (only when there is a model to check them against). `report_problems`: the plugins' problems
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

// RFC 3986 percent-encoding of everything but the unreserved characters, and its inverse
// (nullopt for a malformed escape).
std::string percentEncode(std::string_view text);
std::optional<std::string> percentDecode(std::string_view text);

}  // namespace oe::ops

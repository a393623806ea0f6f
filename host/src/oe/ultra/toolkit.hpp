// What `oe ultra` and `oe ultra-revise` set up before the first phase, without the CLI: the
// provider checked (upstream: no key is exit 1, before any phase, unless a recording answers),
// the plugins loaded (the smoke run's kinds), the LLM service, and the four prompts (a folder's
// replacements over oe's shipped ones).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "oe/common/result.hpp"
#include "oe/llm/llm_service.hpp"
#include "oe/llm/settings.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/spec/validate.hpp"
#include "oe/ultra/ultra.hpp"

namespace oe::ultra {

struct ToolkitConfig {
  llm::Settings llm;                              // the flags, the budget and the environment
  std::optional<std::filesystem::path> data_dir;  // oe's share/oe (its prompts/ultra)
  // --prompts, else $OE_ULTRA_PROMPTS: a folder whose prompt files replace the shipped ones.
  std::optional<std::filesystem::path> prompts_dir;
  // Asked before a plugin on OE_PLUGIN_PATH loads (docs/trust.md); null: none loads.
  plugins::TrustGate* trust = nullptr;
};

// What the phases work with.
struct Toolkit {
  std::unique_ptr<plugins::PluginRegistry> registry;
  std::unique_ptr<llm::LlmService> llm;
  spec::KindCatalog kinds;
  Prompts prompts;
  // The phases' context, their log lines going to `sink`.
  [[nodiscard]] Context context(plugins::LogSink& sink) const {
    return {*llm, *registry, kinds, prompts, sink};
  }
};

// Checks the provider (unless config.llm replays a recording), loads the plugins into a registry
// logging to `sink` (their problems go to `warning`), creates the LLM service and reads the
// prompts. The error says what is missing: the provider's key, the prompts folder, a prompt.
[[nodiscard]] Result<Toolkit> makeToolkit(ToolkitConfig config, plugins::LogSink& sink,
                                          const std::function<void(const std::string&)>& warning);

// `oe ultra`'s upstream summary of a draft (its `draft created` fields, in upstream's order):
// slug, draftDir, phases, nodes ("id(kind)"), open_questions, files_written, valid,
// validation_errors, next_steps, and rounds_run and final_score when it was critiqued.
[[nodiscard]] nlohmann::ordered_json draftSummary(const UltraResult& result);

}  // namespace oe::ultra

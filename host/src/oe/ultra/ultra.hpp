// `oe ultra` and `oe ultra-revise` without the CLI (reference §8.2): analyze -> synthesize ->
// (critique -> revise)* with keep-best scoring, validation errors and smoke-run failures fed
// back to the reviser, and the draft written with a path-traversal guard. The LLM calls go
// through the host's LLM service (limits, budget, record/replay). The result is data, progress
// comes through a callback, and a flag cancels between and during phases: the CLI and (later)
// the MCP tools oe_ultra / oe_ultra_revise share this API.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/llm/llm_service.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/ultra/check.hpp"
#include "oe/ultra/draft.hpp"
#include "oe/ultra/exemplars.hpp"
#include "oe/ultra/score.hpp"

namespace oe::ultra {

// The four system prompts (host/prompts/ultra/*.md).
struct Prompts {
  std::string analyzer;
  std::string synthesizer;
  std::string critic;
  std::string reviser;
};
// Reads analyzer.md, synthesizer.md, critic.md and reviser.md: each from `override_dir` when it
// has that file, else from `shipped_dir`. The error names the missing file.
[[nodiscard]] Result<Prompts> loadPrompts(const std::filesystem::path& shipped_dir,
                                          const std::optional<std::filesystem::path>& override_dir);

// One phase starting or ending (upstream's onPhase: {phase, status, duration_ms, round?}).
struct PhaseEvent {
  std::string phase;  // analyze | exemplars | synthesize | check | critique | revise | write
  // start | done | failed (the phase itself failed) | invalid (a check found the draft invalid)
  // | rejected (a revision that was not kept)
  std::string status;
  int64_t duration_ms = 0;
  int round = 0;       // 0: the first draft
  std::string detail;  // e.g. "valid", "score 72, 2 findings"
};

struct Options {
  std::string model;         // empty: the LLM service's default
  std::string critic_model;  // empty: `model`
  int max_rounds = 1;        // critique -> revise rounds (the CLI's default is upstream's 1)
  // Extra revise rounds while no valid draft exists yet: the validation and smoke errors go back
  // to the reviser automatically (upstream's most requested fix).
  int fix_rounds = 2;
  double score_bar = 80;                           // OE_ULTRA_SCORE_BAR
  std::optional<std::vector<Exemplar>> exemplars;  // given: used as they are
  std::optional<std::filesystem::path> corpus;     // else picked from here
  CheckOptions check;
  std::function<void(const PhaseEvent&)> on_phase;
  const std::atomic<bool>* cancel = nullptr;
};

struct LoopReport {
  int rounds_run = 0;
  std::optional<double> final_score;  // the kept draft's composite, when it was critiqued
  Json critiques = Json::array();     // [{round, score, findings}]
  llm::Usage usage;
  [[nodiscard]] Json toJson() const;
};

struct UltraResult {
  Json analysis;
  bool stopped = false;  // --dry-run: analysis only
  std::string slug;
  Synthesis synthesis;  // the kept (best) draft
  std::filesystem::path draft_dir;
  std::vector<std::string> files_written;
  DraftCheck check;
  LoopReport loop;
  bool accepted_revision = true;  // ultra-revise: false when no revision was good enough
  // Upstream's shapes plus oe's: {slug, draft_dir, analysis, synthesis, validation,
  // files_written, loop, check}; `with_contents` false leaves file contents out (MCP oe_ultra).
  [[nodiscard]] Json toJson(bool with_contents) const;
};

// What a phase needs besides the options: the service the calls go to, the plugins the
// smoke run uses, and the prompts.
struct Context {
  llm::LlmService& llm;
  const plugins::PluginRegistry& registry;
  const spec::KindCatalog& kinds;
  const Prompts& prompts;
  plugins::LogSink& log;
};

// `oe ultra <task>`: the draft goes to `root_dir/<slug>` (slug: `draft_slug`, else the analysis
// name slugified), with analysis.json beside it. `stop_after_analyze`: --dry-run.
[[nodiscard]] Result<UltraResult> author(const Context& context, const std::string& task,
                                         const std::filesystem::path& root_dir,
                                         const std::string& draft_slug, bool stop_after_analyze,
                                         const Options& options);

// `oe ultra-revise <draft> <feedback>`: the feedback as the first, high finding, at least one
// revise, the kept draft rewritten in place (files it no longer lists pruned).
[[nodiscard]] Result<UltraResult> reviseDraft(const Context& context,
                                              const std::filesystem::path& draft_dir,
                                              const std::string& feedback, const Options& options);

}  // namespace oe::ultra

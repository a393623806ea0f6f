// What oe checks of a draft without asking an LLM: the paths are safe, `oe validate` passes,
// and the smoke run succeeds: the draft, written to a scratch folder, run once with every LLM
// and coding CLI call answered by a schema-shaped stand-in (llm/stand_in.hpp) and its tools
// executed for real. The draft's own folder is never touched.
#pragma once

#include <filesystem>

#include "oe/llm/settings.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/spec/validate.hpp"
#include "oe/ultra/draft.hpp"
#include "oe/ultra/score.hpp"

namespace oe::ultra {

struct CheckOptions {
  bool smoke = true;     // false: validation only (--no-smoke)
  llm::Environment env;  // handed to the smoke run's (stand-in) LLM service
};

// Writes `synthesis` into `scratch` (emptied first, removed afterwards), validates it with
// `kinds` as `oe validate` does, and when it is valid runs it with the stand-in LLM service.
// Messages name the draft's files, not the scratch folder.
[[nodiscard]] DraftCheck checkDraft(const Synthesis& synthesis,
                                    const std::filesystem::path& scratch,
                                    const plugins::PluginRegistry& registry,
                                    const spec::KindCatalog& kinds, const CheckOptions& options);

// The node ids, state fields and file paths of a draft (for the anchor filter); what cannot be
// parsed is simply absent.
[[nodiscard]] DraftNames draftNames(const Synthesis& synthesis);

}  // namespace oe::ultra

// What a front end checks before it starts a run (`oe run`, `oe resume`): what would fail the run
// once it has started, or make it run without what it was asked for, is a bad invocation, said
// and refused before anything is recorded. Each check's error is the message, without "oe: ".
#pragma once

#include <string>

#include "oe/common/result.hpp"
#include "oe/llm/settings.hpp"
#include "oe/spec/experience.hpp"

namespace oe::launch {

// The path names an experience: a folder with experience.yaml, or a yaml file. The error says
// what the path is instead (a folder without one, something else, nothing) and what to pass.
Result<void> checkExperiencePath(const std::string& path);

// --max-tokens (a non-negative integer) and --max-cost-usd (a non-negative number of US
// dollars), as text; an empty text leaves its limit unset.
Result<llm::Budget> parseBudget(const std::string& max_tokens, const std::string& max_cost_usd);

// --concurrency: a positive integer.
Result<int> parseConcurrency(const std::string& text);

// The LLM settings a run was given: a known --llm provider, a readable --llm-replay recording,
// else the key of the --llm provider (a run asked for a provider it cannot reach would run its
// tools and then fail every LLM node), and an existing folder for --llm-record.
Result<void> checkLlmSettings(const llm::Settings& settings);

// --from and --only (either may be empty) name nodes of the experience.
Result<void> checkSelection(const spec::Experience& experience, const std::string& from_node,
                            const std::string& only_node);

// The store a run uses (--store, OE_STORE, runtime.store; empty: the experience's SQLite
// files): a PostgreSQL URL when given, and given when `workers` hand node attempts to `oe worker`
// processes (they claim them from its work queue).
Result<void> checkStore(const std::string& store_url, bool workers);

}  // namespace oe::launch

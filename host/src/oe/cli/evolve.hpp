// `oe evolve` as a function, so that `oe run --evolve` runs the same steps on the run it just
// finished.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>

#include "oe/llm/settings.hpp"

namespace oe::cli {

struct EvolveOptions {
  std::filesystem::path experience = ".";  // the folder (or yaml) as the user named it
  std::string run_id;                      // an id or a unique prefix; empty with `last`
  bool last = false;
  llm::Settings llm;   // --llm, --llm-record / --llm-replay and the environment
  std::string prompt;  // --prompt FILE: replaces oe's proposal prompt
  std::string model;   // --model
  // --evaluate: run each valid proposal's copy with the run's args and the original's cache
  bool evaluate = false;
  // --evaluate-runs N: with --evaluate, the evaluated run and up to N-1 more finished runs of
  // the experience, newest first, whose args differ from those already taken (an input set).
  int evaluate_runs = 1;
};

// Reads the run's YAML, events and state diff, asks the `evolution` kind for proposals, gates
// each one (apply to a scratch copy + `oe validate`), writes
// .openexpertise/evolution/<run-id>.md and its .json sidecar, and prints a summary on `out`.
// Returns the exit code (reference §9.2: a missing yaml or log, or a failed LLM call, is 1);
// the message of a failure is on stderr.
int evolve(const EvolveOptions& options, std::ostream& out);

}  // namespace oe::cli

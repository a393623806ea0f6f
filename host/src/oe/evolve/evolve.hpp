// `oe evolve` end to end, without the CLI (reference §8.1, §9.2): a finished run's YAML, events
// and state diff to the advisor, each proposal gated (and with --evaluate, run as a candidate
// copy), the report and its sidecar written; `--apply N` re-gated against the folder as it is
// now and written with backups; and the list of the reports `oe diff` shows.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/evolve/proposals.hpp"
#include "oe/llm/ledger.hpp"
#include "oe/llm/settings.hpp"
#include "oe/plugins/registry.hpp"

namespace oe::evolve {

// The absolute yaml `arg` names (a folder holding experience.yaml, or the file); the error is
// upstream's message (exit 1, reference §9.2).
Result<std::filesystem::path> experienceYaml(const std::filesystem::path& arg);

struct EvolveRequest {
  std::filesystem::path yaml;  // experienceYaml's
  std::string run_id;          // an id or a unique prefix; empty with `last`
  bool last = false;
  llm::Settings llm;   // the flags and the environment; the experience's runtime is applied
  std::string prompt;  // a system prompt file replacing oe's proposal prompt
  std::string model;   // the model to ask
  // Run each valid proposal's copy with the run's args and the original's cache; with
  // `evaluate_runs` N, also up to N-1 more finished runs whose args differ (an input set).
  bool evaluate = false;
  int evaluate_runs = 1;
};

// What a front end shows while it runs: warnings (a log's torn line, a run left out of the
// input set, a plugin refused, a yaml that no longer loads), and each candidate's evaluation as
// it ends ("with the args of run X: " before the line when there are several input runs).
struct EvolveHooks {
  std::function<void(const std::string& warning)> warning;
  std::function<void(size_t number, const std::string& line)> evaluated;
};

struct EvolveOutcome {
  std::string run_id;
  std::filesystem::path report;  // .openexpertise/evolution/<run-id>.md (the sidecar beside it)
  std::vector<Proposal> proposals;
  std::vector<Verdict> verdicts;  // one per proposal
  llm::Usage usage;               // what the advisor's call spent
  [[nodiscard]] size_t count(VerdictStatus status) const;
};

// Reads the run's YAML, events and state diff (holding the state store's lock while it reads),
// loads the plugins into `registry` (whose log sink is `sink`), asks the `evolution` kind for
// proposals, gates each one (apply to a scratch copy + `oe validate`), evaluates the valid ones
// when asked, and writes the report and its .json sidecar. The error is the first failure (a
// missing run or log, a held store, a failed LLM call, a file not written).
Result<EvolveOutcome> proposeImprovements(const EvolveRequest& request,
                                          plugins::PluginRegistry& registry, plugins::LogSink& sink,
                                          const EvolveHooks& hooks);

// The sidecar of run `run_id`'s proposals in the experience folder `dir`; the error says to run
// `oe evolve` first when there is none.
Result<Json> readProposals(const std::filesystem::path& dir, const std::string& run_id);

struct AppliedProposal {
  std::string name;     // "proposal N ("title")"
  ApplyOutcome files;   // what was written, and the backups kept
  std::string warning;  // set when the sidecar could not record the application
};

// Applies proposal `number` (1-based, within `sidecar`'s proposals) of run `run_id` to the
// experience of `yaml`: only one whose recorded verdict is valid, gated again with `kinds`
// against the folder as it is now, its files written with backups ("<file>.bak-<UTC time>")
// and the application recorded in the sidecar.
Result<AppliedProposal> applyProposal(const std::filesystem::path& yaml, const std::string& run_id,
                                      Json sidecar, int number, const spec::KindCatalog& kinds);

// A report in .openexpertise/evolution/, as `oe diff` lists it.
struct ReportEntry {
  std::string run_id;
  std::filesystem::path path;
  std::filesystem::file_time_type modified;
  // {run_id, path, proposals, and from oe's sidecar: verdicts {valid, does_not_apply, invalid},
  // applied}; a report without a sidecar (written by upstream) counts its proposal headings.
  Json info;
};
// The reports of the experience folder `dir`, newest first (then by run id).
std::vector<ReportEntry> listReports(const std::filesystem::path& dir);

}  // namespace oe::evolve

// Evolution proposals after the advisor: each one's diff applied to a scratch copy of the
// experience and validated as `oe validate` does (the verdict), the markdown report (upstream's
// renderMarkdown plus one verdict line per proposal), its JSON sidecar, and `--apply`.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/spec/validate.hpp"

namespace oe::evolve {

struct Proposal {
  std::string operation;   // add-node | tune-param | add-dataset-case
  std::string confidence;  // high | medium | low
  std::string title;
  std::string rationale;
  std::string diff;  // a unified diff; for add-dataset-case also a JSON array of rows

  // Missing or non-string members read as "" (the report shows what the model sent).
  static Proposal fromJson(const Json& value);
  [[nodiscard]] Json toJson() const;
};

enum class VerdictStatus { kValid, kDoesNotApply, kInvalid };
[[nodiscard]] std::string_view toString(VerdictStatus status);  // valid, does_not_apply, invalid

struct Verdict {
  VerdictStatus status = VerdictStatus::kDoesNotApply;
  std::vector<std::string> reasons;  // why it does not apply, or the validation errors
  std::vector<std::string> notes;    // hunks applied at an offset, where rows were appended
  std::vector<std::string> files;    // the files it changes, relative to the experience folder

  [[nodiscard]] std::string line() const;  // the report's one-line account
  [[nodiscard]] Json toJson() const;
  static Verdict fromJson(const Json& value);
};

// A file a proposal writes: its path relative to the experience folder and its new text
// (nullopt: the proposal deletes it).
struct FileChange {
  std::string path;
  std::optional<std::string> text;
};

// What `proposal` would write in the experience whose yaml is `yaml_path`, read from the files as
// they are now. A unified diff may touch any file inside the folder; an add-dataset-case diff
// that is a JSON array of rows is appended to the experience's one file dataset (json or
// jsonl). The error says why it does not apply.
Result<std::vector<FileChange>> planChanges(const Proposal& proposal,
                                            const std::filesystem::path& yaml_path,
                                            std::vector<std::string>& notes);

// A fresh copy of the experience folder of `yaml_path` in `folder` (without .openexpertise/ and
// .git/), with `changes` written into it.
Result<void> writeCandidate(const std::vector<FileChange>& changes,
                            const std::filesystem::path& yaml_path,
                            const std::filesystem::path& folder);

// Applies the proposal to a copy of the experience folder under `scratch` (created, then
// removed) and validates the copy with `kinds` as `oe validate` does.
Verdict gate(const Proposal& proposal, const std::filesystem::path& yaml_path,
             const spec::KindCatalog& kinds, const std::filesystem::path& scratch);

// Upstream's renderMarkdown (reference §8.1) line for line; with `verdicts` (one per proposal),
// the line after each proposal's closing fence is "**oe verdict:** <Verdict::line()>", then,
// when `evaluations` has a non-empty entry for it, "**oe evaluation:** <entry>"; dropping the
// lines that start with "**oe " gives upstream's text back.
std::string renderMarkdown(const std::vector<Proposal>& proposals, std::string_view run_id,
                           const std::vector<Verdict>* verdicts = nullptr,
                           const std::vector<std::string>* evaluations = nullptr);

// The prefixes of oe's lines, so that a reader can drop them to get upstream's text back.
inline constexpr std::string_view kVerdictPrefix = "**oe verdict:** ";
inline constexpr std::string_view kEvaluationPrefix = "**oe evaluation:** ";

// <experience>/.openexpertise/evolution, and the report and sidecar of a run there.
[[nodiscard]] std::filesystem::path evolutionDir(const std::filesystem::path& experience_dir);
[[nodiscard]] std::filesystem::path reportPath(const std::filesystem::path& experience_dir,
                                               std::string_view run_id);
[[nodiscard]] std::filesystem::path sidecarPath(const std::filesystem::path& experience_dir,
                                                std::string_view run_id);

// The sidecar: {"run_id", "generated_at", "proposals": [{...proposal, "verdict": {...}}],
// "applied": [{"proposal", "at", "backups"}]}.
Result<Json> readSidecar(const std::filesystem::path& path);
Result<void> writeTextFile(const std::filesystem::path& path, std::string_view text);

struct ApplyOutcome {
  std::vector<std::string> files;    // written (or deleted), relative to the folder
  std::vector<std::string> backups;  // the previous versions kept, relative to the folder
};

// `oe evolve --apply`: writes `changes` into the experience folder, keeping each file it
// replaces or deletes as "<file>.bak-<stamp>" beside it (`stamp`: UTC, 20261125T143000Z).
Result<ApplyOutcome> applyChanges(const std::vector<FileChange>& changes,
                                  const std::filesystem::path& experience_dir,
                                  std::string_view stamp);

}  // namespace oe::evolve

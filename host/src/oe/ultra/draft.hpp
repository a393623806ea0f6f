// An `oe ultra` draft on disk: the synthesizer's files written into a draft folder and read back
// (`oe ultra-revise`), with a guard that keeps every path the LLM names inside that folder.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"

namespace oe::ultra {

struct DraftFile {
  std::string path;  // relative to the draft folder, as the LLM named it
  std::string content;
};

// What synthesize and revise return (reference §8.2 SynthesisOutput).
struct Synthesis {
  std::string experience_yaml;
  std::vector<DraftFile> files;
  std::vector<std::string> next_steps;

  [[nodiscard]] Json toJson() const;
  // From an answer that passed synthesisSchema().
  [[nodiscard]] static Synthesis fromJson(const Json& json);
};

// `path` made safe to join to a draft folder: relative, no `..`, no NUL, not `experience.yaml`
// or `analysis.json` (they have their own slots), `./` and repeated slashes dropped. The error
// names the path and why.
[[nodiscard]] Result<std::string> guardedPath(std::string_view path);

// Every problem guardedPath finds in the synthesis's files, and duplicate paths.
[[nodiscard]] std::vector<std::string> pathProblems(const Synthesis& synthesis);

// Writes experience.yaml and every file (parents created) into `dir`. Refuses the whole draft
// before writing anything when a path is unsafe, and refuses a file whose real location, after
// symlinks, is outside `dir`. Returns the files written, experience.yaml first.
[[nodiscard]] Result<std::vector<std::string>> writeDraft(const std::filesystem::path& dir,
                                                          const Synthesis& synthesis);

// Removes the files of `previous` that `current` no longer lists (never experience.yaml or
// analysis.json), and the folders that leaves empty.
void pruneDraft(const std::filesystem::path& dir, const std::vector<std::string>& previous,
                const Synthesis& current);

struct StoredDraft {
  Synthesis synthesis;
  Json analysis;  // analysis.json, or null when the draft has none
};

// Reads a draft folder back: experience.yaml, every regular file under it (except
// .openexpertise/, .git/, node_modules/ and analysis.json) as files[], and analysis.json.
// Symlinks are not followed out of the folder.
[[nodiscard]] Result<StoredDraft> readDraft(const std::filesystem::path& dir);

// upstream's slugify: lower case, runs of anything but [a-z0-9] become one '-', trimmed, at
// most 60 characters; "draft" when nothing is left.
[[nodiscard]] std::string slugify(std::string_view name);

}  // namespace oe::ultra

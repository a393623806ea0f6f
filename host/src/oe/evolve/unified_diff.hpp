// A unified diff (what `diff -u` and `git diff` print, and what the evolution advisor asks the
// model for) parsed into file patches, and one file patch applied to a file's text. Bounded and
// exception-free: the text comes from a language model.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/result.hpp"

namespace oe::evolve {

struct HunkLine {
  char op = ' ';  // ' ' context, '-' removed, '+' added
  std::string text;
};

struct Hunk {
  size_t old_start = 0;  // 1-based; 0 with old_count 0 means "before the first line"
  size_t old_count = 0;  // as the header says; the body is what is applied (see parse)
  size_t new_start = 0;
  size_t new_count = 0;
  std::string header;  // the "@@ -a,b +c,d @@" line as written
  std::vector<HunkLine> lines;
  bool old_no_newline = false;  // "\ No newline at end of file" after the last old-side line
  bool new_no_newline = false;  // ... after the last new-side line
};

struct FilePatch {
  std::string old_path;  // "/dev/null" for a new file; a/ and b/ prefixes stripped
  std::string new_path;  // "/dev/null" for a deleted file
  std::vector<Hunk> hunks;

  [[nodiscard]] bool createsFile() const { return old_path == "/dev/null"; }
  [[nodiscard]] bool deletesFile() const { return new_path == "/dev/null"; }
  // The file the patch changes, relative to the tree it applies to.
  [[nodiscard]] const std::string& target() const { return deletesFile() ? old_path : new_path; }
};

// Upper bounds on what parse accepts (a model's answer is bounded by max_tokens; these only stop
// a pathological input from costing memory or time).
inline constexpr size_t kMaxDiffBytes = size_t{4} << 20;
inline constexpr size_t kMaxHunks = 10000;

// Parses every file patch of `text`. Lines before the first "--- " (a `diff --git` or `index`
// line, prose) are skipped; a surrounding ```diff fence is dropped. A hunk runs until the next
// "@@", "--- "/"diff " line or the end: its body is recounted, as `git apply --recount` does,
// because models often get the header's counts wrong; the header itself must be well formed.
// Errors name the line (1-based, in `text`) and what was expected there.
Result<std::vector<FilePatch>> parseUnifiedDiff(std::string_view text);

struct AppliedFile {
  std::optional<std::string> text;  // nullopt: the patch deletes the file
  std::vector<std::string> notes;   // "hunk 2 applied 3 lines later than its header says"
};

// Applies `patch` to `original` (nullopt: the file does not exist). Each hunk's old side (its
// context and removed lines) must match the file exactly, at the line its header names shifted
// by what earlier hunks added or removed, or else at the nearest line after the previous hunk
// where it does match (an offset, as `patch` reports it; noted). No fuzz: a hunk whose context
// is found nowhere does not apply, and the error names the hunk, the line and both texts.
Result<AppliedFile> applyFilePatch(const FilePatch& patch,
                                   const std::optional<std::string>& original);

// True when `path` is relative, has no ".." component and is not empty: a patch may only touch
// files inside the tree it is applied to.
[[nodiscard]] bool safeRelativePath(std::string_view path);

}  // namespace oe::evolve

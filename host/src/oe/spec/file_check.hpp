// Static checks of the files a node names and of values its kind cannot run (issue 10, item 5),
// before anything runs. The host knows no kind: the kind's JSON Schema says which fields are
// what, with annotations that JSON Schema validators ignore:
//   "x-oe-path": "file" | "directory"  the string is a path (relative to the experience folder,
//       or absolute) that must exist before the run: a tool's impl, an agent's prompt;
//   "x-oe-path": "input-file"  a file read when the node runs, which an earlier node of the run
//       may write: missing is an error for a node nothing runs before, else a warning;
//   "x-oe-unsupported": {"<value>": "<why, and what to use instead>"}  values the schema accepts
//       but the kind cannot run yet (a dataset's format: parquet);
//   "x-oe-program": {"programs": {"<value>": "<program>"}, "search_path": "<pointer>"}  the
//       program a node with that value runs (cli-agent's provider: claude-code -> claude) must
//       be on PATH, or on the node's own value at `search_path` (a JSON pointer into the node,
//       "/env/PATH"; optional) when the node sets one. The machine, not the experience, lacks
//       it: an error before a run, a warning from `oe validate` (see missing_program below);
//   "x-oe-reads-file": "<path>" | ["<path>", ...]  the node also reads that file (relative to
//       the experience folder), which its definition does not name: a dataset's mcp-resource
//       source reads mcp.json. Its content is part of the node's cache key and definition pin
//       (readFiles below, spec::attachReadFiles); the kind needs it to run, so missing is
//       reported as for "input-file". The annotation's place says when it applies (under a
//       `then`), not which field: the value at that place is not read.
// Annotations are found through `properties` and `allOf` (an entry's `if` is evaluated against
// the value, so `then` can annotate `uri` only for `type: file`).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "oe/common/diagnostic.hpp"
#include "oe/common/json.hpp"

namespace oe::spec {

// How a program a node needs (x-oe-program) and PATH lacks is reported: an error before a run, a
// warning from `oe validate`, and not looked for at all (nullopt) before a run that starts no
// program (`oe run --llm-replay` answers the CLIs from a recording).
using ProgramCheck = std::optional<Severity>;

// PATH lookups already made, shared by the nodes of one check: (program, search path) -> found.
using ProgramCache = std::map<std::pair<std::string, std::string>, bool>;

struct FileFinding {
  std::string pointer;  // relative to the node ("/impl", "/source/uri")
  std::string message;  // says what is wrong and what to do
  Severity severity = Severity::kError;
};

// The findings for one node, whose kind's schema is `kind_schema` (nullptr: none). `dir` is the
// experience folder; `has_predecessors`: some node of the graph can run before this one.
// At most one stat() per annotated field (a program: one per PATH entry, once per `programs`).
// `missing_program`: the severity of a program not found (nullopt: not looked for).
[[nodiscard]] std::vector<FileFinding> checkFileFields(const Json* kind_schema, const Json& node,
                                                       const std::filesystem::path& dir,
                                                       bool has_predecessors,
                                                       ProgramCheck missing_program,
                                                       ProgramCache& programs);

// Only the x-oe-program findings, as errors: what a run checks again on a spec snapshot (which
// skips validation), since PATH can change between two runs of the same file.
[[nodiscard]] std::vector<FileFinding> checkPrograms(const Json& kind_schema, const Json& node,
                                                     const std::filesystem::path& dir,
                                                     ProgramCache& programs);

// True when the schema uses x-oe-program anywhere (so nodes of other kinds cost nothing).
[[nodiscard]] bool marksPrograms(const Json& kind_schema);

// The files a node of that kind reads by x-oe-reads-file (as written, relative to the
// experience folder), in schema order, each once. No stat: whether they exist is the key's
// business (a missing file hashes as missing).
[[nodiscard]] std::vector<std::string> readFiles(const Json& kind_schema, const Json& node);

// True when the schema uses x-oe-reads-file anywhere.
[[nodiscard]] bool marksReadFiles(const Json& kind_schema);

}  // namespace oe::spec

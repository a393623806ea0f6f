// Reading an experience.yaml: the file, the YAML (with the position of every value), the
// structure (JSON Schema), and the typed model. `validateExperience` then checks the meaning.
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

#include "oe/common/diagnostic.hpp"
#include "oe/spec/experience.hpp"
#include "oe/spec/schema.hpp"
#include "oe/spec/validate.hpp"

namespace oe::spec {

// A path ending in .yaml/.yml is used as given; anything else is a folder holding
// experience.yaml (reference §1.1).
[[nodiscard]] std::filesystem::path resolveExperiencePath(const std::filesystem::path& arg);

struct LoadResult {
  std::optional<Experience> experience;  // set when there is no error
  // Set instead of `experience` when the YAML parsed but its structure has errors: the model
  // of what is sound (a value of the wrong type reads as empty), for checkLoaded. Never run.
  std::optional<Experience> partial;
  std::vector<Diagnostic> diagnostics;  // every problem found, with file:line:column
};

// What one YAML document may make oe build. A hostile file (a "billion laughs" alias bomb, a
// 100,000-deep `[[[[`, gigabytes of text) is refused with a diagnostic at its line and column
// instead of exhausting memory or the stack. Real experiences stay far below each bound.
struct LoadLimits {
  // Bytes of YAML text; loadExperience checks the file's size before reading it.
  size_t max_bytes = size_t{16} << 20;
  // Mappings and sequences inside each other, counting what aliases bring in. yaml-cpp's
  // parser recurses per level (it stops itself at 2000), and so do the later checks.
  int max_depth = 128;
  // Values copied by anchors and aliases (each alias copies its anchor's whole tree). An alias
  // bomb of 8 levels of 9 copies asks for 43 million: refused here, before the copies exist.
  size_t max_alias_nodes = 1'000'000;
  // Bytes those copies make, counted as JSON text (keys, values, quotes, separators): what a run
  // holds of the document and its spec snapshot stores. Short strings aliased under the node
  // bound still made 21 MB of 813 bytes; the file itself is bounded by max_bytes.
  size_t max_alias_bytes = size_t{4} << 20;
};

// Reads and parses the file and checks its structure. All structural errors are reported at
// once; the typed model is filled only when there are none.
[[nodiscard]] LoadResult loadExperience(const std::filesystem::path& yaml_path,
                                        const LoadLimits& limits = {});

// The same from YAML text already in memory; `yaml_path` is where it came from (diagnostics
// print it as given; it also gives Experience::file and ::dir).
[[nodiscard]] LoadResult loadExperienceText(std::string_view text,
                                            const std::filesystem::path& yaml_path,
                                            const LoadLimits& limits = {});

// Everything `oe validate` reports about a loaded file, in file order: the loader's diagnostics
// and, whenever the YAML parsed (structural errors or not), validateExperience's. So duplicate
// ids, unknown kinds or a bad `when` show together with a missing key, not one batch after the
// other.
// `missing_program` as validateExperience takes it (an error when the check precedes a run).
[[nodiscard]] std::vector<Diagnostic> checkLoaded(
    const LoadResult& loaded, const KindCatalog& kinds, bool strict,
    ProgramCheck missing_program = Severity::kWarning);

// Fills the typed model (name, state, nodes, edges, ...) from `exp.raw`, a document that passed
// the structural check, using `exp.marks`/`exp.key_marks` for positions and the state fields'
// declaration order. loadExperienceText does this; spec snapshots (snapshot.hpp) reuse it.
// `lines` (spec snapshots): the graph's nodes and edges as lines of canonical JSON, used
// instead of exp.raw's graph.nodes and graph.edges, parsed one at a time; a node keeps its line
// as NodeSpec::text (NodeSpec::raw stays null). False when a line is not a JSON object.
struct GraphLines {
  std::vector<std::string_view> nodes;
  std::vector<std::string_view> edges;
};
bool buildModel(Experience& exp, const GraphLines* lines = nullptr);

// The canonical JSON text of a node (NodeSpec::text): sorted keys, compact, invalid UTF-8
// replaced, and so never a raw newline (strings escape theirs).
std::string canonicalText(const Json& value);

// For a run, after validation: each node's NodeSpec::raw becomes its NodeSpec::text and
// NodeSpec::path_candidates.
void compactNodes(Experience& exp);

// Sets each node's read_files from its kind's schema (x-oe-reads-file, file_check.hpp), once
// per load: nodes of kinds whose schema has no such annotation are not looked at again.
void attachReadFiles(Experience& exp, const KindCatalog& kinds);

// D4: the strings of a node's definition that may name a file the node depends on (impl,
// prompt, a dataset's source.uri, a skill folder). The host knows no kind, so any string at any
// depth counts, except under id, kind, phase, model, reads and writes (state field names), args
// (resolved per call, whose files the run hashes then: run/pin.hpp) and cache (globs), inside a
// `schema` (type names and patterns), `$.path` values and multi-line text. At most 256 strings,
// 8 levels deep: each costs a stat().
std::vector<std::string> pathCandidates(const Json& node);

// An empty experience located at `yaml_path`: source_name as given, file absolute (as given
// when that fails), dir its folder.
[[nodiscard]] Experience experienceAt(const std::filesystem::path& yaml_path);

}  // namespace oe::spec

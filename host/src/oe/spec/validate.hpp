// Everything `oe validate` checks once the structure is sound (D8, D9), all reported at once:
// references, state declarations, node kinds and their schemas, expressions, cycles, unknown keys.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "oe/common/diagnostic.hpp"
#include "oe/common/json.hpp"
#include "oe/spec/experience.hpp"
#include "oe/spec/file_check.hpp"

namespace oe::spec {

// What a loaded plugin says about one node kind: its name and (optionally) the JSON Schema of
// a node of that kind (its `properties` are the kind's fields: impl, prompt, ...).
struct KindInfo {
  std::string kind;
  std::optional<Json> schema;
};
using KindCatalog = std::map<std::string, KindInfo, std::less<>>;

// Errors and warnings, in file order of the checks below. `strict` turns unknown-key warnings
// into errors (`oe validate --strict`). A node kind without a schema gets no field checks and
// no unknown-key warnings (nothing says what its fields are). `check_files`: the files nodes
// name must exist, relative to exp.dir (file_check.hpp); off for an experience held in memory
// whose folder is not real. `missing_program`: how a program a node needs (x-oe-program) and
// PATH lacks is reported: a warning for `oe validate` (the experience may be run elsewhere), an
// error before a run, nothing before a replayed run (file_check.hpp, ProgramCheck).
[[nodiscard]] std::vector<Diagnostic> validateExperience(
    const Experience& exp, const KindCatalog& kinds, bool strict, bool check_files = true,
    ProgramCheck missing_program = Severity::kWarning);

// Nested experiences (a kind whose schema has "x-oe-nests": {"path": "/impl", "state_scope":
// "/state_scope"}, docs/kinds-experience.md): the deepest nesting allowed (the top run is depth
// 0), the file a node's path names (a folder stands for its experience.yaml), and upstream's
// message when there is none.
constexpr int kMaxNestingDepth = 8;
[[nodiscard]] std::filesystem::path nestedExperiencePath(const std::filesystem::path& dir,
                                                         const std::string& written);
[[nodiscard]] std::string nestedNotFound(const std::filesystem::path& path,
                                         const std::string& declared);
// "a.yaml -> b.yaml -> last": the files of a nesting, for cycle and depth messages.
[[nodiscard]] std::string nestingChain(const std::vector<std::filesystem::path>& files,
                                       const std::filesystem::path& last);

// The experience files above the one being validated, the top one first (canonical), and those
// already validated in this check, so each child is checked (and reported) once.
struct NestingTrail {
  std::vector<std::filesystem::path> files;
  std::set<std::filesystem::path> done;
};

// validateExperience, following nested experiences: each child file is loaded and validated
// (its findings name its own file), a child that includes an experience above it is a cycle,
// deeper than kMaxNestingDepth is refused, and a shared child's field types must agree with
// the parent's.
[[nodiscard]] std::vector<Diagnostic> validateExperience(
    const Experience& exp, const KindCatalog& kinds, bool strict, bool check_files,
    ProgramCheck missing_program, NestingTrail& trail);

// Every cycle of the edge graph as node ids, first node repeated at the end (a -> b -> a),
// found by a depth-first search in declaration order. Edges to unknown nodes are ignored. At
// most `limit` cycles.
[[nodiscard]] std::vector<std::vector<std::string>> findCycles(const Experience& exp,
                                                               size_t limit = 20);

}  // namespace oe::spec

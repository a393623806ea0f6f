// `oe validate` of a node that nests an experience (its kind's schema has "x-oe-nests"): the
// child file exists, loads and validates, includes no experience above it (a cycle), goes no
// deeper than kMaxNestingDepth, and, shared, declares no field with another type than the
// parent's (docs/kinds-experience.md).
#pragma once

#include <string>
#include <vector>

#include "oe/common/diagnostic.hpp"
#include "oe/common/json.hpp"
#include "oe/spec/experience.hpp"
#include "oe/spec/validate.hpp"

namespace oe::spec {

// `nests`: the annotation ({"path": "/impl", "state_scope": "/state_scope"}, JSON pointers into
// the node); `pointer`: the node's own pointer in `exp`. The child's findings name its file.
[[nodiscard]] std::vector<Diagnostic> checkNested(const Experience& exp, const NodeSpec& node,
                                                  const std::string& pointer, const Json& nests,
                                                  const KindCatalog& kinds, bool strict,
                                                  ProgramCheck missing_program, NestingTrail& trail);

}  // namespace oe::spec

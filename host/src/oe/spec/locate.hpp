// Turns a JSON pointer into a Diagnostic: the place in the user's file (line, column), the node
// it is about (anything under /graph/nodes/<i>) and the field, named the way the user wrote it.
#pragma once

#include <string>

#include "oe/common/diagnostic.hpp"
#include "oe/spec/experience.hpp"

namespace oe::spec {

// `at_key`: point at the member's key rather than its value (unknown keys).
[[nodiscard]] Diagnostic diagnosticAt(const Experience& exp, const std::string& pointer,
                                      std::string message, Severity severity = Severity::kError,
                                      bool at_key = false);

// "graph.edges[3].from" for "/graph/edges/3/from" (arrays as [i], as the YAML reads).
[[nodiscard]] std::string fieldName(const Json& root, const std::string& pointer);

}  // namespace oe::spec

// A finding about a user's file: where it is (file:line:column, node, field) and what to do.
#pragma once

#include <string>
#include <vector>

namespace oe {

enum class Severity { kError, kWarning };

struct Diagnostic {
  Severity severity = Severity::kError;
  std::string file;     // path as the user gave it (or absolute)
  int line = 0;         // 1-based; 0 = unknown
  int column = 0;       // 1-based; 0 = unknown
  std::string node_id;  // empty when not about a node
  std::string field;    // e.g. "graph.nodes[2].impl" or "when"; empty when not about a field
  std::string message;  // what is wrong, and what to do about it

  // "file:line:col: error: node "x": <field>: message"
  [[nodiscard]] std::string format() const;
};

[[nodiscard]] bool hasErrors(const std::vector<Diagnostic>& diagnostics);

}  // namespace oe

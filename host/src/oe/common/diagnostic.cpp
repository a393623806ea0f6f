// Formatting of diagnostics for the terminal and for error results.
#include "oe/common/diagnostic.hpp"

#include <algorithm>

namespace oe {

std::string Diagnostic::format() const {
  std::string out = file.empty() ? std::string("<input>") : file;
  if (line > 0) {
    out += ':' + std::to_string(line);
    if (column > 0) {
      out += ':' + std::to_string(column);
    }
  }
  out += severity == Severity::kError ? ": error: " : ": warning: ";
  if (!node_id.empty()) {
    out += "node \"" + node_id + "\": ";
  }
  if (!field.empty()) {
    out += field + ": ";
  }
  out += message;
  return out;
}

bool hasErrors(const std::vector<Diagnostic>& diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::kError; });
}

}  // namespace oe

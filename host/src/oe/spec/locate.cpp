// JSON pointer -> file position, node and field; see locate.hpp.
#include "oe/spec/locate.hpp"

#include "oe/spec/schema_check.hpp"

namespace oe::spec {

namespace {

// Renders segments [from, end) of a pointer as `a.b[2].c`, using `at` to tell lists apart.
std::string render(const Json* at, const std::vector<std::string>& segments, size_t from) {
  std::string out;
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string& seg = segments[i];
    const bool is_index = at != nullptr && at->is_array();
    if (i >= from) {
      if (is_index) {
        out += '[' + seg + ']';
      } else {
        out += (out.empty() ? "" : ".") + seg;
      }
    }
    if (at == nullptr) {
      continue;
    }
    if (at->is_object()) {
      auto it = at->find(seg);
      at = it == at->end() ? nullptr : &*it;
    } else if (at->is_array()) {
      size_t index = std::strtoul(seg.c_str(), nullptr, 10);
      at = index < at->size() ? &(*at)[index] : nullptr;
    } else {
      at = nullptr;
    }
  }
  return out;
}

}  // namespace

std::string fieldName(const Json& root, const std::string& pointer) {
  return render(&root, splitPointer(pointer), 0);
}

Diagnostic diagnosticAt(const Experience& exp, const std::string& pointer, std::string message,
                        Severity severity, bool at_key) {
  Diagnostic d;
  d.severity = severity;
  d.file = exp.source_name.empty() ? exp.file.string() : exp.source_name;
  Mark mark = at_key ? exp.keyMarkOf(pointer) : exp.markOf(pointer);
  d.line = mark.line;
  d.column = mark.column;
  d.message = std::move(message);
  std::vector<std::string> segments = splitPointer(pointer);
  const Json* node = nullptr;
  if (segments.size() >= 3 && segments[0] == "graph" && segments[1] == "nodes") {
    const Json* graph =
        exp.raw.is_object() && exp.raw.contains("graph") ? &exp.raw["graph"] : nullptr;
    const Json* nodes = graph != nullptr && graph->is_object() && graph->contains("nodes")
                            ? &(*graph)["nodes"]
                            : nullptr;
    size_t index = std::strtoul(segments[2].c_str(), nullptr, 10);
    if (nodes != nullptr && nodes->is_array() && index < nodes->size()) {
      node = &(*nodes)[index];
    }
    if (node != nullptr && node->is_object() && node->contains("id") && (*node)["id"].is_string()) {
      d.node_id = (*node)["id"].get<std::string>();
    }
  }
  if (!d.node_id.empty()) {
    d.field = render(node, std::vector<std::string>(segments.begin() + 3, segments.end()), 0);
  } else {
    d.field = render(&exp.raw, segments, 0);
  }
  return d;
}

}  // namespace oe::spec

// Lookups on the typed experience model: source positions by JSON pointer, nodes by id.
#include "oe/spec/experience.hpp"

namespace oe::spec {

Mark Experience::markOf(const std::string& json_pointer) const {
  // The nearest ancestor that has a position: a missing key is reported at its parent.
  std::string p = json_pointer;
  while (true) {
    auto it = marks.find(p);
    if (it != marks.end()) {
      return it->second;
    }
    if (p.empty()) {
      return Mark{};
    }
    p.resize(p.rfind('/'));
  }
}

Mark Experience::keyMarkOf(const std::string& json_pointer) const {
  auto it = key_marks.find(json_pointer);
  return it != key_marks.end() ? it->second : markOf(json_pointer);
}

const NodeSpec* Experience::findNode(std::string_view id) const {
  if (!node_index.empty()) {
    auto it = node_index.find(std::string(id));
    if (it != node_index.end() && it->second < nodes.size() && nodes[it->second].id == id) {
      return &nodes[it->second];
    }
    if (it == node_index.end() && node_index.size() == nodes.size()) {
      return nullptr;  // the index covers every node
    }
  }
  // No index (a model built by hand) or a stale one: scan.
  for (const auto& n : nodes) {
    if (n.id == id) {
      return &n;
    }
  }
  return nullptr;
}

}  // namespace oe::spec

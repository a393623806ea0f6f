// Lookups on the typed experience model: source positions by JSON pointer, nodes by id.
#include "oe/spec/experience.hpp"

#include <algorithm>
#include <functional>

namespace oe::spec {

void MarkIndex::reserve(size_t entries) {
  entries_.reserve(entries);
  size_t slots = 16;
  while (slots < entries * 2) {
    slots *= 2;
  }
  if (slots > slots_.size()) {
    rehash(slots);
  }
}

size_t MarkIndex::slotOf(std::string_view pointer) const {
  // Linear probing from the hash; the table is at most half full, so a free slot is near.
  const size_t mask = slots_.size() - 1;
  size_t slot = std::hash<std::string_view>{}(pointer) & mask;
  while (slots_[slot] != 0) {
    const Entry& e = entries_[slots_[slot] - 1];
    if (std::string_view(arena_).substr(e.offset, e.size) == pointer) {
      return slot;
    }
    slot = (slot + 1) & mask;
  }
  return slot;
}

void MarkIndex::rehash(size_t slots) {
  slots_.assign(slots, 0);
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    slots_[slotOf(std::string_view(arena_).substr(e.offset, e.size))] = i + 1;
  }
}

void MarkIndex::emplace(std::string_view pointer, Mark mark) {
  if ((entries_.size() + 1) * 2 > slots_.size()) {
    rehash(std::max<size_t>(16, slots_.size() * 2));
  }
  const size_t slot = slotOf(pointer);
  if (slots_[slot] != 0) {
    return;
  }
  entries_.push_back(Entry{static_cast<uint32_t>(arena_.size()),
                           static_cast<uint32_t>(pointer.size()), mark});
  arena_.append(pointer);
  slots_[slot] = static_cast<uint32_t>(entries_.size());
}

const Mark* MarkIndex::find(std::string_view pointer) const {
  if (slots_.empty()) {
    return nullptr;
  }
  const uint32_t at = slots_[slotOf(pointer)];
  return at == 0 ? nullptr : &entries_[at - 1].mark;
}

void MarkIndex::clear() {
  arena_ = {};
  entries_ = {};
  slots_ = {};
}

Mark Experience::markOf(const std::string& json_pointer) const {
  // The nearest ancestor that has a position: a missing key is reported at its parent.
  std::string_view p = json_pointer;
  while (true) {
    if (const Mark* mark = marks.find(p)) {
      return *mark;
    }
    if (p.empty()) {
      return Mark{};
    }
    const size_t slash = p.rfind('/');
    p = slash == std::string_view::npos ? std::string_view() : p.substr(0, slash);
  }
}

Mark Experience::keyMarkOf(const std::string& json_pointer) const {
  const Mark* mark = key_marks.find(json_pointer);
  return mark != nullptr ? *mark : markOf(json_pointer);
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

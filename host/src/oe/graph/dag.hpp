// The experience's graph as index-based adjacency lists and a topological order (reference
// §3.2): built once per run; every per-node lookup after that is O(1).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/spec/experience.hpp"

namespace oe::graph {

// One list of numbers per node, all in one flat array (compressed rows): two allocations for
// the whole graph instead of one per node and list, i.e. ~8 bytes per node and entry instead of
// ~56 (a 100,000-node run holds three of them).
class Adjacency {
 public:
  Adjacency() = default;
  // List i holds the `value` of every pair whose `node` is i, in the order of `pairs`.
  struct Pair {
    uint32_t node;
    uint32_t value;
  };
  static Adjacency build(size_t nodes, const std::vector<Pair>& pairs);

  std::span<const uint32_t> operator[](size_t node) const {
    return {values_.data() + offsets_[node], values_.data() + offsets_[node + 1]};
  }
  [[nodiscard]] size_t size() const { return offsets_.empty() ? 0 : offsets_.size() - 1; }

 private:
  std::vector<uint32_t> offsets_;  // nodes + 1: list i is values_[offsets_[i], offsets_[i + 1])
  std::vector<uint32_t> values_;
};

struct Dag {
  Adjacency preds;     // per node, in edge order (duplicates kept)
  Adjacency succs;     // per node, in edge order
  Adjacency in_edges;  // edge indices into Experience::edges, per node
  std::vector<uint32_t> topo;  // Kahn FIFO order, seeded in declaration order
  // (Node ids -> positions: Experience::node_index / findNode; the DAG keeps no copy.)
};

// Errors (upstream texts): an edge endpoint that is not a node, `Edge references missing node:
// n1 -> ghost ("ghost" is not defined). Defined nodes: n1`; a cycle, `Graph contains a cycle
// involving: <the nodes not ordered, declaration order, ", ">`; and a repeated id.
[[nodiscard]] Result<Dag> buildDag(const spec::Experience& exp);

}  // namespace oe::graph

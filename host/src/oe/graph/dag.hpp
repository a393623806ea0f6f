// The experience's graph as index-based adjacency lists and a topological order (reference
// §3.2): built once per run; every per-node lookup after that is O(1).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/spec/experience.hpp"

namespace oe::graph {

struct Dag {
  std::vector<std::vector<uint32_t>> preds;         // per node, in edge order (duplicates kept)
  std::vector<std::vector<uint32_t>> succs;         // per node, in edge order
  std::vector<std::vector<uint32_t>> in_edges;      // edge indices into Experience::edges, per node
  std::vector<uint32_t> topo;                       // Kahn FIFO order, seeded in declaration order
  std::unordered_map<std::string, uint32_t> index;  // node id -> position in Experience::nodes
};

// Errors (upstream texts): an edge endpoint that is not a node, `Edge references missing node:
// n1 -> ghost ("ghost" is not defined). Defined nodes: n1`; a cycle, `Graph contains a cycle
// involving: <the nodes not ordered, declaration order, ", ">`; and a repeated id.
[[nodiscard]] Result<Dag> buildDag(const spec::Experience& exp);

}  // namespace oe::graph

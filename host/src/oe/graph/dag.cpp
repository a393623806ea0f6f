// Adjacency lists and Kahn's topological order; see dag.hpp.
#include "oe/graph/dag.hpp"

#include <string_view>
#include <unordered_map>

namespace oe::graph {

Adjacency Adjacency::build(size_t nodes, const std::vector<Pair>& pairs) {
  Adjacency a;
  a.offsets_.assign(nodes + 1, 0);
  for (const Pair& p : pairs) {
    ++a.offsets_[p.node + 1];
  }
  for (size_t i = 0; i < nodes; ++i) {
    a.offsets_[i + 1] += a.offsets_[i];
  }
  a.values_.resize(pairs.size());
  std::vector<uint32_t> next(a.offsets_.begin(), a.offsets_.end() - 1);
  for (const Pair& p : pairs) {
    a.values_[next[p.node]++] = p.value;
  }
  return a;
}

Result<Dag> buildDag(const spec::Experience& exp) {
  const size_t n = exp.nodes.size();
  Dag dag;
  std::unordered_map<std::string_view, uint32_t> index;  // only while building
  index.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!index.emplace(exp.nodes[i].id, static_cast<uint32_t>(i)).second) {
      return makeError("Duplicate node id \"" + exp.nodes[i].id +
                       "\" in graph.nodes. Node ids must be unique.");
    }
  }
  auto defined = [&exp]() {
    std::string list;
    for (const auto& node : exp.nodes) {
      list += (list.empty() ? "" : ", ") + node.id;
    }
    return list;
  };
  std::vector<uint32_t> indegree(n, 0);
  std::vector<Adjacency::Pair> succs;
  std::vector<Adjacency::Pair> preds;
  std::vector<Adjacency::Pair> in_edges;
  succs.reserve(exp.edges.size());
  preds.reserve(exp.edges.size());
  in_edges.reserve(exp.edges.size());
  for (size_t e = 0; e < exp.edges.size(); ++e) {
    const spec::EdgeSpec& edge = exp.edges[e];
    auto from = index.find(edge.from);
    auto to = index.find(edge.to);
    if (from == index.end() || to == index.end()) {
      const std::string& missing = from == index.end() ? edge.from : edge.to;
      return makeError("Edge references missing node: " + edge.from + " -> " + edge.to + " (\"" +
                       missing + "\" is not defined). Defined nodes: " + defined());
    }
    succs.push_back({from->second, to->second});
    preds.push_back({to->second, from->second});
    in_edges.push_back({to->second, static_cast<uint32_t>(e)});
    ++indegree[to->second];
  }
  dag.succs = Adjacency::build(n, succs);
  dag.preds = Adjacency::build(n, preds);
  dag.in_edges = Adjacency::build(n, in_edges);
  // Kahn with a FIFO queue: `topo` itself is the queue (head index), seeded in declaration
  // order; successors are appended in edge order.
  dag.topo.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (indegree[i] == 0) {
      dag.topo.push_back(i);
    }
  }
  for (size_t head = 0; head < dag.topo.size(); ++head) {
    for (uint32_t s : dag.succs[dag.topo[head]]) {
      if (--indegree[s] == 0) {
        dag.topo.push_back(s);
      }
    }
  }
  if (dag.topo.size() != n) {
    std::string involved;
    for (size_t i = 0; i < n; ++i) {
      if (indegree[i] != 0) {
        involved += (involved.empty() ? "" : ", ") + exp.nodes[i].id;
      }
    }
    return makeError("Graph contains a cycle involving: " + involved);
  }
  return dag;
}

}  // namespace oe::graph

// Adjacency lists and Kahn's topological order; see dag.hpp.
#include "oe/graph/dag.hpp"

namespace oe::graph {

Result<Dag> buildDag(const spec::Experience& exp) {
  const size_t n = exp.nodes.size();
  Dag dag;
  dag.preds.resize(n);
  dag.succs.resize(n);
  dag.in_edges.resize(n);
  dag.index.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!dag.index.emplace(exp.nodes[i].id, static_cast<uint32_t>(i)).second) {
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
  for (size_t e = 0; e < exp.edges.size(); ++e) {
    const spec::EdgeSpec& edge = exp.edges[e];
    auto from = dag.index.find(edge.from);
    auto to = dag.index.find(edge.to);
    if (from == dag.index.end() || to == dag.index.end()) {
      const std::string& missing = from == dag.index.end() ? edge.from : edge.to;
      return makeError("Edge references missing node: " + edge.from + " -> " + edge.to + " (\"" +
                       missing + "\" is not defined). Defined nodes: " + defined());
    }
    dag.succs[from->second].push_back(to->second);
    dag.preds[to->second].push_back(from->second);
    dag.in_edges[to->second].push_back(static_cast<uint32_t>(e));
    ++indegree[to->second];
  }
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

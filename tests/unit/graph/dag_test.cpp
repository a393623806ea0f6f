// buildDag: upstream dag.test (reference §3.2, §11.3) and the missing-node message.
#include "oe/graph/dag.hpp"

#include <gtest/gtest.h>

#include <regex>

namespace oe::graph {
namespace {

spec::Experience graphOf(const std::vector<std::string>& ids,
                         const std::vector<std::pair<std::string, std::string>>& edges) {
  spec::Experience exp;
  for (const auto& id : ids) {
    spec::NodeSpec n;
    n.id = id;
    n.kind = "tool";
    exp.nodes.push_back(std::move(n));
  }
  for (const auto& [from, to] : edges) {
    spec::EdgeSpec e;
    e.from = from;
    e.to = to;
    exp.edges.push_back(std::move(e));
  }
  return exp;
}

uint32_t at(const spec::Experience& exp, std::string_view id) {
  return static_cast<uint32_t>(exp.findNode(id) - exp.nodes.data());
}

std::vector<uint32_t> list(std::span<const uint32_t> values) {
  return {values.begin(), values.end()};
}

std::vector<std::string> order(const spec::Experience& exp, const Dag& dag) {
  std::vector<std::string> out;
  for (uint32_t i : dag.topo) {
    out.push_back(exp.nodes[i].id);
  }
  return out;
}

TEST(Adjacency, KeepsEachListInPairOrderAndEmptyListsEmpty) {
  const auto a = Adjacency::build(4, {{2, 7}, {0, 1}, {2, 5}, {0, 3}});
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(list(a[0]), (std::vector<uint32_t>{1, 3}));
  EXPECT_TRUE(a[1].empty());
  EXPECT_EQ(list(a[2]), (std::vector<uint32_t>{7, 5}));
  EXPECT_TRUE(a[3].empty());
  EXPECT_EQ(Adjacency().size(), 0u);
}

TEST(DagTest, LinearOrder) {
  auto exp = graphOf({"c", "b", "a"}, {{"a", "b"}, {"b", "c"}});
  auto dag = buildDag(exp);
  ASSERT_TRUE(dag.ok()) << dag.error().message;
  EXPECT_EQ(order(exp, *dag), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(DagTest, DiamondOrder) {
  auto exp = graphOf({"root", "left", "right", "join"},
                     {{"root", "left"}, {"root", "right"}, {"left", "join"}, {"right", "join"}});
  auto dag = buildDag(exp);
  ASSERT_TRUE(dag.ok());
  auto o = order(exp, *dag);
  ASSERT_EQ(o.size(), 4u);
  EXPECT_EQ(o.front(), "root");
  EXPECT_EQ(o.back(), "join");
  EXPECT_EQ(o, (std::vector<std::string>{"root", "left", "right", "join"}));  // FIFO, edge order
}

TEST(DagTest, CycleIsAnError) {
  auto exp =
      graphOf({"start", "a", "b", "c"}, {{"start", "a"}, {"a", "b"}, {"b", "c"}, {"c", "a"}});
  auto dag = buildDag(exp);
  ASSERT_FALSE(dag.ok());
  EXPECT_TRUE(std::regex_search(dag.error().message, std::regex("cycle", std::regex::icase)));
  EXPECT_EQ(dag.error().message, "Graph contains a cycle involving: a, b, c");
}

TEST(DagTest, Predecessors) {
  auto exp = graphOf({"a", "b", "c"}, {{"a", "c"}, {"b", "c"}});
  auto dag = buildDag(exp);
  ASSERT_TRUE(dag.ok());
  const uint32_t c = at(exp, "c");
  EXPECT_EQ(list(dag->preds[c]), (std::vector<uint32_t>{at(exp, "a"), at(exp, "b")}));
  EXPECT_EQ(list(dag->in_edges[c]), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(list(dag->succs[at(exp, "a")]), (std::vector<uint32_t>{c}));
  EXPECT_TRUE(dag->preds[at(exp, "a")].empty());
}

TEST(DagTest, IsolatedNodesAllAppear) {
  auto exp = graphOf({"x", "y", "z"}, {});
  auto dag = buildDag(exp);
  ASSERT_TRUE(dag.ok());
  EXPECT_EQ(order(exp, *dag), (std::vector<std::string>{"x", "y", "z"}));
}

TEST(DagTest, MissingNodeNamesItAndTheDefinedOnes) {
  auto exp = graphOf({"n1"}, {{"n1", "ghost"}});
  auto dag = buildDag(exp);
  ASSERT_FALSE(dag.ok());
  EXPECT_EQ(dag.error().message,
            "Edge references missing node: n1 -> ghost (\"ghost\" is not defined). Defined nodes: "
            "n1");
  auto from = buildDag(graphOf({"a", "b"}, {{"zz", "a"}}));
  ASSERT_FALSE(from.ok());
  EXPECT_EQ(from.error().message,
            "Edge references missing node: zz -> a (\"zz\" is not defined). Defined nodes: a, b");
}

TEST(DagTest, DuplicateEdgesCountTwice) {
  auto exp = graphOf({"a", "b"}, {{"a", "b"}, {"a", "b"}});
  auto dag = buildDag(exp);
  ASSERT_TRUE(dag.ok());
  EXPECT_EQ(dag->preds[1].size(), 2u);
  EXPECT_EQ(order(exp, *dag), (std::vector<std::string>{"a", "b"}));
}

TEST(DagTest, DuplicateIdsAreAnError) {
  auto dag = buildDag(graphOf({"a", "a"}, {}));
  ASSERT_FALSE(dag.ok());
  EXPECT_NE(dag.error().message.find("Duplicate node id \"a\""), std::string::npos);
}

TEST(DagTest, LongChainIsLinear) {
  std::vector<std::string> ids;
  std::vector<std::pair<std::string, std::string>> edges;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    std::string id = "n";  // not "n" + to_string(i): GCC 12 -O3 warns falsely (-Wrestrict)
    id += std::to_string(i);
    ids.push_back(std::move(id));
    if (i > 0) {
      edges.emplace_back(ids[static_cast<size_t>(i - 1)], ids.back());
    }
  }
  auto exp = graphOf(ids, edges);
  auto dag = buildDag(exp);
  ASSERT_TRUE(dag.ok());
  ASSERT_EQ(dag->topo.size(), static_cast<size_t>(n));
  EXPECT_EQ(dag->topo.back(), static_cast<uint32_t>(n - 1));
}

}  // namespace
}  // namespace oe::graph

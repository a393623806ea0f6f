// Definition pins alone: the file table, definitionPin over real files, and diffPins.
#include "oe/run/pin.hpp"

#include <gtest/gtest.h>

#include "oe/run/run.hpp"
#include "oe/spec/loader.hpp"
#include "support/temp_dir.hpp"

namespace oe::run {
namespace {

constexpr std::string_view kExperience = R"(name: pins
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./tools/shared.sh }
    - { id: b, kind: tool, impl: ./tools/shared.sh }
    - { id: c, kind: tool, impl: ./tools/own.sh }
  edges: []
)";

spec::Experience load(const test::TempDir& dir) {
  const auto yaml = dir.write("experience.yaml", kExperience);
  auto loaded = spec::loadExperience(yaml);
  for (const auto& diagnostic : loaded.diagnostics) {
    ADD_FAILURE() << diagnostic.format();
  }
  EXPECT_TRUE(loaded.experience.has_value());
  return loaded.experience ? std::move(*loaded.experience) : spec::Experience{};
}

TEST(FileTable, AFileManyNodesNameIsHashedOnce) {
  test::TempDir dir;
  dir.write("tools/shared.sh", "echo shared\n");
  dir.write("tools/own.sh", "echo own\n");
  const spec::Experience exp = load(dir);
  ASSERT_EQ(exp.nodes.size(), 3u);
  engine::FileTable table(exp.dir);
  const auto a = table.idsOf(exp.nodes[0]);
  const auto b = table.idsOf(exp.nodes[1]);
  const auto c = table.idsOf(exp.nodes[2]);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a, b);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_NE(a, c);
  EXPECT_EQ(table.size(), 2u);
  const auto files = table.filesOf(a);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].path, "./tools/shared.sh");
  EXPECT_EQ(files[0].sha256, *cache::fileDigest(dir / "tools/shared.sh"));
}

TEST(FileTable, APathThatNamesNoFileYetIsLookedAtAgain) {
  test::TempDir dir;
  const spec::Experience exp = load(dir);
  engine::FileTable table(exp.dir);
  EXPECT_TRUE(table.idsOf(exp.nodes[0]).empty());
  dir.write("tools/shared.sh", "echo late\n");
  EXPECT_EQ(table.idsOf(exp.nodes[1]).size(), 1u);
}

TEST(DefinitionPin, AChangedFileChangesOnlyTheNodesThatNameIt) {
  test::TempDir dir;
  dir.write("tools/shared.sh", "echo shared\n");
  dir.write("tools/own.sh", "echo own\n");
  const spec::Experience exp = load(dir);
  const Json before = definitionPin(exp);
  EXPECT_EQ(before["order"], Json::array({"a", "b", "c"}));
  EXPECT_EQ(definitionPin(exp), before);  // the same definition pins the same
  dir.write("tools/own.sh", "echo changed\n");
  const Json after = definitionPin(exp);
  EXPECT_EQ(after["nodes"]["a"], before["nodes"]["a"]);
  EXPECT_NE(after["nodes"]["c"], before["nodes"]["c"]);
  EXPECT_EQ(diffPins(before, after),
            (Json{{"changed", {"c"}}, {"added", Json::array()}, {"removed", Json::array()}}));
}

// Two nodes whose kind reads mcp.json (NodeSpec::read_files, from x-oe-reads-file) and one
// that does not: a file the definition does not name is in the key and pin all the same.
spec::Experience loadReading(const test::TempDir& dir) {
  spec::Experience exp = load(dir);
  exp.nodes[0].read_files = {"mcp.json"};
  exp.nodes[1].read_files = {"mcp.json"};
  return exp;
}

std::string keyOf(engine::FileTable& table, const spec::NodeSpec& node) {
  return cache::cacheKey(node.raw, Json::object(), Json::object(), Json::object(),
                         table.filesOf(table.idsOf(node)));
}

TEST(FileTable, AFileTheKindReadsCountsEvenWhenMissing) {
  test::TempDir dir;
  dir.write("tools/shared.sh", "echo shared\n");
  dir.write("tools/own.sh", "echo own\n");
  const spec::Experience exp = loadReading(dir);
  engine::FileTable missing(exp.dir);
  const auto files = missing.filesOf(missing.idsOf(exp.nodes[0]));
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[1].path, "mcp.json");
  EXPECT_EQ(files[1].sha256, "missing");
  EXPECT_EQ(missing.idsOf(exp.nodes[1]), missing.idsOf(exp.nodes[0]));  // hashed once
  EXPECT_EQ(missing.size(), 2u);

  dir.write("mcp.json", R"({"servers": {}})");
  engine::FileTable present(exp.dir);
  const auto now = present.filesOf(present.idsOf(exp.nodes[0]));
  ASSERT_EQ(now.size(), 2u);
  EXPECT_EQ(now[1].sha256, *cache::fileDigest(dir / "mcp.json"));
}

TEST(CacheKey, ChangingAFileTheKindReadsChangesOnlyItsNodesKeys) {
  test::TempDir dir;
  dir.write("tools/shared.sh", "echo shared\n");
  dir.write("tools/own.sh", "echo own\n");
  const spec::Experience exp = loadReading(dir);
  auto keys = [&exp] {  // one table per run, as a run has
    engine::FileTable table(exp.dir);
    return std::vector<std::string>{keyOf(table, exp.nodes[0]), keyOf(table, exp.nodes[1]),
                                    keyOf(table, exp.nodes[2])};
  };
  const auto without = keys();
  dir.write("mcp.json", R"({"servers": {"s": {"command": "node", "env": {"V": "1"}}}})");
  const auto created = keys();
  EXPECT_NE(created[0], without[0]) << "creating the file changes the key";
  EXPECT_EQ(keys(), created) << "the same content, the same keys";
  dir.write("mcp.json", R"({"servers": {"s": {"command": "node", "env": {"V": "2"}}}})");
  const auto edited = keys();
  EXPECT_NE(edited[0], created[0]);
  EXPECT_NE(edited[1], created[1]);
  EXPECT_EQ(edited[2], created[2]) << "c does not read mcp.json";
  EXPECT_EQ(edited[2], without[2]);

  const Json before = definitionPin(exp);
  dir.write("mcp.json", R"({"servers": {"s": {"command": "python3"}}})");
  EXPECT_EQ(diffPins(before, definitionPin(exp)),
            (Json{{"changed", {"a", "b"}}, {"added", Json::array()}, {"removed", Json::array()}}));
}

TEST(DiffPins, ChangedAddedAndRemovedInDeclarationOrder) {
  const Json before = {{"nodes", {{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}}},
                       {"order", {"d", "a", "b", "c"}}};
  const Json after = {{"nodes", {{"a", "1"}, {"b", "X"}, {"e", "5"}, {"d", "Y"}, {"f", "6"}}},
                      {"order", {"f", "b", "a", "e", "d"}}};
  EXPECT_EQ(diffPins(before, after),
            (Json{{"changed", {"b", "d"}}, {"added", {"f", "e"}}, {"removed", {"c"}}}));
  EXPECT_EQ(
      diffPins(before, before),
      (Json{{"changed", Json::array()}, {"added", Json::array()}, {"removed", Json::array()}}));
  // A pin without nodes (an old or damaged file) makes everything added.
  EXPECT_EQ(diffPins(Json::object(), after)["added"], after["order"]);
}

}  // namespace
}  // namespace oe::run

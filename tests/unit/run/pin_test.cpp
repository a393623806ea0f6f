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

// A tool's local imports (static scan, transitive, cycle-safe) are definition files of every
// node whose definition names it, and of no other.
constexpr std::string_view kImporting = R"(name: imports
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - { id: js, kind: tool, impl: ./tools/main.mjs }
    - { id: py, kind: tool, impl: ./tools/main.py }
    - { id: alone, kind: tool, impl: ./tools/alone.mjs }
  edges: []
)";

spec::Experience loadText(const test::TempDir& dir, std::string_view yaml) {
  const auto path = dir.write("experience.yaml", yaml);
  auto loaded = spec::loadExperience(path);
  for (const auto& diagnostic : loaded.diagnostics) {
    ADD_FAILURE() << diagnostic.format();
  }
  return loaded.experience ? std::move(*loaded.experience) : spec::Experience{};
}

std::vector<std::string> pathsOf(const std::vector<cache::FileDigest>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) {
    out.push_back(f.path);
  }
  return out;
}

TEST(FileTable, AModulesLocalImportsAreItsNodesDefinitionFiles) {
  test::TempDir dir;
  dir.write("tools/main.mjs", "import a from './lib/a.mjs';\nimport x from 'lodash';\n");
  dir.write("tools/lib/a.mjs", "import b from './b.mjs';\nexport default 1;\n");
  dir.write("tools/lib/b.mjs", "import a from './a.mjs';\nexport default 2;\n");  // a cycle
  dir.write("tools/main.py", "import helpers\nfrom pkg import mod\n");
  dir.write("tools/helpers.py", "");
  dir.write("tools/pkg/__init__.py", "");
  dir.write("tools/pkg/mod.py", "from . import helpers2\n");
  dir.write("tools/pkg/helpers2.py", "");
  dir.write("tools/alone.mjs", "export default () => ({ state_delta: {} });\n");
  const spec::Experience exp = loadText(dir, kImporting);
  ASSERT_EQ(exp.nodes.size(), 3u);
  engine::FileTable table(exp.dir);
  EXPECT_EQ(pathsOf(table.filesOf(table.idsOf(exp.nodes[0]))),
            (std::vector<std::string>{"./tools/main.mjs", "tools/lib/a.mjs", "tools/lib/b.mjs"}));
  EXPECT_EQ(
      pathsOf(table.filesOf(table.idsOf(exp.nodes[1]))),
      (std::vector<std::string>{"./tools/main.py", "tools/helpers.py", "tools/pkg/__init__.py",
                                "tools/pkg/mod.py", "tools/pkg/helpers2.py"}));
  EXPECT_EQ(pathsOf(table.filesOf(table.idsOf(exp.nodes[2]))),
            (std::vector<std::string>{"./tools/alone.mjs"}));

  // Editing an imported module changes the pin of the nodes importing it, and only theirs.
  const Json before = definitionPin(exp);
  dir.write("tools/lib/b.mjs", "import a from './a.mjs';\nexport default 3;\n");
  EXPECT_EQ(diffPins(before, definitionPin(exp))["changed"], Json::array({"js"}));
  const Json middle = definitionPin(exp);
  dir.write("tools/pkg/helpers2.py", "X = 1\n");
  EXPECT_EQ(diffPins(middle, definitionPin(exp))["changed"], Json::array({"py"}));
}

// Data files: what a call's resolved args name inside the experience folder, and the node's
// cache.inputs' matches, hashed when the call is keyed.
constexpr std::string_view kData = R"(name: data
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - id: t
      kind: tool
      impl: ./tools/t.sh
      cache: { inputs: ["data/*.csv"] }
  edges: []
)";

TEST(FileTable, DataFilesAreWhatTheArgsNameInsideTheFolderAndTheInputsMatch) {
  test::TempDir dir;
  test::TempDir outside;
  dir.write("tools/t.sh", "");
  dir.write("input.txt", "hello");
  dir.write("folder/x.txt", "x");
  dir.write("data/a.csv", "1");
  dir.write("data/b.txt", "no");
  dir.write(".openexpertise/state.sqlite", "");
  outside.write("elsewhere.txt", "");
  const spec::Experience exp = loadText(dir, kData);
  engine::FileTable table(exp.dir);
  const Json args = {{"path", "./input.txt"},
                     {"nested", {{"list", {"folder", "missing.txt", 3}}}},
                     {"outside", (outside / "elsewhere.txt").string()},
                     {"up", "../x"},
                     {"self", "."},
                     {"store", ".openexpertise/state.sqlite"},
                     {"path_expr", "$.field"},
                     {"url", "https://example.com/input.txt"},
                     {"absolute_inside", (dir / "input.txt").string()}};
  std::vector<cache::FileDigest> files;
  EXPECT_EQ(table.addDataFiles(args, exp.nodes[0], files), "");
  std::sort(files.begin(), files.end(),
            [](const auto& x, const auto& y) { return x.path < y.path; });
  // Sorted: "./input.txt" < "/tmp/...": '.' comes before '/'.
  ASSERT_EQ(pathsOf(files), (std::vector<std::string>{"./input.txt", (dir / "input.txt").string(),
                                                      "data/a.csv", "folder"}));
  EXPECT_EQ(files[0].sha256, cache::sha256Hex("hello"));
  EXPECT_EQ(files[1].sha256, files[0].sha256);
  EXPECT_EQ(files[2].sha256, cache::sha256Hex("1"));
  // Another call sees the files as they are then.
  dir.write("input.txt", "changed");
  dir.write("data/c.csv", "2");
  std::vector<cache::FileDigest> again;
  EXPECT_EQ(table.addDataFiles(args, exp.nodes[0], again), "");
  std::sort(again.begin(), again.end(),
            [](const auto& x, const auto& y) { return x.path < y.path; });
  ASSERT_EQ(again.size(), 5u);
  EXPECT_EQ(again[0].sha256, cache::sha256Hex("changed"));
  EXPECT_EQ(again[3].path, "data/c.csv");
}

// A plain relative name ("a/b.txt") is joined to the folder without std::filesystem's
// normalisation; written any other way, the same file is found the same, and the store's folder
// stays out either way.
TEST(FileTable, APlainNameAndTheSamePathWrittenOtherwiseNameTheSameFile) {
  test::TempDir dir;
  dir.write("tools/t.sh", "");
  dir.write("folder/x.txt", "x");
  dir.write(".openexpertise/state.sqlite", "");
  dir.write(".openexpertise-notes", "n");
  const spec::Experience exp = loadText(dir, kData);
  engine::FileTable table(exp.dir);
  const Json args = {{"plain", "folder/x.txt"},
                     {"dotted", "./folder/x.txt"},
                     {"round", "folder/../folder/x.txt"},
                     {"doubled", "folder//x.txt"},
                     {"store", ".openexpertise"},
                     {"in_store", ".openexpertise/state.sqlite"},
                     {"not_the_store", ".openexpertise-notes"}};
  std::vector<cache::FileDigest> files;
  bool names_paths = false;
  EXPECT_EQ(table.addDataFiles(args, exp.nodes[0], files, &names_paths), "");
  EXPECT_TRUE(names_paths);
  std::sort(files.begin(), files.end(),
            [](const auto& x, const auto& y) { return x.path < y.path; });
  ASSERT_EQ(pathsOf(files),
            (std::vector<std::string>{"./folder/x.txt", ".openexpertise-notes",
                                      "folder/../folder/x.txt", "folder//x.txt", "folder/x.txt"}));
  for (const cache::FileDigest& file : files) {
    EXPECT_EQ(file.sha256, cache::sha256Hex(file.path == ".openexpertise-notes" ? "n" : "x"))
        << file.path;
  }
  // A plain name of nothing there yet still says the call names a path.
  std::vector<cache::FileDigest> none;
  names_paths = false;
  EXPECT_EQ(table.addDataFiles(Json{{"out", "report.md"}}, exp.nodes[0], none, &names_paths), "");
  EXPECT_TRUE(names_paths);
  EXPECT_TRUE(std::none_of(none.begin(), none.end(),
                           [](const auto& f) { return f.path == "report.md"; }));
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

// Static file checks (issue 10, item 5): the files a node names must exist before the run, and
// values its kind cannot run are errors, as the kind's schema marks them (file_check.hpp).
#include "oe/spec/file_check.hpp"

#include <gtest/gtest.h>

#include "oe/spec/loader.hpp"
#include "oe/spec/validate.hpp"
#include "unit/spec/spec_test_support.hpp"

namespace oe::spec {
namespace {

using testing::dump;
using testing::matching;
using testing::TempDir;
using testing::testKinds;

// testKinds() with the annotations the first-party plugins' schemas carry (tool impl, agent
// prompt, skill impl, dataset source); the integration tests check the real plugins'.
KindCatalog annotatedKinds() {
  KindCatalog kinds = testKinds();
  kinds["tool"].schema = Json::parse(R"({"type": "object", "required": ["impl"],
    "properties": {"impl": {"type": "string", "x-oe-path": "file"}}})");
  kinds["agent"].schema = Json::parse(R"({"type": "object", "required": ["prompt"],
    "properties": {"prompt": {"type": "string", "x-oe-path": "file"}}})");
  kinds["skill"] = KindInfo{"skill", Json::parse(R"({"type": "object",
    "properties": {"impl": {"type": "string", "x-oe-path": "directory"}}})")};
  kinds["dataset"].schema = Json::parse(R"({"type": "object", "properties": {"source": {
    "type": "object",
    "properties": {
      "type": {"x-oe-unsupported": {"mcp-resource": "dataset sources of type mcp-resource are not supported yet in oe"}},
      "uri": {"type": "string"},
      "format": {"x-oe-unsupported": {"parquet": "parquet files are not read yet in oe; convert the file to jsonl, json or csv"}}
    },
    "allOf": [
      {"if": {"properties": {"type": {"const": "file"}}, "required": ["type"]},
       "then": {"properties": {"uri": {"x-oe-path": "input-file"}}}},
      {"if": {"properties": {"type": {"const": "sqlite"}}, "required": ["type"]},
       "then": {"properties": {"uri": {"x-oe-path": "input-file"}}}}
    ]}}})");
  return kinds;
}

class FileChecks : public ::testing::Test {
 protected:
  // Validates `nodes` (and `edges`) written to a real experience folder.
  std::vector<Diagnostic> validate(const std::string& nodes, const std::string& edges = "[]",
                                   const KindCatalog& kinds = annotatedKinds()) {
    const auto path = dir_.write("experience.yaml",
                                 "name: t\nversion: 0.1.0\nstate:\n  schema:\n"
                                 "    rows: {type: array}\ngraph:\n  nodes:\n" +
                                     nodes + "  edges: " + edges + "\n");
    LoadResult loaded = loadExperience(path);
    EXPECT_TRUE(loaded.experience) << dump(loaded.diagnostics);
    if (!loaded.experience) {
      return {};
    }
    return validateExperience(*loaded.experience, kinds, false);
  }
  TempDir dir_;
};

TEST_F(FileChecks, ToolImplAndAgentPromptMustExist) {
  dir_.write("tools/ok.mjs", "export default () => ({})");
  dir_.write("prompts/ok.md", "hi");
  auto ds = validate(R"(    - {id: t, kind: tool, impl: ./tools/ok.mjs}
    - {id: u, kind: tool, impl: ./tools/gone.mjs}
    - {id: p, kind: agent, prompt: prompts/ok.md}
    - {id: q, kind: agent, prompt: prompts/gone.md}
    - {id: d, kind: tool, impl: ./tools}
)");
  ASSERT_EQ(ds.size(), 3u) << dump(ds);
  EXPECT_EQ(ds[0].node_id, "u");
  EXPECT_EQ(ds[0].field, "impl");
  EXPECT_EQ(ds[0].line, 9);
  EXPECT_EQ(ds[0].column, 33);
  EXPECT_EQ(ds[0].severity, Severity::kError);
  EXPECT_EQ(ds[0].message, "\"./tools/gone.mjs\" does not exist (looked for " +
                               (dir_.path() / "tools/gone.mjs").string() +
                               "). Create it, or fix the path (relative to the experience "
                               "folder)");
  EXPECT_EQ(ds[1].node_id, "q");
  EXPECT_EQ(ds[1].field, "prompt");
  EXPECT_EQ(ds[1].line, 11);
  EXPECT_EQ(ds[2].node_id, "d");
  EXPECT_NE(ds[2].message.find("is a directory"), std::string::npos) << ds[2].message;
}

TEST_F(FileChecks, SkillImplIsADirectory) {
  dir_.write("skills/s/SKILL.md", "---\nname: s\n---\nbody");
  auto ds = validate(
      "    - {id: s, kind: skill, impl: skills/s}\n"
      "    - {id: f, kind: skill, impl: skills/s/SKILL.md}\n");
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].node_id, "f");
  EXPECT_NE(ds[0].message.find("a directory is expected here"), std::string::npos);
}

TEST_F(FileChecks, DatasetFilesFormatsAndSources) {
  dir_.write("data/rows.jsonl", "{}\n");
  auto ds = validate(
      R"(    - {id: ok, kind: dataset, writes: [rows], source: {type: file, uri: data/rows.jsonl}}
    - {id: gone, kind: dataset, writes: [rows], source: {type: file, uri: data/gone.csv}}
    - {id: pq, kind: dataset, writes: [rows], source: {type: file, uri: data/rows.jsonl, format: parquet}}
    - {id: mcp, kind: dataset, writes: [rows], source: {type: mcp-resource, uri: "res://x"}}
    - {id: web, kind: dataset, writes: [rows], source: {type: http, uri: not/a/path}}
    - {id: db, kind: dataset, writes: [rows], source: {type: sqlite, uri: gone.db}}
    - {id: later, kind: dataset, writes: [rows], source: {type: file, uri: made-by-ok.json}}
)",
      "[{from: ok, to: later}]");
  ASSERT_EQ(ds.size(), 5u) << dump(ds);
  EXPECT_EQ(ds[0].node_id, "gone");
  EXPECT_EQ(ds[0].field, "source.uri");
  EXPECT_EQ(ds[0].severity, Severity::kError);
  EXPECT_NE(ds[0].message.find("nothing runs before this node"), std::string::npos);
  EXPECT_EQ(ds[1].node_id, "pq");
  EXPECT_EQ(ds[1].field, "source.format");
  EXPECT_EQ(ds[1].message.rfind("\"parquet\" is not supported: parquet files are not read", 0), 0u)
      << ds[1].message;
  EXPECT_EQ(ds[2].node_id, "mcp");
  EXPECT_EQ(ds[2].field, "source.type");
  EXPECT_NE(ds[2].message.find("mcp-resource"), std::string::npos);
  EXPECT_EQ(ds[3].node_id, "db");  // an http source's uri is not a path: nothing for "web"
  EXPECT_EQ(ds[3].severity, Severity::kError);
  // An earlier node may write it: a warning, not an error.
  EXPECT_EQ(ds[4].node_id, "later");
  EXPECT_EQ(ds[4].severity, Severity::kWarning);
  EXPECT_NE(ds[4].message.find("unless an earlier node writes it"), std::string::npos);
}

TEST_F(FileChecks, AKindSchemaDeclaresItsOwnFileFields) {
  // Data-driven: a third-party kind marks its fields; the host knows nothing else about it.
  KindCatalog kinds = testKinds();
  kinds["render"] = KindInfo{"render", Json::parse(R"({"type": "object", "properties": {
      "template": {"type": "string", "x-oe-path": "file"},
      "engine": {"enum": ["jinja", "liquid"], "x-oe-unsupported": {"liquid": "use jinja"}},
      "opts": {"type": "object", "allOf": [
        {"if": {"properties": {"local": {"const": true}}}, "then": {"properties": {
          "dir": {"x-oe-path": "directory"}}}}]}}})")};
  // A kind's own annotations are all that count (here impl is not marked, so not checked).
  kinds["tool"] = KindInfo{"tool", Json::parse(R"({"type": "object", "properties": {
      "impl": {"type": "string"}, "manifest": {"type": "string", "x-oe-path": "file"}}})")};
  auto ds = validate(
      R"(    - {id: r, kind: render, template: t.j2, engine: liquid, opts: {local: true, dir: nope}}
    - {id: s, kind: render, template: t.j2, opts: {local: false, dir: nope}}
    - {id: t, kind: tool, impl: gone.mjs, manifest: gone.json}
)",
      "[]", kinds);
  ASSERT_EQ(ds.size(), 5u) << dump(ds);
  EXPECT_EQ(matching(ds, "\"t.j2\" does not exist").size(), 2u) << dump(ds);
  EXPECT_EQ(matching(ds, "\"liquid\" is not supported: use jinja").size(), 1u) << dump(ds);
  EXPECT_EQ(matching(ds, "\"nope\" does not exist").size(), 1u) << dump(ds);  // only r's
  EXPECT_EQ(matching(ds, "\"gone.json\" does not exist").size(), 1u) << dump(ds);
  EXPECT_EQ(matching(ds, "\"gone.mjs\"").size(), 0u) << dump(ds);
}

TEST_F(FileChecks, StatePathsUrlsAndAbsolutePaths) {
  const auto abs = dir_.write("abs/tool.mjs", "x");
  auto ds = validate("    - {id: a, kind: tool, impl: \"" + abs.string() +
                     "\"}\n"
                     "    - {id: b, kind: tool, impl: \"$.impl\"}\n"
                     "    - {id: c, kind: tool, impl: \"https://example.com/t.mjs\"}\n");
  EXPECT_TRUE(ds.empty()) << dump(ds);
}

TEST_F(FileChecks, AKindWhoseSchemaSaysNothingIsNotChecked) {
  // The host knows no kind: without annotations nothing is taken for a path.
  auto ds = validate("    - {id: u, kind: tool, impl: ./tools/gone.mjs}\n", "[]", testKinds());
  EXPECT_TRUE(ds.empty()) << dump(ds);
}

// x-oe-program (issue 12): the program a value runs must be on PATH, or on the node's own
// search path where the kind says one is; a warning for `oe validate`, an error before a run.
TEST_F(FileChecks, AKindSchemaNamesTheProgramsItsNodesRun) {
  const auto bin = dir_.path() / "bin";
  dir_.write("bin/present", "#!/bin/sh\n");
  std::filesystem::permissions(bin / "present", std::filesystem::perms::owner_all);
  dir_.write("bin/not-executable", "data");
  const Json schema = Json::parse(R"({"type": "object", "properties": {
      "cli": {"enum": ["a", "b", "c", "d"], "x-oe-program": {
        "programs": {"a": "present", "b": "absent", "c": "not-executable", "d": "./bin/present"},
        "search_path": "/env/PATH"}},
      "env": {"type": "object"}}})");
  ProgramCache cache;
  auto check = [&](const Json& node, ProgramCheck severity) {
    return checkFileFields(&schema, node, dir_.path(), false, severity, cache);
  };
  const std::string own = bin.string();
  EXPECT_TRUE(check(Json{{"cli", "a"}, {"env", {{"PATH", own}}}}, Severity::kError).empty());
  EXPECT_TRUE(check(Json{{"cli", "d"}}, Severity::kError).empty()) << "a path, from the folder";

  auto absent = check(Json{{"cli", "b"}, {"env", {{"PATH", own}}}}, Severity::kWarning);
  ASSERT_EQ(absent.size(), 1u);
  EXPECT_EQ(absent[0].pointer, "/cli");
  EXPECT_EQ(absent[0].severity, Severity::kWarning);
  EXPECT_EQ(absent[0].message,
            "\"b\" runs the program `absent`, which is not on the node's "
            "env.PATH (" +
                own +
                "). Install it, or put the directory that "
                "holds it on PATH (or in the node's env.PATH)");
  auto not_executable = check(Json{{"cli", "c"}, {"env", {{"PATH", own}}}}, Severity::kError);
  ASSERT_EQ(not_executable.size(), 1u);
  EXPECT_EQ(not_executable[0].severity, Severity::kError);
  // Without env.PATH, oe's PATH (which has no "present"): the node's own override is what found it.
  EXPECT_EQ(check(Json{{"cli", "a"}}, Severity::kError).size(), 1u);
  // A run that starts no program (oe run --llm-replay) does not look for any.
  EXPECT_TRUE(check(Json{{"cli", "b"}}, std::nullopt).empty());
  EXPECT_TRUE(marksPrograms(schema));
  EXPECT_FALSE(marksPrograms(annotatedKinds()["tool"].schema.value()));
  EXPECT_EQ(checkPrograms(schema, Json{{"cli", "b"}}, dir_.path(), cache).size(), 1u);
}

// x-oe-reads-file: the file a node reads without naming it (a dataset's mcp.json), under the
// `then` whose `if` holds, at any depth; each file once.
const Json& readsFileSchema() {
  static const Json schema = Json::parse(R"({"type": "object", "properties": {
      "source": {"type": "object", "allOf": [
        {"if": {"properties": {"type": {"const": "mcp-resource"}}, "required": ["type"]},
         "then": {"x-oe-reads-file": "mcp.json"}},
        {"if": {"properties": {"type": {"const": "both"}}, "required": ["type"]},
         "then": {"x-oe-reads-file": ["mcp.json", "conf/extra.json", 7, ""]}}]}},
      "x-oe-reads-file": "always.txt"})");
  return schema;
}

TEST(ReadFiles, TheAnnotationUnderAThenWhoseIfHolds) {
  const Json& schema = readsFileSchema();
  EXPECT_TRUE(marksReadFiles(schema));
  EXPECT_FALSE(marksReadFiles(annotatedKinds()["dataset"].schema.value()));
  using Files = std::vector<std::string>;
  EXPECT_EQ(readFiles(schema, Json{{"source", {{"type", "mcp-resource"}}}}),
            (Files{"always.txt", "mcp.json"}));
  EXPECT_EQ(readFiles(schema, Json{{"source", {{"type", "file"}}}}), (Files{"always.txt"}));
  EXPECT_EQ(readFiles(schema, Json::object()), (Files{"always.txt"}));
  // A list; not-a-string and empty entries are ignored, a file named twice counts once.
  EXPECT_EQ(readFiles(schema, Json{{"source", {{"type", "both"}}}}),
            (Files{"always.txt", "mcp.json", "conf/extra.json"}));
  EXPECT_TRUE(readFiles(schema, Json("not a node")).empty());
}

TEST_F(FileChecks, AFileTheKindReadsIsCheckedLikeAnInputFile) {
  KindCatalog kinds = annotatedKinds();
  kinds["dataset"].schema = readsFileSchema();
  dir_.write("always.txt", "x");
  auto ds = validate(
      R"(    - {id: first, kind: dataset, writes: [rows], source: {type: mcp-resource}}
    - {id: later, kind: dataset, writes: [rows], source: {type: mcp-resource}}
    - {id: plain, kind: dataset, writes: [rows], source: {type: file}}
)",
      "[{from: first, to: later}]", kinds);
  ASSERT_EQ(ds.size(), 2u) << dump(ds);
  EXPECT_EQ(ds[0].node_id, "first");
  EXPECT_EQ(ds[0].field, "source");
  EXPECT_EQ(ds[0].severity, Severity::kError);  // nothing runs before it: it would fail
  EXPECT_EQ(ds[0].message.rfind("the node reads \"mcp.json\", which does not exist (looked for " +
                                    (dir_.path() / "mcp.json").string() + "); nothing runs",
                                0),
            0u)
      << ds[0].message;
  EXPECT_EQ(ds[1].node_id, "later");
  EXPECT_EQ(ds[1].severity, Severity::kWarning);  // "first" may write it
  dir_.write("mcp.json", "{}");
  EXPECT_TRUE(
      validate("    - {id: n, kind: dataset, writes: [rows], source: {type: mcp-resource}}\n", "[]",
               kinds)
          .empty());
}

TEST(AttachReadFiles, OnlyNodesOfAMarkingKindGetThem) {
  TempDir dir;
  const auto path = dir.write("experience.yaml", R"(name: t
version: 0.1.0
state: {schema: {rows: {type: array}}}
graph:
  nodes:
    - {id: m, kind: dataset, writes: [rows], source: {type: mcp-resource}}
    - {id: f, kind: dataset, writes: [rows], source: {type: file}}
    - {id: t, kind: tool, impl: x.mjs}
  edges: []
)");
  LoadResult loaded = loadExperience(path);
  ASSERT_TRUE(loaded.experience) << dump(loaded.diagnostics);
  KindCatalog kinds = annotatedKinds();
  kinds["dataset"].schema = readsFileSchema();
  Experience& exp = *loaded.experience;
  compactNodes(exp);  // a run's nodes: their text, no DOM
  attachReadFiles(exp, kinds);
  using Files = std::vector<std::string>;
  EXPECT_EQ(exp.nodes[0].read_files, (Files{"always.txt", "mcp.json"}));
  EXPECT_EQ(exp.nodes[1].read_files, (Files{"always.txt"}));
  EXPECT_TRUE(exp.nodes[2].read_files.empty());
}

}  // namespace
}  // namespace oe::spec

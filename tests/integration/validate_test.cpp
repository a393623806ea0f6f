// `oe validate` reports every problem at once with file:line:column (D8, D9).
#include <filesystem>
#include <map>

#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using Validate = OeTest;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // their shadow memory needs terabytes of address space
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// `oe <args>` with at most 1 GiB of address space (prlimit), so that a document that makes oe
// build gigabytes ends in std::bad_alloc and SIGABRT instead of swapping the machine.
ProcessResult oeLimited(const std::filesystem::path& dir, std::vector<std::string> args) {
  args.insert(args.begin(), OE_EXE);
  if (!kSanitized) {
    args.insert(args.begin(), {"prlimit", "--as=1073741824", "--"});
  }
  return runProcess(args, {{"OE_PLUGIN_PATH", ""}}, dir);
}

// 8 levels of 9 aliases: 9^9 strings, gigabytes once expanded (issue 10, item 3).
std::string aliasBomb() {
  std::string text = "name: bomb\nversion: 0.1.0\nstate: {schema: {}}\n";
  text += "l0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 8; ++i) {
    text += "l" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 9; ++k) {
      text += (k == 0 ? "*a" : ", *a") + std::to_string(i - 1);
    }
    text += "]\n";
  }
  return text + "graph: {nodes: [], edges: []}\n";
}

TEST_F(Validate, AliasBombIsRefusedNotFatal) {
  writeExperience(aliasBomb());
  for (const char* command : {"validate", "run"}) {
    auto r = oeLimited(dir_.path(), {command, dir_.path().string()});
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.err;  // not 134 (SIGABRT)
    // The byte bound (4 MiB of copied values) is met before the 1,000,000-node one here.
    EXPECT_NE(r.err.find("experience.yaml:9:50: error: alias expansion exceeds 4.0 MiB"),
              std::string::npos)
        << command << ": " << r.err;
  }
}

TEST_F(Validate, DeepNestingIsRefusedNotFatal) {
  for (const char* open : {"[", "{a: ", "- "}) {
    std::string text = "name: deep\nversion: 0.1.0\nstate:\n  ";
    for (int i = 0; i < 100000; ++i) {
      text += open;
    }
    writeExperience(text + "x\n");
    for (const char* command : {"validate", "run"}) {
      auto r = oeLimited(dir_.path(), {command, dir_.path().string()});
      EXPECT_EQ(r.exit_code, 1) << command << " " << open << ": " << r.err;
      EXPECT_NE(r.err.find("experience.yaml:4:"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("more than 128 levels deep"), std::string::npos)
          << command << " " << open << ": " << r.err;
    }
  }
}

TEST_F(Validate, OversizedFileIsRefusedUnread) {
  std::string text =
      "name: big\nversion: 0.1.0\nstate: {schema: {}}\n"
      "graph: {nodes: [], edges: []}\ndescription: ";
  text += std::string((size_t{16} << 20) + 1, 'x');
  writeExperience(text + "\n");
  for (const char* command : {"validate", "run"}) {
    auto r = oeLimited(dir_.path(), {command, dir_.path().string()});
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.err;
    EXPECT_NE(r.err.find("oe reads experience files of at most 16 MiB"), std::string::npos)
        << command << ": " << r.err;
  }
}

TEST_F(Validate, ValidExperiencePasses) {
  writeTool("ok.mjs", "export default () => ({ state_delta: {} });");
  writeExperience(R"(name: ok
version: 0.1.0
state: { schema: { x: { type: string } } }
graph:
  nodes: [ { id: a, kind: tool, impl: ./tools/ok.mjs, writes: [x] } ]
  edges: []
)");
  auto r = oe({"validate", dir_.path().string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("experience valid"), std::string::npos);
}

TEST_F(Validate, ReportsEveryErrorWithLineAndColumn) {
  writeExperience(R"(name: broken
version: 0.1.0
state:
  schema:
    x: { type: string }
graph:
  nodes:
    - id: a
      kind: tool
      impl: ./tools/a.mjs
      writes: [y]
    - id: b
      kind: no-such-kind
    - id: c
      kind: tool
  edges:
    - { from: a, to: ghost }
    - { from: a, to: c, when: '$.x == ' }
)");
  auto r = oe({"validate", dir_.path().string()});
  EXPECT_EQ(r.exit_code, 1);
  const std::string& e = r.err;
  // undeclared write on line 11, unknown kind on 13, missing impl for c (node at 14),
  // unknown edge target on 17, a broken expression on 18.
  EXPECT_NE(e.find("writes undeclared state field \"y\""), std::string::npos) << e;
  EXPECT_NE(e.find("experience.yaml:11:"), std::string::npos) << e;
  EXPECT_NE(e.find("no-such-kind"), std::string::npos) << e;
  EXPECT_NE(e.find("experience.yaml:13:"), std::string::npos) << e;
  EXPECT_NE(e.find("impl"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown node id \"ghost\""), std::string::npos) << e;
  EXPECT_NE(e.find("experience.yaml:17:"), std::string::npos) << e;
  EXPECT_NE(e.find("experience.yaml:18:"), std::string::npos) << e;
  EXPECT_NE(e.find("node \"a\""), std::string::npos) << e;
}

TEST_F(Validate, YamlSyntaxErrorHasLineAndColumn) {
  writeExperience("name: x\nversion: 0.1.0\nstate: { schema: {}\ngraph: [\n");
  auto r = oe({"validate", dir_.path().string()});
  EXPECT_EQ(r.exit_code, 1);
  // file:line:column once, in front; the message does not repeat the position.
  EXPECT_NE(r.err.find("experience.yaml:4:1: error: YAML parse error: "), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("line 4"), std::string::npos) << r.err;
}

TEST_F(Validate, MissingFileSaysWhatToPass) {
  auto r = oe({"validate", (dir_.path() / "nowhere").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("experience.yaml not found at"), std::string::npos) << r.err;
}

TEST_F(Validate, CycleIsReported) {
  writeTool("ok.mjs", "export default () => ({ state_delta: {} });");
  writeExperience(R"(name: cyc
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./tools/ok.mjs }
    - { id: b, kind: tool, impl: ./tools/ok.mjs }
  edges: [ { from: a, to: b }, { from: b, to: a } ]
)");
  auto r = oe({"validate", dir_.path().string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cycle"), std::string::npos) << r.err;
}

TEST_F(Validate, UnknownKeyWarnsWithSuggestionAndFailsUnderStrict) {
  writeTool("ok.mjs", "export default () => ({ state_delta: {} });");
  writeExperience(R"(name: typo
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./tools/ok.mjs, wirtes: [] }
  edges: []
)");
  auto r = oe({"validate", dir_.path().string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("writes"), std::string::npos) << r.err;
  auto strict = oe({"validate", dir_.path().string(), "--strict"});
  EXPECT_EQ(strict.exit_code, 1);
}

// Every example (issue 10, item 10): each folder under examples/ holds an experience.yaml
// (at any depth), and `oe validate` accepts every one of them. An example that needs a build
// step is validated where the build puts its runnable copy (or its plugin), and fails, not
// skips, when that is missing.
TEST_F(Validate, EveryExampleValidates) {
  namespace fs = std::filesystem;
  const fs::path examples = fs::path(OE_SOURCE_DIR) / "examples";
  const fs::path build = fs::path(OE_EXE).parent_path().parent_path();
  size_t folders = 0;
  size_t validated = 0;
  for (const auto& folder : fs::directory_iterator(examples)) {
    if (!folder.is_directory()) {
      continue;
    }
    const std::string name = folder.path().filename().string();
    if (name.starts_with(".")) {
      continue;  // not an example: a workspace `oe serve --root examples` leaves, say
    }
    if (name == "rust-plugin") {
      continue;  // its kinds exist once cargo built them: tests/abi RustPlugin.* builds and runs it
    }
    ++folders;
    std::vector<fs::path> found;
    for (const auto& entry : fs::recursive_directory_iterator(folder.path())) {
      if (entry.path().filename() == "experience.yaml") {
        found.push_back(entry.path().parent_path());
      }
    }
    EXPECT_FALSE(found.empty()) << "examples/" << name << " has no experience.yaml";
    for (fs::path dir : found) {
      std::map<std::string, std::string> env = {{"OE_PLUGIN_PATH", ""}};
      if (name == "native-tool") {
        // tools/checksum.so is built into the staged copy (examples/native-tool/CMakeLists.txt).
        dir = build / "examples" / name;
        ASSERT_TRUE(fs::exists(dir / "tools" / "checksum.so"))
            << dir << ": build the example_native_checksum target";
      } else if (name == "c-plugin") {
        // Its text-upper kind is examples/c-plugin/upper.c, built in tree for tests/abi.
        const fs::path plugin = build / "tests" / "abi" / "fixtures" / "c_upper";
        ASSERT_TRUE(fs::exists(plugin / "c_upper.so"))
            << plugin << ": build the oe_abi_fixture_c_upper_c_upper target";
        env["OE_PLUGIN_PATH"] = plugin.string();
      }
      auto r = runProcess({OE_EXE, "validate", dir.string()}, env, dir_.path());
      EXPECT_EQ(r.exit_code, 0) << dir << ": " << r.err;
      EXPECT_NE(r.out.find("experience valid"), std::string::npos) << dir << ": " << r.out;
      ++validated;
    }
  }
  EXPECT_GE(folders, 7u);
  EXPECT_GE(validated, folders);
}

TEST_F(Validate, MissingFilesAndUnsupportedDatasetsBeforeAnythingRuns) {
  writeTool("ok.mjs", "export default () => ({ state_delta: {} });");
  dir_.write("data/rows.jsonl", "{\"a\": 1}\n");
  writeExperience(R"(name: files
version: 0.1.0
state:
  schema:
    rows: { type: array }
    text: { type: string }
graph:
  nodes:
    - { id: tool_ok, kind: tool, impl: ./tools/ok.mjs }
    - { id: tool_gone, kind: tool, impl: ./tools/gone.mjs }
    - { id: ask, kind: agent, prompt: prompts/gone.md, writes: [text] }
    - { id: rows_gone, kind: dataset, writes: [rows], source: { type: file, uri: data/gone.csv } }
    - { id: rows_pq, kind: dataset, writes: [rows], source: { type: file, uri: data/rows.jsonl, format: parquet } }
  edges: []
)");
  for (const char* command : {"validate", "run"}) {
    auto r = oe({command, dir_.path().string()});
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.err;
    const std::string& e = r.err;
    for (const char* expected : {
             "experience.yaml:10:42: error: node \"tool_gone\": impl: \"./tools/gone.mjs\" does "
             "not exist (looked for ",
             "experience.yaml:11:39: error: node \"ask\": prompt: \"prompts/gone.md\" does not "
             "exist",
             "experience.yaml:12:82: error: node \"rows_gone\": source.uri: \"data/gone.csv\" does "
             "not exist",
             "experience.yaml:13:105: error: node \"rows_pq\": source.format: \"parquet\" is not "
             "supported",
         }) {
      EXPECT_NE(e.find(expected), std::string::npos) << command << ": " << expected << "\n" << e;
    }
    EXPECT_NE(e.find("oe: 4 errors"), std::string::npos) << command << ": " << e;
    // Nothing ran: no run log was started.
    EXPECT_FALSE(std::filesystem::exists(dir_.path() / ".openexpertise" / "runs")) << command;
  }
}

TEST_F(Validate, StructuralAndReferenceErrorsTogether) {
  writeTool("ok.mjs", "export default () => ({ state_delta: {} });");
  writeExperience(R"(name: both
version: 1
state:
  schema:
    x: { type: integer }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./tools/ok.mjs, writes: [y] }
    - { id: a, kind: wizard }
    - { kind: tool, impl: ./tools/ok.mjs }
  edges:
    - { from: a, to: ghost, when: "$.x >" }
    - { from: a }
)");
  // oe run reports the same, before anything runs.
  for (const char* command : {"validate", "run"}) {
    auto r = oe({command, dir_.path().string()});
    EXPECT_EQ(r.exit_code, 1) << command;
    const std::string& e = r.err;
    for (const char* expected : {
             // structural
             "experience.yaml:2:10: error: version: must be a string",
             "experience.yaml:5:16: error: state.schema.x.type: must be one of",
             "experience.yaml:10:7: error: graph.nodes[2]: missing required key \"id\"",
             "experience.yaml:13:7: error: graph.edges[1]: missing required key \"to\"",
             // references, in the same run
             "experience.yaml:8:59: error: node \"a\": writes[0]: writes undeclared state field",
             "experience.yaml:9:13: error: node \"a\": id: Duplicate node ids",
             "experience.yaml:9:22: error: node \"a\": kind: unknown node kind \"wizard\"",
             "experience.yaml:12:22: error: graph.edges[0].to: Edge references unknown node id",
             "experience.yaml:12:41: error: graph.edges[0].when: invalid when of edge",
         }) {
      EXPECT_NE(e.find(expected), std::string::npos) << expected << "\n" << e;
    }
    EXPECT_NE(e.find("oe: 9 errors"), std::string::npos) << command << "\n" << e;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / ".openexpertise" / "runs"));
}

}  // namespace
}  // namespace oe::test

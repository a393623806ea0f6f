// Nested experiences end to end: the real `oe` with the experience and tool plugins runs parents
// whose nodes nest children in both state scopes; validation refuses missing files, cycles, too
// deep a nesting and shared fields of another type; a kill -9 inside a child and `oe resume`
// run no finished child node again; a timeout stops the child.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace oe::experience::test {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using oe::test::ProcessResult;

class NestedRunTest : public ::testing::Test {
 protected:
  ProcessResult oe(std::vector<std::string> args) {
    args.insert(args.begin(), OE_EXE);
    return oe::test::runProcess(args, {{"OE_PLUGIN_PATH", ""}}, dir_.path());
  }
  // `oe run DIR --json`: the summary, which the test expects to exist.
  Json run(const fs::path& dir, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"run", dir.string(), "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult result = oe(args);
    Json summary = Json::parse(result.out, nullptr, false);
    EXPECT_FALSE(summary.is_discarded()) << result.out << result.err;
    return summary.is_discarded() ? Json::object() : summary;
  }
  static std::vector<Json> lines(const fs::path& file) {
    std::vector<Json> out;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      out.push_back(Json::parse(line));
    }
    return out;
  }
  static std::string slurp(const fs::path& file) {
    std::ifstream in(file);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  // The events of the parent run `run_id` in `dir`.
  static std::vector<Json> events(const fs::path& dir, const std::string& run_id) {
    return lines(dir / ".openexpertise" / "runs" / (run_id + ".jsonl"));
  }

  oe::test::TempDir dir_;
};

// A tool that writes {field: [value]} (or {field: value} with scalar: true), and, when asked,
// counts its runs in a file and waits for a file before answering.
constexpr const char* kTool = R"(import fs from 'node:fs';
export default async function tool(args) {
  if (args.count) fs.appendFileSync(args.count, 'ran\n');
  if (args.reached) fs.writeFileSync(args.reached, '');
  while (args.wait_for && !fs.existsSync(args.wait_for)) await new Promise((r) => setTimeout(r, 20));
  if (args.fail) throw new Error(args.fail);
  const value = args.scalar ? args.value : [args.value];
  return { state_delta: { [args.field]: value } };
}
)";

TEST_F(NestedRunTest, TheExampleEndsWithBothScopesInTheRightState) {
  const fs::path dir = dir_ / "nested-experience";
  fs::copy(fs::path(OE_SOURCE_DIR) / "examples" / "nested-experience", dir,
           fs::copy_options::recursive);
  const Json summary = run(dir);
  ASSERT_EQ(summary.value("status", ""), "success") << summary.dump(2);
  const Json& state = summary["final_state"];
  // shared: the child's appends landed in the parent's list, after the parent's own note.
  EXPECT_EQ(state["notes"], Json({"SQLite in WAL mode: what it is", "SQLite in WAL mode: history",
                                  "SQLite in WAL mode: trade-offs"}));
  // isolated: inputs mapped in, the summary mapped out.
  EXPECT_EQ(state["summary"], "SQLite in WAL mode: 3 notes (what it is, history, trade-offs)");

  // Each child has upstream's store under the parent's sub/ and a log of its own that names
  // its parent run and node; the parent's log shows the child's progress as node.activity.
  const std::string run_id = summary["run_id"];
  std::vector<std::string> stores;
  for (const auto& entry : fs::directory_iterator(dir / ".openexpertise" / "sub")) {
    if (entry.path().extension() == ".sqlite") {
      stores.push_back(entry.path().filename().string());
    }
  }
  ASSERT_EQ(stores.size(), 2u);
  std::map<std::string, std::string> sub_run;  // parent node -> child run id
  for (const Json& event : events(dir, run_id)) {
    if (event["type"] == "node.activity" && event.contains("sub_event_log")) {
      sub_run[event["node_id"]] = event["sub_run_id"];
      const std::vector<Json> child = lines(event["sub_event_log"].get<std::string>());
      ASSERT_GE(child.size(), 2u);
      for (const Json* edge : {&child.front(), &child.back()}) {
        EXPECT_EQ((*edge)["parent_run_id"], run_id);
        EXPECT_EQ((*edge)["parent_node_id"], event["node_id"]);
      }
      EXPECT_EQ(child.back()["type"], "run.finished");
      EXPECT_EQ(child.back()["status"], "success");
    }
  }
  ASSERT_EQ(sub_run.size(), 2u);
  for (const auto& [node, child_run] : sub_run) {
    EXPECT_TRUE(fs::exists(dir / ".openexpertise" / "sub" / (node + "-" + child_run + ".sqlite")))
        << node;
  }

  // `oe inspect --expand` shows each child's timeline under the node that ran it; without it,
  // the node says it has one. --last names the parent run, not a child's.
  ProcessResult inspect = oe({"inspect", "--last", "--experience", dir.string(), "--expand"});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("run " + run_id + ": success"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("    run " + sub_run["summarize"] + ": success"), std::string::npos)
      << inspect.out;
  EXPECT_NE(inspect.out.find("      write_summary  success"), std::string::npos) << inspect.out;
  inspect = oe({"inspect", run_id, "--experience", dir.string()});
  EXPECT_NE(inspect.out.find("1 nested run (--expand)"), std::string::npos) << inspect.out;
  inspect = oe({"inspect", run_id, "--experience", dir.string(), "--json", "--expand"});
  bool inlined = false;
  for (const Json& event : Json::parse(inspect.out)) {
    if (event.contains("sub_events")) {
      inlined = true;
      EXPECT_EQ(event["sub_events"].front()["type"], "run.started");
      EXPECT_EQ(event["sub_events"].front()["parent_run_id"], run_id);
    }
  }
  EXPECT_TRUE(inlined) << inspect.out;
}

TEST_F(NestedRunTest, AnIsolatedChildKeepsItsStateAndHandsUpstreamsEdgeOutput) {
  dir_.write("tools/tool.mjs", kTool);
  dir_.write("child/tools/tool.mjs", kTool);
  dir_.write("child/experience.yaml", R"(name: child
version: 0.1.0
state:
  schema:
    secret: { type: string }
graph:
  nodes:
    - { id: hide, kind: tool, impl: ./tools/tool.mjs, writes: [secret],
        args: { field: secret, value: hidden, scalar: true } }
  edges: []
)");
  dir_.write("experience.yaml", R"(name: parent
version: 0.1.0
state:
  schema:
    secret: { type: string }
    seen: { type: object }
graph:
  nodes:
    - { id: child, kind: experience, impl: ./child }
    - { id: look, kind: tool, impl: ./tools/look.mjs, writes: [seen] }
  edges:
    - { from: child, to: look }
)");
  dir_.write("tools/look.mjs", R"(export default async function look(args) {
  return { state_delta: { seen: args._edge_inputs.child } };
}
)");
  const Json summary = run(dir_.path());
  ASSERT_EQ(summary.value("status", ""), "success") << summary.dump(2);
  const Json& state = summary["final_state"];
  EXPECT_FALSE(state.contains("secret")) << "an isolated child wrote the parent's state";
  const Json& seen = state["seen"];
  EXPECT_EQ(seen["status"], "success");
  EXPECT_EQ(seen["finalState"], Json({{"secret", "hidden"}}));
  EXPECT_TRUE(seen["runId"].is_string());
}

TEST_F(NestedRunTest, AFailedChildDoesNotFailTheNodeButOneThatCannotStartDoes) {
  dir_.write("child/tools/tool.mjs", kTool);
  dir_.write("child/experience.yaml", R"(name: child
version: 0.1.0
state:
  schema:
    out: { type: array }
graph:
  nodes:
    - { id: boom, kind: tool, impl: ./tools/tool.mjs, writes: [out],
        args: { field: out, value: x, fail: "child tool broke" } }
  edges: []
)");
  dir_.write("broken/experience.yaml", "name: broken\nversion: 0.1.0\ngraph: {nodes: [{id: x}]}\n");
  dir_.write("experience.yaml", R"(name: parent
version: 0.1.0
state:
  schema:
    status: { type: string }
graph:
  nodes:
    - { id: child, kind: experience, impl: ./child/experience.yaml }
    - { id: look, kind: tool, impl: ./tools/look.mjs, writes: [status] }
  edges:
    - { from: child, to: look }
)");
  dir_.write("tools/look.mjs", R"(export default async function look(args) {
  return { state_delta: { status: args._edge_inputs.child.status } };
}
)");
  Json summary = run(dir_.path());
  EXPECT_EQ(summary.value("status", ""), "success") << summary.dump(2);  // upstream's rule
  // ... and the child did run, and failed: its own log ends `failed`, with its tool's error,
  // and the node hands that status on (a child that never ran would pass the line above).
  const std::string run_id = summary.value("run_id", "");
  std::vector<Json> child;
  for (const Json& event : events(dir_.path(), run_id)) {
    if (event["type"] == "node.activity" && event.contains("sub_event_log")) {
      child = lines(event["sub_event_log"].get<std::string>());
    }
  }
  ASSERT_GE(child.size(), 2u) << "no log of the child run";
  EXPECT_EQ(child.front()["type"], "run.started");
  EXPECT_EQ(child.back()["type"], "run.finished");
  EXPECT_EQ(child.back()["status"], "failed") << child.back().dump();
  size_t boom_failed = 0;
  for (const Json& event : child) {
    if (event["type"] == "node.failed" && event["node_id"] == "boom") {
      ++boom_failed;
      EXPECT_NE(event.value("error", "").find("child tool broke"), std::string::npos)
          << event.dump();
    }
  }
  EXPECT_GE(boom_failed, 1u) << "the child's tool never failed";
  EXPECT_EQ(summary["final_state"].value("status", ""), "failed") << summary.dump(2);

  // A child that does not validate fails the node, naming the file and the errors. `oe
  // validate` of the parent reports the child's errors first, so this is only seen at run time
  // when the child changed after the parent was validated: run with --only on a new parent.
  dir_.write("experience.yaml", R"(name: parent
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - { id: child, kind: experience, impl: ./broken }
  edges: []
)");
  ProcessResult validate = oe({"validate", dir_.path().string()});
  EXPECT_EQ(validate.exit_code, 1);
  EXPECT_NE(validate.err.find((dir_ / "broken" / "experience.yaml").string()), std::string::npos)
      << validate.err;
}

TEST_F(NestedRunTest, ValidateRefusesAMissingChildWithUpstreamsMessage) {
  dir_.write("experience.yaml", R"(name: parent
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - { id: child, kind: experience, impl: ./nowhere/experience.yaml }
  edges: []
)");
  ProcessResult result = oe({"validate", dir_.path().string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("Sub-experience yaml not found: " +
                            (dir_ / "nowhere" / "experience.yaml").string() +
                            " (declared as \"./nowhere/experience.yaml\")"),
            std::string::npos)
      << result.err;
}

TEST_F(NestedRunTest, ValidateNamesTheCycleOfFiles) {
  const auto nesting = [](const std::string& name, const std::string& impl) {
    return "name: " + name +
           "\nversion: 0.1.0\nstate: { schema: {} }\ngraph:\n  nodes:\n"
           "    - { id: next, kind: "
           "experience, impl: " +
           impl + " }\n  edges: []\n";
  };
  dir_.write("a/experience.yaml", nesting("a", "../b"));
  dir_.write("b/experience.yaml", nesting("b", "../a/experience.yaml"));
  ProcessResult result = oe({"validate", (dir_ / "a").string()});
  EXPECT_EQ(result.exit_code, 1);
  const std::string a = fs::canonical(dir_ / "a" / "experience.yaml").string();
  const std::string b = fs::canonical(dir_ / "b" / "experience.yaml").string();
  EXPECT_NE(result.err.find("nested experiences form a cycle: " + a + " -> " + b + " -> " + a),
            std::string::npos)
      << result.err;

  dir_.write("self/experience.yaml", nesting("self", "."));
  result = oe({"validate", (dir_ / "self").string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("an experience cannot include itself"), std::string::npos)
      << result.err;
}

TEST_F(NestedRunTest, ValidateBoundsTheNestingDepth) {
  for (int level = 0; level < 10; ++level) {
    const std::string impl = level < 9 ? "../l" + std::to_string(level + 1) : "";
    std::string yaml = "name: l" + std::to_string(level) +
                       "\nversion: 0.1.0\nstate: { schema: {} }\ngraph:\n  nodes:\n";
    yaml += level < 9 ? "    - { id: next, kind: experience, impl: " + impl + " }\n"
                      : "    - { id: leaf, kind: tool, impl: ./leaf.mjs }\n";
    yaml += "  edges: []\n";
    dir_.write("l" + std::to_string(level) + "/experience.yaml", yaml);
  }
  dir_.write("l9/leaf.mjs", "export default async () => ({ state_delta: {} });\n");
  ProcessResult result = oe({"validate", (dir_ / "l0").string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("nested experiences go deeper than 8 levels"), std::string::npos)
      << result.err;
  // Eight levels below the top are fine.
  result = oe({"validate", (dir_ / "l1").string()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
}

TEST_F(NestedRunTest, ValidateReportsASharedFieldOfAnotherType) {
  dir_.write("child/experience.yaml", R"(name: child
version: 0.1.0
state:
  schema:
    notes: { type: string }
    own: { type: number }
graph:
  nodes:
    - { id: leaf, kind: tool, impl: ./leaf.mjs, writes: [notes] }
  edges: []
)");
  dir_.write("child/leaf.mjs", "export default async () => ({ state_delta: {} });\n");
  dir_.write("experience.yaml", R"(name: parent
version: 0.1.0
state:
  schema:
    notes: { type: array, merge: array_append }
graph:
  nodes:
    - { id: child, kind: experience, impl: ./child, state_scope: shared }
  edges: []
)");
  ProcessResult result = oe({"validate", dir_.path().string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("state_scope shared: field \"notes\" is string in"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("but array here"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("\"own\""), std::string::npos) << "a child-only field is fine";
}

// kill -9 while the child's second node runs; `oe resume` of the parent must not run the
// child's first node again, and must end in the state an uninterrupted run ends in.
class NestedResumeTest : public NestedRunTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(NestedResumeTest, KillInsideTheChildThenResumeRunsNoFinishedChildNodeAgain) {
  const std::string scope = GetParam();
  const fs::path count = dir_ / "first.count";
  const fs::path reached = dir_ / "reached";
  const fs::path release = dir_ / "release";
  dir_.write("child/tools/tool.mjs", kTool);
  dir_.write("child/experience.yaml", R"(name: child
version: 0.1.0
state:
  schema:
    notes: { type: array, merge: array_append }
graph:
  nodes:
    - id: first
      kind: tool
      impl: ./tools/tool.mjs
      writes: [notes]
      args: { field: notes, value: first, count: )" +
                                          count.string() + R"( }
    - id: second
      kind: tool
      impl: ./tools/tool.mjs
      writes: [notes]
      args: { field: notes, value: second, reached: )" +
                                          reached.string() + R"(,
              wait_for: )" + release.string() +
                                          R"( }
  edges:
    - { from: first, to: second }
)");
  dir_.write("experience.yaml", R"(name: parent
version: 0.1.0
state:
  schema:
    notes: { type: array, merge: array_append }
graph:
  nodes:
    - id: child
      kind: experience
      impl: ./child
      state_scope: )" + scope + R"(
      outputs: { notes: $.notes }
      writes: [notes]
  edges: []
)");
  {
    oe::test::BackgroundProcess killed({OE_EXE, "run", dir_.path().string()},
                                       {{"OE_PLUGIN_PATH", ""}}, dir_.path(), dir_ / "killed");
    ASSERT_TRUE(oe::test::waitForFile(reached)) << killed.err();
    killed.signal(SIGKILL);
    EXPECT_EQ(killed.wait(), 128 + SIGKILL);
  }
  dir_.write("release", "");
  ProcessResult resumed = oe({"resume", "--last", "--experience", dir_.path().string(), "--json"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  const Json summary = Json::parse(resumed.out);
  EXPECT_EQ(slurp(count), "ran\n") << "the child's finished node ran again";
  // shared: the child's two appends landed once each in the parent's list (the outputs mapping
  // then appends the child's whole list, which is the parent's here); isolated: only the
  // mapping writes the parent's field.
  const Json expected =
      scope == "shared" ? Json({"first", "second", "first", "second"}) : Json({"first", "second"});
  EXPECT_EQ(summary["final_state"]["notes"], expected) << summary.dump(2);
}

INSTANTIATE_TEST_SUITE_P(Scopes, NestedResumeTest, ::testing::Values("isolated", "shared"));

TEST_F(NestedRunTest, ATimeoutStopsTheChildRun) {
  dir_.write("child/tools/tool.mjs", kTool);
  dir_.write("child/experience.yaml", R"(name: child
version: 0.1.0
state:
  schema:
    notes: { type: array }
graph:
  nodes:
    - { id: hang, kind: tool, impl: ./tools/tool.mjs, writes: [notes],
        args: { field: notes, value: x, wait_for: /nonexistent/never } }
  edges: []
)");
  dir_.write("experience.yaml", R"(name: parent
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - { id: child, kind: experience, impl: ./child, timeout_ms: 1000 }
  edges: []
)");
  const Json summary = run(dir_.path());
  EXPECT_EQ(summary.value("status", ""), "failed") << summary.dump(2);
  ASSERT_FALSE(summary["failures"].empty());
  EXPECT_NE(summary["failures"][0]["error"].get<std::string>().find("timed out after 1000 ms"),
            std::string::npos);
  // The child's own log ends: stopped because its parent node was cancelled.
  std::string child_log;
  for (const Json& event : events(dir_.path(), summary["run_id"])) {
    if (event.contains("sub_event_log")) {
      child_log = event["sub_event_log"];
    }
  }
  ASSERT_FALSE(child_log.empty());
  const std::vector<Json> child = lines(child_log);
  ASSERT_FALSE(child.empty());
  EXPECT_EQ(child.back()["type"], "run.finished");
  EXPECT_NE(child.back().value("reason", "").find("its parent node \"child\" was cancelled"),
            std::string::npos)
      << child.back().dump();
}

// The experience node runs on a pool thread next to another node, so every write of the shared
// child crosses to the parent's coordinator (Run::onCoordinator) while that node also writes.
TEST_F(NestedRunTest, ASharedChildBesideAParallelNodeWritesThroughTheCoordinator) {
  dir_.write("tools/tool.mjs", kTool);
  dir_.write("child/tools/tool.mjs", kTool);
  std::string child = R"(name: child
version: 0.1.0
state:
  schema:
    notes: { type: array, merge: array_append }
graph:
  nodes:
)";
  std::string parent = R"(name: parent
version: 0.1.0
runtime: { concurrency: 2 }
state:
  schema:
    notes: { type: array, merge: array_append }
    other: { type: array, merge: array_append }
graph:
  nodes:
    - { id: child, kind: experience, impl: ./child, state_scope: shared }
)";
  for (int i = 0; i < 20; ++i) {
    const std::string n = std::to_string(i);
    child += "    - { id: c" + n +
             ", kind: tool, impl: ./tools/tool.mjs, writes: [notes], args: "
             "{ field: notes, value: c" +
             n + " } }\n";
    parent += "    - { id: p" + n +
              ", kind: tool, impl: ./tools/tool.mjs, writes: [other], args: "
              "{ field: other, value: p" +
              n + " } }\n";
  }
  dir_.write("child/experience.yaml", child + "  edges: []\n");
  dir_.write("experience.yaml", parent + "  edges: []\n");
  const Json summary = run(dir_.path());
  ASSERT_EQ(summary.value("status", ""), "success") << summary.dump(2);
  EXPECT_EQ(summary["final_state"]["notes"].size(), 20u);
  EXPECT_EQ(summary["final_state"]["other"].size(), 20u);
}

TEST_F(NestedRunTest, AForEachRunsOneChildPerItem) {
  dir_.write("child/tools/tool.mjs", kTool);
  dir_.write("child/experience.yaml", R"(name: child
version: 0.1.0
state:
  schema:
    words: { type: array }
graph:
  nodes:
    - { id: echo, kind: tool, impl: ./tools/echo.mjs, writes: [words] }
  edges: []
)");
  dir_.write("child/tools/echo.mjs", R"(export default async function echo(args) {
  return { state_delta: { words: [`${args.$item}!`] } };
}
)");
  dir_.write("experience.yaml", R"(name: parent
version: 0.1.0
runtime: { deterministic: true }
state:
  schema:
    items: { type: array }
    words: { type: array, merge: array_append }
graph:
  nodes:
    - { id: seed, kind: tool, impl: ./seed.mjs, writes: [items] }
    - id: each
      kind: experience
      impl: ./child
      for_each: { source: $.items, concurrency: 2 }
      outputs: { words: $.words }
      writes: [words]
  edges:
    - { from: seed, to: each }
)");
  dir_.write("seed.mjs",
             "export default async () => ({ state_delta: { items: ['a', 'b', 'c'] } });\n");
  const Json summary = run(dir_.path());
  ASSERT_EQ(summary.value("status", ""), "success") << summary.dump(2);
  EXPECT_EQ(summary["final_state"]["words"], Json({"a!", "b!", "c!"}));
}

}  // namespace
}  // namespace oe::experience::test

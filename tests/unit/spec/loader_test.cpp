// Loading experience.yaml: file lookup, YAML errors with positions, scalar typing, the
// structural schema (all errors at once, each at its line and column) and the typed model.
#include "oe/spec/loader.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "unit/spec/spec_test_support.hpp"

namespace oe::spec {
namespace {

using testing::dump;
using testing::load;
using testing::loadOk;
using testing::matching;
using testing::TempDir;

constexpr const char* kMinimal = R"(name: minimal
version: 0.1.0
state:
  schema: {}
graph:
  nodes:
    - id: a
      kind: tool
      impl: ./a.mjs
  edges: []
)";

TEST(ResolveExperiencePath, YamlFilesAsGivenElseTheFolder) {
  EXPECT_EQ(resolveExperiencePath("x/flow.yaml"), std::filesystem::path("x/flow.yaml"));
  EXPECT_EQ(resolveExperiencePath("x/flow.yml"), std::filesystem::path("x/flow.yml"));
  EXPECT_EQ(resolveExperiencePath("x/dir"), std::filesystem::path("x/dir/experience.yaml"));
  EXPECT_EQ(resolveExperiencePath("x/flow.json"),
            std::filesystem::path("x/flow.json/experience.yaml"));
}

TEST(LoadExperience, ReadsAFileAndSetsPaths) {
  TempDir dir;
  auto path = dir.write("exp/experience.yaml", kMinimal);
  LoadResult r = loadExperience(path);
  ASSERT_TRUE(r.experience) << dump(r.diagnostics);
  EXPECT_TRUE(r.diagnostics.empty());
  EXPECT_EQ(r.experience->name, "minimal");
  EXPECT_EQ(r.experience->file, path);
  EXPECT_EQ(r.experience->dir, dir.path() / "exp");
  EXPECT_EQ(r.experience->source_name, path.string());
}

TEST(LoadExperience, MissingFile) {
  TempDir dir;
  for (const auto& p : {dir.path() / "nope.yaml", dir.path()}) {
    LoadResult r = loadExperience(p);
    EXPECT_FALSE(r.experience);
    ASSERT_EQ(r.diagnostics.size(), 1u);
    EXPECT_EQ(r.diagnostics[0].message,
              "experience.yaml not found at " + p.string() +
                  ". Pass a directory containing experience.yaml or the yaml file directly.");
  }
}

TEST(LoadExperience, YamlParseErrorHasLineAndColumn) {
  TempDir dir;
  auto path =
      dir.write("experience.yaml", "name: x\nversion: 0.1.0\nstate: {schema: {}\ngraph: 1\n");
  LoadResult r = loadExperience(path);
  EXPECT_FALSE(r.experience);
  ASSERT_EQ(r.diagnostics.size(), 1u) << dump(r.diagnostics);
  const Diagnostic& d = r.diagnostics[0];
  EXPECT_EQ(d.file, path.string());
  EXPECT_EQ(d.line, 4);
  EXPECT_GT(d.column, 0);
  EXPECT_EQ(
      d.message.rfind("YAML parse error: ", 0), 0u)
      << d.message;
  // The position is the diagnostic's: the message does not say it a second time.
  EXPECT_EQ(d.format().find("line 4"), std::string::npos) << d.format();
}

TEST(LoadExperience, BadIndentationPointsAtTheLine) {
  LoadResult r = load("name: x\nversion: 0.1.0\n  state: 3\n");
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].line, 3);
  EXPECT_EQ(r.diagnostics[0].column, 8);
  EXPECT_EQ(r.diagnostics[0].message.rfind("YAML parse error: ", 0), 0u)
      << r.diagnostics[0].message;
}

TEST(LoadExperience, DuplicateKeysAreAParseError) {
  LoadResult r = load("name: a\nname: b\n");
  ASSERT_FALSE(r.experience);
  auto dups = matching(r.diagnostics, "Map keys must be unique");
  ASSERT_EQ(dups.size(), 1u) << dump(r.diagnostics);
  EXPECT_EQ(dups[0].line, 2);
  EXPECT_EQ(dups[0].column, 1);
}

TEST(LoadExperience, DuplicateKeysAndStructureReportedTogether) {
  LoadResult r = load("name: a\nname: b\nversion: 1\n");
  EXPECT_FALSE(r.experience);
  EXPECT_EQ(matching(r.diagnostics, "Map keys must be unique").size(), 1u) << dump(r.diagnostics);
  EXPECT_EQ(matching(r.diagnostics, "must be a string, got 1").size(), 1u) << dump(r.diagnostics);
  EXPECT_EQ(matching(r.diagnostics, "missing required key \"state\"").size(), 1u);
}

TEST(LoadExperience, InvalidUtf8BecomesReplacementCharacters) {
  std::string yaml = kMinimal;
  yaml.replace(yaml.find("minimal"), 7, "mi\xff\xc3nimal");
  Experience exp = loadOk(yaml);
  EXPECT_EQ(exp.name, "mi\xEF\xBF\xBD\xEF\xBF\xBDnimal");
  EXPECT_NO_THROW((void)exp.raw.dump());
}

TEST(LoadExperience, TopLevelMustBeAMapping) {
  for (const char* text : {"just a string\n", "", "- a\n- b\n", "~\n"}) {
    LoadResult r = load(text);
    EXPECT_FALSE(r.experience);
    ASSERT_EQ(r.diagnostics.size(), 1u) << text;
    EXPECT_EQ(r.diagnostics[0].message, "experience.yaml must be a YAML mapping at the top level");
  }
}

TEST(LoadExperience, MinimalIsAccepted) {
  Experience exp = loadOk(kMinimal);
  EXPECT_EQ(exp.version, "0.1.0");
  ASSERT_EQ(exp.nodes.size(), 1u);
  EXPECT_EQ(exp.nodes[0].id, "a");
  EXPECT_EQ(exp.nodes[0].kind, "tool");
  EXPECT_EQ(exp.nodes[0].raw["impl"], "./a.mjs");
  EXPECT_EQ(exp.findNode("a"), &exp.nodes[0]);
  EXPECT_EQ(exp.findNode("b"), nullptr);
}

TEST(LoadExperience, ScalarsAreTypedLikeYaml12) {
  Experience exp = loadOk(R"(name: t
version: 0.1.0
state:
  schema: {}
graph:
  nodes:
    - id: a
      kind: tool
      args:
        int: 3
        neg: -7
        float: 1.5
        exp: 1e3
        str_version: 0.1.0
        quoted_int: "1"
        single: '2'
        yes: true
        no_: False
        nul: null
        tilde: ~
        empty:
        word: yes
        hex: 0x1F
        big: 123456789012345678901234
        block: |
          line one
          line two
        date: 2024-01-01
  edges: []
)");
  const Json& a = exp.nodes[0].args;
  EXPECT_TRUE(a["int"].is_number_integer());
  EXPECT_EQ(a["int"], 3);
  EXPECT_EQ(a["neg"], -7);
  EXPECT_TRUE(a["float"].is_number_float());
  EXPECT_EQ(a["float"], 1.5);
  EXPECT_EQ(a["exp"], 1000.0);
  EXPECT_EQ(a["str_version"], "0.1.0");
  EXPECT_EQ(a["quoted_int"], "1");
  EXPECT_EQ(a["single"], "2");
  EXPECT_EQ(a["yes"], true);
  EXPECT_EQ(a["no_"], false);
  EXPECT_TRUE(a["nul"].is_null());
  EXPECT_TRUE(a["tilde"].is_null());
  EXPECT_TRUE(a["empty"].is_null());
  EXPECT_EQ(a["word"], "yes");  // YAML 1.2: `yes` is a string
  EXPECT_EQ(a["hex"], 31);
  EXPECT_TRUE(a["big"].is_number_float());
  EXPECT_EQ(a["block"], "line one\nline two\n");
  EXPECT_EQ(a["date"], "2024-01-01");
}

TEST(LoadExperience, AnchorsAndAliases) {
  Experience exp = loadOk(R"(name: t
version: 0.1.0
state:
  schema: {}
graph:
  nodes:
    - id: a
      kind: tool
      args: &common {x: 1, y: [1, 2]}
    - id: b
      kind: tool
      args: *common
  edges: []
)");
  EXPECT_EQ(exp.nodes[1].args, exp.nodes[0].args);
  EXPECT_EQ(exp.nodes[1].args["y"], Json({1, 2}));
}

TEST(LoadExperience, VersionMustBeSemverString) {
  for (const char* v : {"1", "0.1", "\"1.0\"", "v1.0.0"}) {
    LoadResult r = load(std::string("name: x\nversion: ") + v +
                        "\nstate: {schema: {}}\ngraph: {nodes: [{id: a, kind: t}], edges: []}\n");
    EXPECT_FALSE(r.experience) << v;
    auto d = matching(r.diagnostics, "must");
    ASSERT_EQ(d.size(), 1u) << v << "\n" << dump(r.diagnostics);
    EXPECT_EQ(d[0].field, "version");
    EXPECT_EQ(d[0].line, 2);
  }
}

TEST(LoadExperience, MissingNameIsReported) {
  LoadResult r = load(
      "version: 0.1.0\nstate: {schema: {}}\ngraph: {nodes: [{id: a, kind: t}], "
      "edges: []}\n");
  EXPECT_FALSE(r.experience);
  ASSERT_EQ(r.diagnostics.size(), 1u) << dump(r.diagnostics);
  EXPECT_EQ(r.diagnostics[0].message, "missing required key \"name\"");
  EXPECT_EQ(r.diagnostics[0].severity, Severity::kError);
}

TEST(LoadExperience, SeveralStructuralErrorsAllAtOnceWithPositions) {
  LoadResult r = load(R"(name: ""
version: 0.1.0
state:
  schema:
    count: {type: integer}
    ok: {type: number, merge: sum}
grpah: {}
graph:
  nodes:
    - id: my-node
      kind: tool
      timeout_ms: 0
      reads: [1]
      on_error: {policy: retry, attempts: 50}
    - kind: tool
  edges:
    - {from: a}
runtime:
  concurrency: 0
  deterministic: "yes"
)");
  EXPECT_FALSE(r.experience);
  const auto& ds = r.diagnostics;
  auto expect = [&](const std::string& text, int line, int column, const std::string& node,
                    const std::string& field) {
    std::vector<Diagnostic> found;
    for (const auto& d : matching(ds, text)) {
      if (d.field == field) {
        found.push_back(d);
      }
    }
    ASSERT_EQ(found.size(), 1u) << text << "\n" << dump(ds);
    EXPECT_EQ(found[0].line, line) << text;
    EXPECT_EQ(found[0].column, column) << text;
    EXPECT_EQ(found[0].node_id, node) << text;
    EXPECT_EQ(found[0].field, field) << text;
    EXPECT_EQ(found[0].severity, Severity::kError) << text;
  };
  expect("must not be empty", 1, 8, "", "name");
  expect("must be one of: string, number, boolean, object, array, null; got \"integer\"", 5, 19, "",
         "state.schema.count.type");
  expect("must be one of: array_append, set_once, last_wins; got \"sum\"", 6, 31, "",
         "state.schema.ok.merge");
  expect("unknown key \"grpah\"; did you mean \"graph\"?", 7, 1, "", "grpah");
  expect("must match the pattern", 10, 11, "my-node", "id");
  expect("must be at least 1, got 0", 12, 19, "my-node", "timeout_ms");
  expect("must be a string, got 1", 13, 15, "my-node", "reads[0]");
  expect("must be an integer from 1 to 20, got 50", 14, 43, "my-node", "on_error.attempts");
  expect("missing required key \"id\"", 15, 7, "", "graph.nodes[1]");
  expect("missing required key \"to\"", 17, 7, "", "graph.edges[0]");
  expect("must be at least 1, got 0", 19, 16, "", "runtime.concurrency");
  expect("must be true or false, got \"yes\"", 20, 19, "", "runtime.deterministic");
  EXPECT_EQ(ds.size(), 12u) << dump(ds);
  // File order.
  for (size_t i = 1; i < ds.size(); ++i) {
    EXPECT_LE(ds[i - 1].line, ds[i].line);
  }
}

TEST(LoadExperience, OnErrorGetsOneClearMessage) {
  auto onError = [](const std::string& value) {
    return load(
               "name: x\nversion: 0.1.0\nstate: {schema: {}}\ngraph:\n  nodes:\n    - id: a\n"
               "      kind: t\n      on_error: " +
               value + "\n  edges: []\n")
        .diagnostics;
  };
  EXPECT_TRUE(onError("{policy: skip}").empty());
  EXPECT_TRUE(onError("{policy: fail_run}").empty());
  EXPECT_TRUE(onError("{policy: retry, attempts: 3, backoff: exponential, base_ms: 0}").empty());
  auto d = onError("{policy: explode}");
  ASSERT_EQ(d.size(), 1u) << dump(d);
  EXPECT_EQ(d[0].message, "must be one of: skip, fail_run, retry; got \"explode\"");
  EXPECT_EQ(d[0].field, "on_error.policy");
  EXPECT_EQ(d[0].node_id, "a");
  d = onError("{policy: retry}");
  ASSERT_EQ(d.size(), 1u) << dump(d);
  EXPECT_EQ(d[0].message, "policy retry needs \"attempts\" (an integer from 1 to 20)");
  d = onError("{attempts: 2}");
  ASSERT_EQ(d.size(), 1u) << dump(d);
  EXPECT_NE(d[0].message.find("missing required key \"policy\"; use {policy: skip}"),
            std::string::npos);
  d = onError("{policy: retry, attempts: 2, backoff: cubic, base_ms: -1}");
  ASSERT_EQ(d.size(), 2u) << dump(d);
  EXPECT_EQ(d[0].message, "must be one of: linear, exponential; got \"cubic\"");
  EXPECT_EQ(d[1].message, "must be an integer >= 0, got -1");
  d = onError("retry");
  ASSERT_EQ(d.size(), 1u) << dump(d);
  EXPECT_NE(d[0].message.find("must be a mapping"), std::string::npos);
}

TEST(LoadExperience, FillsTheTypedModel) {
  Experience exp = loadOk(R"(name: full
description: all the parts
version: 1.2.3
state:
  store: ./data/state.sqlite
  schema:
    zeta: {type: array, merge: array_append}
    alpha: {type: string, merge: set_once}
    ref_only: {$ref: "#/x"}
phases:
  - {id: p1, title: First}
graph:
  nodes:
    - id: a
      kind: tool
      phase: p1
      reads: [alpha]
      writes: [zeta]
      on_error: {policy: retry, attempts: 3, backoff: exponential}
      for_each: {source: $.zeta, concurrency: 4}
      timeout_ms: 1500
      args: {x: $.alpha}
    - id: b
      kind: tool
      on_error: {policy: fail_run}
  edges:
    - {from: a, to: b, when: "$.alpha == 'x'"}
  pipelines:
    - {id: p, items: $.zeta, stages: [a, b], phase: p1}
  loops:
    - {id: l, body: b, until: '$.alpha != null', max_iters: 5, budget: 10}
runtime: {concurrency: 4, deterministic: true}
)");
  EXPECT_EQ(exp.description, "all the parts");
  EXPECT_EQ(exp.state.store, "./data/state.sqlite");
  ASSERT_EQ(exp.state.fields.size(), 3u);
  EXPECT_EQ(exp.state.fields[0].name, "zeta");  // declaration order, not sorted
  EXPECT_EQ(exp.state.fields[0].type, FieldType::kArray);
  EXPECT_EQ(exp.state.fields[0].merge, MergeStrategy::kArrayAppend);
  EXPECT_EQ(exp.state.fields[0].mark.line, 7);
  EXPECT_EQ(exp.state.fields[1].merge, MergeStrategy::kSetOnce);
  EXPECT_EQ(exp.state.fields[2].type, FieldType::kAny);
  EXPECT_EQ(exp.state.find("alpha")->type, FieldType::kString);
  ASSERT_EQ(exp.phases.size(), 1u);
  EXPECT_EQ(exp.phases[0].title, "First");
  const NodeSpec& a = exp.nodes[0];
  EXPECT_EQ(a.phase, "p1");
  EXPECT_EQ(a.reads, std::vector<std::string>{"alpha"});
  EXPECT_EQ(a.on_error.policy, ErrorPolicy::kRetry);
  EXPECT_EQ(a.on_error.attempts, 3);
  EXPECT_EQ(a.on_error.backoff, Backoff::kExponential);
  EXPECT_EQ(a.on_error.base_ms, 100);
  ASSERT_TRUE(a.for_each);
  EXPECT_EQ(a.for_each->source, "$.zeta");
  EXPECT_EQ(a.for_each->concurrency, 4);
  EXPECT_EQ(a.for_each->mark.line, 20);
  EXPECT_EQ(a.timeout_ms, 1500);
  EXPECT_EQ(a.args, (Json{{"x", "$.alpha"}}));
  EXPECT_EQ(a.mark.line, 14);
  EXPECT_EQ(a.mark.column, 7);
  EXPECT_EQ(exp.nodes[1].on_error.policy, ErrorPolicy::kFailRun);
  EXPECT_EQ(exp.nodes[1].on_error.attempts, 1);
  EXPECT_FALSE(exp.nodes[1].timeout_ms);
  ASSERT_EQ(exp.edges.size(), 1u);
  EXPECT_EQ(exp.edges[0].when, "$.alpha == 'x'");
  EXPECT_EQ(exp.edges[0].mark.line, 27);
  // The when mark is the expression's first character, inside the quotes.
  EXPECT_EQ(exp.edges[0].when_mark.line, 27);
  EXPECT_EQ(exp.edges[0].when_mark.column, 31);
  ASSERT_EQ(exp.pipelines.size(), 1u);
  EXPECT_EQ(exp.pipelines[0].stages, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(exp.pipelines[0].items, "$.zeta");
  ASSERT_EQ(exp.loops.size(), 1u);
  EXPECT_EQ(exp.loops[0].until, "$.alpha != null");
  EXPECT_EQ(exp.loops[0].max_iters, 5);
  EXPECT_EQ(exp.loops[0].budget, 10);
  EXPECT_EQ(exp.loops[0].until_mark.column, 32);
  EXPECT_EQ(exp.runtime.concurrency, 4);
  EXPECT_TRUE(exp.runtime.deterministic);
}

TEST(LoadExperience, ANodeNamesTheWorkQueueItsAttemptsGoTo) {
  Experience exp = loadOk(R"(name: q
version: 0.1.0
state: {schema: {}}
graph:
  nodes:
    - {id: a, kind: tool, queue: gpu-large}
    - {id: b, kind: tool}
  edges: []
)");
  EXPECT_EQ(exp.nodes[0].queue, "gpu-large");
  EXPECT_FALSE(exp.nodes[1].queue);  // the "default" queue

  LoadResult bad = load(R"(name: q
version: 0.1.0
state: {schema: {}}
graph:
  nodes:
    - {id: a, kind: tool, queue: "gpu large"}
  edges: []
)");
  EXPECT_FALSE(bad.experience);
  ASSERT_EQ(bad.diagnostics.size(), 1u) << dump(bad.diagnostics);
  EXPECT_EQ(bad.diagnostics[0].node_id, "a");
  EXPECT_EQ(bad.diagnostics[0].field, "queue");
  EXPECT_NE(bad.diagnostics[0].message.find("must match the pattern"), std::string::npos)
      << bad.diagnostics[0].message;
}

// `plugins: { override: [...] }` (docs/trust.md): the names reach the model, from a snapshot's
// raw document as from the YAML; anything but a list of distinct names is refused at its line.
TEST(LoadExperience, PluginOverridesAreAListOfDistinctNames) {
  Experience exp = loadOk(R"(name: p
version: 0.1.0
plugins: {override: [tool, anthropic]}
state: {schema: {}}
graph: {nodes: [{id: a, kind: tool}], edges: []}
)");
  EXPECT_EQ(exp.plugin_overrides, (std::vector<std::string>{"tool", "anthropic"}));
  EXPECT_TRUE(loadOk(kMinimal).plugin_overrides.empty());

  for (const char* bad : {"plugins: {override: tool}\n", "plugins: {override: [tool, tool]}\n",
                          "plugins: {override: [\"\"]}\n", "plugins: {overide: [tool]}\n",
                          "plugins: [tool]\n"}) {
    LoadResult r = load(std::string("name: p\nversion: 0.1.0\n") + bad +
                        "state: {schema: {}}\ngraph: {nodes: [{id: a, kind: tool}], edges: []}\n");
    EXPECT_FALSE(r.experience) << bad;
    ASSERT_FALSE(r.diagnostics.empty()) << bad;
    EXPECT_EQ(r.diagnostics[0].line, 3) << bad << dump(r.diagnostics);
  }
}

TEST(LoadExperience, ANodesCacheSettings) {
  Experience exp = loadOk(R"(name: c
version: 0.1.0
state: {schema: {}}
graph:
  nodes:
    - {id: off, kind: tool, cache: false}
    - {id: inputs, kind: tool, cache: {inputs: ["data/*.csv", conf/app.toml]}}
    - {id: plain, kind: tool}
  edges: []
)");
  EXPECT_FALSE(exp.nodes[0].cache.enabled);
  EXPECT_TRUE(exp.nodes[1].cache.enabled);
  EXPECT_EQ(exp.nodes[1].cache.inputs, (std::vector<std::string>{"data/*.csv", "conf/app.toml"}));
  EXPECT_TRUE(exp.nodes[2].cache.enabled);
  EXPECT_TRUE(exp.nodes[2].cache.inputs.empty());
  // Globs are not files the definition names (they are hashed as data, per call).
  EXPECT_TRUE(pathCandidates(Json::parse(R"({"cache": {"inputs": ["a.txt"]}})")).empty());

  LoadResult bad = load(R"(name: c
version: 0.1.0
state: {schema: {}}
graph:
  nodes:
    - {id: a, kind: tool, cache: "no"}
    - {id: b, kind: tool, cache: {inputs: "data/*.csv"}}
  edges: []
)");
  EXPECT_FALSE(bad.experience);
  ASSERT_EQ(bad.diagnostics.size(), 2u) << dump(bad.diagnostics);
  EXPECT_EQ(bad.diagnostics[0].node_id, "a");
  EXPECT_EQ(bad.diagnostics[0].field, "cache");
  EXPECT_EQ(bad.diagnostics[0].line, 6);
  EXPECT_EQ(bad.diagnostics[1].node_id, "b");
  EXPECT_EQ(bad.diagnostics[1].field, "cache.inputs");
  EXPECT_EQ(bad.diagnostics[1].line, 7);
}

TEST(LoadExperience, MarksByJsonPointer) {
  Experience exp = loadOk(kMinimal);
  EXPECT_EQ(exp.markOf("/graph/nodes/0/impl").line, 9);
  EXPECT_EQ(exp.markOf("/graph/nodes/0/impl").column, 13);
  EXPECT_EQ(exp.keyMarkOf("/graph/nodes/0/impl").column, 7);
  EXPECT_EQ(exp.markOf("/graph/nodes/0/absent").line, 7);  // falls back to the node
  EXPECT_EQ(exp.markOf("/name").line, 1);
  EXPECT_EQ(exp.markOf("/name").column, 7);
}

TEST(LoadExperience, MarksOfBlockScalarsAndComplexKeys) {
  Experience exp = loadOk(R"(name: t
version: 0.1.0
state: {schema: {}}
graph:
  nodes:
    - id: a
      kind: tool
      args:
        text: |
            hello
        ? [x, y]
        : pair
  edges: []
)");
  Mark text = exp.markOf("/graph/nodes/0/args/text");
  EXPECT_EQ(text.line, 10);
  EXPECT_EQ(text.column, 13);
  EXPECT_EQ(exp.nodes[0].args["[\"x\",\"y\"]"], "pair");
}

// Found by the spec_loader fuzzer: a collection used as a key pointed at its parent's parse
// frame, which growing the parse stack moved (a heap-use-after-free under the asan preset).
TEST(LoadExperience, ComplexKeyNestedDeeperThanAnythingBefore) {
  Experience exp = loadOk(R"(name: x
version: 0.1.0
state: {schema: {}}
graph:
  nodes:
    - id: a
      kind: tool
      impl: ./a.mjs
      args:
        ? [a, [b, [c, [d, [e]]]], f]
        : v
  edges: []
)");
  EXPECT_EQ(exp.nodes[0].args["[\"a\",[\"b\",[\"c\",[\"d\",[\"e\"]]]],\"f\"]"], "v");
  EXPECT_FALSE(load("? [a]\n: v\n").diagnostics.empty());
}

// Hostile documents (issue 10, item 3): each bound ends in one diagnostic at the line that
// crossed it, never in std::bad_alloc or a stack overflow.
std::string aliasBomb(int levels) {
  std::string text = "name: bomb\nversion: 0.1.0\nstate: {schema: {}}\n";
  text += "l0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= levels; ++i) {
    text += "l" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 9; ++k) {
      text += (k == 0 ? "*a" : ", *a") + std::to_string(i - 1);
    }
    text += "]\n";
  }
  return text + "graph: {nodes: [], edges: []}\n";
}

TEST(LoadLimits, AliasBombIsRefusedAtItsLine) {
  // 9^9 (387 million) values if expanded; refused after about a million, by either bound: the
  // copies' bytes (about 6 a value here) pass 4 MiB first.
  LoadResult r = load(aliasBomb(8));
  EXPECT_FALSE(r.experience);
  ASSERT_EQ(r.diagnostics.size(), 1u) << dump(r.diagnostics);
  const Diagnostic& d = r.diagnostics[0];
  EXPECT_EQ(d.message.rfind("alias expansion exceeds 4.0 MiB", 0), 0u) << d.message;
  // l5 (line 9) is the first level whose copies pass either bound.
  EXPECT_EQ(d.line, 9);
  EXPECT_GT(d.column, 0);
  EXPECT_EQ(d.file, "/tmp/oe-test/experience.yaml");
  // The values alone are bounded too.
  LoadLimits values_only;
  values_only.max_alias_bytes = std::numeric_limits<size_t>::max();
  r = loadExperienceText(aliasBomb(8), "e.yaml", values_only);
  ASSERT_EQ(r.diagnostics.size(), 1u) << dump(r.diagnostics);
  EXPECT_EQ(r.diagnostics[0].message.rfind(
                "alias expansion exceeds 1000000 nodes (a \"billion laughs\"", 0),
            0u)
      << r.diagnostics[0].message;
  EXPECT_EQ(r.diagnostics[0].line, 9);
}

TEST(LoadLimits, AliasBoundIsConfigurableAndSmallAliasesPass) {
  // Three levels: 9 + 81 + 729 copies, and the anchors' own copies: under a million.
  LoadResult ok = load(aliasBomb(3));
  EXPECT_EQ(matching(ok.diagnostics, "alias expansion").size(), 0u) << dump(ok.diagnostics);
  LoadLimits tight;
  tight.max_alias_nodes = 500;
  LoadResult r = loadExperienceText(aliasBomb(3), "e.yaml", tight);
  ASSERT_EQ(r.diagnostics.size(), 1u) << dump(r.diagnostics);
  EXPECT_NE(r.diagnostics[0].message.find("exceeds 500 nodes"), std::string::npos);
}

TEST(LoadLimits, ALongStringAliasedManyTimesIsBoundedByBytes) {
  std::string text = "name: x\nversion: 0.1.0\nstate: {schema: {}}\ns: &s " +
                     std::string(100000, 'x') + "\nl: [";
  for (int k = 0; k < 1000; ++k) {
    text += k == 0 ? "*s" : ", *s";  // 100 MB of copies from 100 KB
  }
  text += "]\n";
  LoadResult r = loadExperienceText(text, "e.yaml");
  ASSERT_EQ(r.diagnostics.size(), 1u) << dump(r.diagnostics);
  EXPECT_EQ(r.diagnostics[0].message.rfind("alias expansion exceeds 4.0 MiB", 0), 0u)
      << r.diagnostics[0].message;
  EXPECT_EQ(r.diagnostics[0].line, 5);
}

// Short strings aliased under the node bound: 813 bytes of YAML (the fuzz corpus's
// hostile-alias-short-strings.yaml, 531,441 copies of a 32-byte string among 750,000 values)
// used to load, into a 21 MB spec snapshot and a run of 340 MB. The copies are bounded
// in bytes as JSON too, and the diagnostic is where the bound was passed.
TEST(LoadLimits, ShortStringsAliasedUnderTheNodeBoundAreBoundedByTheirJsonBytes) {
  const auto file = std::filesystem::path(OE_SOURCE_DIR) /
                    "tests/fuzz/corpus/spec_loader/hostile-alias-short-strings.yaml";
  LoadResult r = loadExperience(file);
  EXPECT_FALSE(r.experience);
  ASSERT_EQ(r.diagnostics.size(), 1u) << dump(r.diagnostics);
  const Diagnostic& d = r.diagnostics[0];
  EXPECT_EQ(d.message.rfind("alias expansion exceeds 4.0 MiB (the values anchors and aliases "
                            "copy, counted as JSON",
                            0),
            0u)
      << d.message;
  EXPECT_EQ(d.file, file.string());
  EXPECT_EQ(d.line, 17);  // a4: its anchor's copy passes the bound
  EXPECT_EQ(d.column, 13);
  // The node bound alone lets it through: the bytes are what refuse it.
  LoadLimits nodes_only;
  nodes_only.max_alias_bytes = std::numeric_limits<size_t>::max();
  LoadResult loaded = loadExperience(file, nodes_only);
  EXPECT_TRUE(loaded.experience) << dump(loaded.diagnostics);
  // A small alias still loads under the default bounds.
  LoadResult small = load("name: x\nversion: 0.1.0\nstate: {schema: {}}\na: &a [" +
                          std::string(1000, 'x') + "]\nb: [*a, *a, *a, *a, *a, *a, *a, *a]\n");
  EXPECT_EQ(matching(small.diagnostics, "alias expansion").size(), 0u) << dump(small.diagnostics);
}

TEST(LoadLimits, DeepFlowNestingIsRefusedBeforeYamlCppRecurses) {
  // 100,000 levels would overflow yaml-cpp's recursive parser (or hit its own 2000 guard).
  for (const char* open : {"[", "{a: "}) {
    std::string text = "name: x\nversion: 0.1.0\nstate: ";
    for (int i = 0; i < 100000; ++i) {
      text += open;
    }
    LoadResult r = load(text);
    ASSERT_EQ(r.diagnostics.size(), 1u) << dump(r.diagnostics);
    EXPECT_NE(r.diagnostics[0].message.find("more than 128 levels deep"), std::string::npos)
        << r.diagnostics[0].message;
    EXPECT_EQ(r.diagnostics[0].line, 3);
  }
}

TEST(LoadLimits, DeepBlockNestingIsRefused) {
  std::string compact = "name: x\nversion: 0.1.0\nstate:\n";
  for (int i = 0; i < 100000; ++i) {
    compact += "- ";
  }
  compact += "x\n";
  LoadResult r = load(compact);
  ASSERT_EQ(r.diagnostics.size(), 1u) << dump(r.diagnostics);
  EXPECT_NE(r.diagnostics[0].message.find("more than 128 levels deep"), std::string::npos);
  EXPECT_EQ(r.diagnostics[0].line, 4);

  std::string indented = "name: x\nversion: 0.1.0\nstate:\n";
  for (int i = 1; i < 300; ++i) {
    indented += std::string(static_cast<size_t>(i), ' ') + "k:\n";
  }
  r = load(indented);
  ASSERT_EQ(r.diagnostics.size(), 1u) << dump(r.diagnostics);
  EXPECT_NE(r.diagnostics[0].message.find("more than 128 levels deep"), std::string::npos);
  EXPECT_EQ(r.diagnostics[0].line, 3 + 128);  // the 129th mapping opens on that line
}

TEST(LoadLimits, DepthCountsWhatAnAliasBringsIn) {
  // 100 levels behind an anchor, aliased 100 levels down: 200 deep once expanded.
  std::string deep = std::string(100, '[') + std::string(100, ']');
  std::string text = "name: x\nversion: 0.1.0\nstate: {schema: {}}\na: &d " + deep + "\nb: " +
                     std::string(100, '[') + "*d" + std::string(100, ']') + "\n";
  LoadResult r = load(text);
  ASSERT_EQ(r.diagnostics.size(), 1u) << dump(r.diagnostics);
  EXPECT_EQ(r.diagnostics[0].message.rfind("this alias nests mappings and sequences more than "
                                           "128 levels deep",
                                           0),
            0u)
      << r.diagnostics[0].message;
  EXPECT_EQ(r.diagnostics[0].line, 5);
  EXPECT_EQ(r.diagnostics[0].column, 104);  // the `*`
  // 100 + 20 is fine.
  LoadResult ok = load("name: x\nversion: 0.1.0\nstate: {schema: {}}\na: &d " +
                       std::string(20, '[') + std::string(20, ']') + "\nb: " +
                       std::string(100, '[') + "*d" + std::string(100, ']') + "\n");
  EXPECT_EQ(matching(ok.diagnostics, "levels deep").size(), 0u) << dump(ok.diagnostics);
}

TEST(LoadLimits, OversizedTextAndFilesAreRefusedUnread) {
  LoadLimits limits;
  limits.max_bytes = 1000;
  std::string text = std::string(kMinimal) + "description: " + std::string(2000, 'x') + "\n";
  LoadResult r = loadExperienceText(text, "e.yaml", limits);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_NE(r.diagnostics[0].message.find("oe reads experience files of at most 0.0 MiB"),
            std::string::npos)
      << r.diagnostics[0].message;
  TempDir dir;
  auto path = dir.write("experience.yaml", text);
  r = loadExperience(path, limits);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].file, path.string());
  EXPECT_NE(r.diagnostics[0].message.find("the file is 0.0 MiB"), std::string::npos);
  // The default is 16 MiB.
  EXPECT_EQ(LoadLimits{}.max_bytes, size_t{16} << 20);
}

// The fuzz corpus's hostile seeds in every build, not only the clang `fuzz` preset's: each ends
// in a diagnostic about a bound.
TEST(LoadLimits, HostileFuzzSeedsAreRefused) {
  const auto corpus = std::filesystem::path(OE_SOURCE_DIR) / "tests/fuzz/corpus/spec_loader";
  size_t seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(corpus)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("hostile-", 0) != 0) {
      continue;
    }
    ++seen;
    LoadResult r = loadExperience(entry.path());
    ASSERT_FALSE(r.diagnostics.empty()) << name;
    const std::string& message = r.diagnostics[0].message;
    EXPECT_TRUE(message.find("alias expansion exceeds") != std::string::npos ||
                message.find("levels deep") != std::string::npos)
        << name << ": " << dump(r.diagnostics);
    EXPECT_GT(r.diagnostics[0].line, 0) << name;
  }
  EXPECT_GE(seen, 7u);
}

// Every seed of the loader's fuzz corpus through what `oe validate` runs (checkLoaded, also on
// the partial model of a broken file), in every build: diagnostics, never a crash or a throw.
TEST(LoadLimits, EveryFuzzSeedEndsInDiagnosticsOrAModel) {
  const auto corpus = std::filesystem::path(OE_SOURCE_DIR) / "tests/fuzz/corpus/spec_loader";
  const KindCatalog kinds = testing::testKinds();
  size_t seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(corpus)) {
    ++seen;
    LoadResult r = loadExperience(entry.path());
    for (const bool strict : {false, true}) {
      std::vector<Diagnostic> all;
      ASSERT_NO_THROW(all = checkLoaded(r, kinds, strict)) << entry.path();
      EXPECT_TRUE(r.experience || hasErrors(all)) << entry.path();
    }
  }
  EXPECT_GE(seen, 15u);
}

TEST(LoadExperience, TenThousandNodes) {
  std::string text =
      "name: big\nversion: 0.1.0\nstate:\n  schema:\n    v: {type: number}\n"
      "graph:\n  nodes:\n";
  const int n = 10000;
  for (int i = 0; i < n; ++i) {
    text += "    - {id: n" + std::to_string(i) + ", kind: tool, impl: t.mjs, writes: [v]}\n";
  }
  text += "  edges:\n";
  for (int i = 1; i < n; ++i) {
    text += "    - {from: n" + std::to_string(i - 1) + ", to: n" + std::to_string(i) + "}\n";
  }
  Experience exp = loadOk(text);
  ASSERT_EQ(exp.nodes.size(), static_cast<size_t>(n));
  EXPECT_EQ(exp.nodes[9999].mark.line, 9 + 9999 - 1);
  EXPECT_EQ(exp.findNode("n5000"), &exp.nodes[5000]);
}

}  // namespace
}  // namespace oe::spec

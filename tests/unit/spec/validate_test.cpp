// validateExperience: upstream schema/validator tests (reference §11.3) plus oe's checks that
// report everything at once (D8, D9): kinds and their schemas, expressions with columns,
// cycles, unknown keys with suggestions.
#include "oe/spec/validate.hpp"

#include <gtest/gtest.h>

#include "oe/spec/suggest.hpp"
#include "unit/spec/spec_test_support.hpp"

namespace oe::spec {
namespace {

using testing::dump;
using testing::loadOk;
using testing::matching;
using testing::testKinds;

// A valid experience with the given state schema, nodes and edges (YAML, indented 4 and 4).
std::string experience(const std::string& schema, const std::string& nodes,
                       const std::string& edges = "[]", const std::string& extra = "") {
  return "name: t\nversion: 0.1.0\nstate:\n  schema:" + schema + "\ngraph:\n  nodes:\n" + nodes +
         "  edges: " + edges + "\n" + extra;
}

// The experiences here live in memory (their folder /tmp/oe-test does not exist), so the files
// they name are not looked for; FileChecks below checks those in a real folder.
std::vector<Diagnostic> validate(const std::string& yaml, bool strict = false) {
  Experience exp = loadOk(yaml);
  return validateExperience(exp, testKinds(), strict, /*check_files=*/false);
}

std::vector<Diagnostic> errorsOf(const std::vector<Diagnostic>& all) {
  std::vector<Diagnostic> out;
  for (const auto& d : all) {
    if (d.severity == Severity::kError) {
      out.push_back(d);
    }
  }
  return out;
}

const std::string kNodeA = "    - {id: a, kind: tool, impl: a.mjs}\n";
const std::string kNodeB = "    - {id: b, kind: tool, impl: b.mjs}\n";

// schema/validator.test
TEST(ValidatorTest, AcceptsMinimal) {
  auto ds = validate(experience(" {}", kNodeA));
  EXPECT_TRUE(ds.empty()) << dump(ds);
}

TEST(ValidatorTest, RejectsUnknownKind) {
  auto ds = validate(experience(" {}", "    - {id: a, kind: wizard}\n"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].message,
            "unknown node kind \"wizard\"; no loaded plugin provides it (installed kinds: agent, "
            "bare, cli-agent, dataset, tool). Run `oe plugins` to see what is installed.");
  EXPECT_EQ(ds[0].node_id, "a");
  EXPECT_EQ(ds[0].field, "kind");
  EXPECT_EQ(ds[0].line, 7);
  EXPECT_EQ(ds[0].column, 21);
  auto typo = validate(experience(" {}", "    - {id: a, kind: tol}\n"));
  ASSERT_EQ(typo.size(), 1u);
  // The suggestion first, and no "?." or ".;" where the sentences meet.
  EXPECT_EQ(typo[0].message,
            "unknown node kind \"tol\"; did you mean \"tool\"? No loaded plugin provides it "
            "(installed kinds: agent, bare, cli-agent, dataset, tool). Run `oe plugins` to see "
            "what is installed.");
}

TEST(ValidatorTest, EdgeToUnknownNode) {
  auto ds = validate(experience(" {}", kNodeA, "[{from: a, to: nope}]"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_NE(ds[0].message.find("unknown node id \"nope\""), std::string::npos);
  EXPECT_EQ(ds[0].message, "Edge references unknown node id \"nope\"");
  EXPECT_EQ(ds[0].field, "graph.edges[0].to");
  EXPECT_EQ(ds[0].line, 8);
  EXPECT_EQ(ds[0].column, 25);
  auto from = validate(experience(" {}", kNodeA, "[{from: aa, to: a}]"));
  ASSERT_EQ(from.size(), 1u);
  EXPECT_EQ(from[0].message, "Edge references unknown node id \"aa\"; did you mean \"a\"?");
}

TEST(ValidatorTest, UndeclaredWritesAndReads) {
  auto ds = validate(experience(" {}", "    - {id: a, kind: tool, impl: x, writes: [out]}\n"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  // The diagnostic names the node (node "a": writes[0]: ...), so the message does not.
  EXPECT_EQ(ds[0].message, "writes undeclared state field \"out\". Declare it in state.schema.");
  EXPECT_EQ(ds[0].node_id, "a");
  EXPECT_EQ(ds[0].field, "writes[0]");
  EXPECT_EQ(ds[0].column, 45);
  ds = validate(experience(" {}", "    - {id: a, kind: tool, impl: x, reads: [inp]}\n"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].message, "reads undeclared state field \"inp\". Declare it in state.schema.");
  ds = validate(experience(" {inp: {}}", "    - {id: a, kind: tool, impl: x, reads: [imp]}\n"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].message,
            "reads undeclared state field \"imp\"; did you mean \"inp\"? Declare it in "
            "state.schema.");
  EXPECT_EQ(ds[0].format().find("node \"a\""), ds[0].format().rfind("node \"a\""));
}

TEST(ValidatorTest, DuplicateIds) {
  auto ds = validate(experience(" {}", kNodeA + "    - {id: a, kind: tool, impl: b.mjs}\n"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_NE(ds[0].message.find("Duplicate node ids in graph.nodes"), std::string::npos);
  EXPECT_NE(ds[0].message.find("\"a\" is already the id of the node at line 7"), std::string::npos);
  EXPECT_EQ(ds[0].line, 8);
  EXPECT_EQ(ds[0].node_id, "a");
}

TEST(ValidatorTest, CliAgentProviders) {
  for (const char* provider : {"claude-code", "codex", "gemini"}) {
    auto ds = validate(experience(
        " {}", std::string("    - {id: c, kind: cli-agent, provider: ") + provider +
                   ", prompt: do it, workdir: ., output_format: json, schema: {type: object}, "
                   "timeout_ms: 30000, extra_args: [--x]}\n"));
    EXPECT_TRUE(ds.empty()) << provider << "\n" << dump(ds);
  }
  auto ds = validate(experience(" {}",
                                "    - {id: c, kind: cli-agent, provider: gpt-9001, "
                                "prompt: do it}\n"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].message, "must be one of: claude-code, codex, gemini; got \"gpt-9001\"");
  EXPECT_EQ(ds[0].field, "provider");
  EXPECT_EQ(ds[0].column, 42);
  ds = validate(experience(" {}", "    - {id: c, kind: cli-agent, provider: codex}\n"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].message, "missing required key \"prompt\"");
  EXPECT_EQ(ds[0].node_id, "c");
  ds = validate(experience(" {}",
                           "    - {id: c, kind: cli-agent, provider: codex, prompt: x, "
                           "timeout_ms: 10}\n"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].message, "must be at least 1000, got 10");
}

TEST(ValidateExperience, KindSchemaErrorsPointAtTheField) {
  auto ds = validate(experience(" {}", R"(    - id: a
      kind: tool
      impl: ""
    - id: b
      kind: tool
    - id: c
      kind: tool
      impl: [x]
)"));
  ASSERT_EQ(ds.size(), 3u) << dump(ds);
  EXPECT_EQ(ds[0].message, "must not be empty");
  EXPECT_EQ(ds[0].line, 9);
  EXPECT_EQ(ds[0].column, 14);
  EXPECT_EQ(ds[0].node_id, "a");
  EXPECT_EQ(ds[1].message, "missing required key \"impl\"");
  EXPECT_EQ(ds[1].node_id, "b");
  EXPECT_EQ(ds[1].line, 10);
  EXPECT_EQ(ds[2].message, "must be a string, got a list");
  EXPECT_EQ(ds[2].field, "impl");
  EXPECT_EQ(ds[2].line, 14);
  EXPECT_EQ(ds[2].column, 13);
}

TEST(ValidateExperience, UnknownKeysWarnWithASuggestion) {
  std::string yaml =
      experience(" {}", R"(    - id: a
      kind: agent
      promt: ./p.md
      prompt: ./q.md
      on_error: {policy: retry, attempts: 2, bakoff: linear}
      for_each: {source: $.x, concurency: 2}
    - id: d
      kind: dataset
      source: {type: file, uri: a.csv, fromat: csv}
    - id: n
      kind: bare
      anything: goes
)",
                 "[{from: a, to: d, wen: x}]", "runtime: {concurrency: 2, determinstic: true}\n");
  auto ds = validate(yaml);
  auto unknown = matching(ds, "unknown key");
  ASSERT_EQ(unknown.size(), 6u) << dump(ds);
  auto expect = [&](size_t i, const std::string& key, const std::string& suggestion, int line,
                    int column) {
    EXPECT_EQ(unknown[i].message.rfind(
                  "unknown key \"" + key + "\"; did you mean \"" + suggestion + "\"?", 0),
              0u)
        << unknown[i].message;
    EXPECT_EQ(unknown[i].severity, Severity::kWarning);
    EXPECT_EQ(unknown[i].line, line) << key;
    EXPECT_EQ(unknown[i].column, column) << key;
  };
  expect(0, "promt", "prompt", 9, 7);
  expect(1, "bakoff", "backoff", 11, 46);
  expect(2, "concurency", "concurrency", 12, 31);
  expect(3, "fromat", "format", 15, 40);
  expect(4, "wen", "when", 19, 28);
  expect(5, "determinstic", "deterministic", 20, 27);
  EXPECT_FALSE(hasErrors(ds)) << dump(ds);

  auto strict = validate(yaml, true);
  EXPECT_EQ(errorsOf(strict).size(), 6u) << dump(strict);
  EXPECT_NE(errorsOf(strict)[0].message.find("did you mean \"prompt\"?"), std::string::npos);
}

TEST(ValidateExperience, CacheInputsGlobsStayInsideTheExperience) {
  const auto ds = validate(experience(" {}", R"(    - id: a
      kind: tool
      impl: a.mjs
      cache:
        inputs: [data/*.csv, /etc/*, ../shared/*.json, .openexpertise/cache/*, "data/[ab.csv"]
        input: [x]
)"));
  const auto errors = errorsOf(ds);
  ASSERT_EQ(errors.size(), 4u) << dump(ds);
  EXPECT_EQ(errors[0].node_id, "a");
  EXPECT_EQ(errors[0].field, "cache.inputs[1]");
  EXPECT_EQ(errors[0].line, 11);
  EXPECT_EQ(errors[0].column, 30);
  EXPECT_NE(errors[0].message.find("is absolute"), std::string::npos) << errors[0].message;
  EXPECT_NE(errors[1].message.find("leaves the experience folder"), std::string::npos);
  EXPECT_NE(errors[2].message.find("which oe owns"), std::string::npos);
  EXPECT_NE(errors[3].message.find("without its \"]\""), std::string::npos);
  const auto unknown = matching(ds, "unknown key \"input\"; did you mean \"inputs\"?");
  ASSERT_EQ(unknown.size(), 1u) << dump(ds);
  EXPECT_EQ(unknown[0].severity, Severity::kWarning);
}

TEST(ValidateExperience, BadWhenPointsAtTheColumnInTheFile) {
  auto ds = validate(experience(" {x: {type: number}}", kNodeA + kNodeB,
                                "\n    - from: a\n      to: b\n      when: \"$.x > 1 true\"\n"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].message,
            "invalid when of edge \"a\" -> \"b\": Unexpected token \"true\" after the end of "
            "the expression");
  EXPECT_EQ(ds[0].line, 12);
  EXPECT_EQ(ds[0].column, 22);  // the expression starts at column 14; `true` is its 9th
  EXPECT_EQ(ds[0].field, "graph.edges[0].when");

  ds = validate(
      experience(" {x: {type: number}}", kNodeA + kNodeB, "[{from: a, to: b, when: $.x = 1}]"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].message.rfind("invalid when of edge \"a\" -> \"b\": Unexpected character "
                                "\"=\" in expression: $.x = 1",
                                0),
            0u);
  EXPECT_EQ(ds[0].line, 9);
  EXPECT_EQ(ds[0].column, 38);
}

TEST(ValidateExperience, LoopsAndUntil) {
  std::string yaml =
      "name: t\nversion: 0.1.0\nstate: {schema: {count: {type: number}}}\n"
      "graph:\n  nodes:\n" +
      kNodeA +
      "  edges: []\n  loops:\n"
      "    - {id: l1, body: a, until: '$.count >= 3 &&'}\n"
      "    - {id: l2, body: ghost, max_iters: 2}\n"
      "    - {id: l3, body: a}\n"
      "    - {id: l4, body: a, until: '$.cnt > 1'}\n";
  auto ds = validate(yaml);
  ASSERT_EQ(ds.size(), 4u) << dump(ds);
  EXPECT_EQ(ds[0].message, "invalid until of loop \"l1\": Unexpected end of expression");
  EXPECT_EQ(ds[0].line, 9);
  EXPECT_EQ(ds[0].column, 48);
  EXPECT_EQ(ds[1].message, "Loop \"l2\" references unknown body node \"ghost\"");
  EXPECT_EQ(ds[2].message, "Loop \"l3\" must declare at least one of: until, max_iters");
  EXPECT_EQ(ds[3].severity, Severity::kWarning);
  EXPECT_NE(ds[3].message.find("reads \"$.cnt\", but \"cnt\" is not declared in state.schema"),
            std::string::npos);
  EXPECT_NE(ds[3].message.find("did you mean \"count\"?"), std::string::npos);
}

TEST(ValidateExperience, PipelinesAndForEachSources) {
  std::string yaml =
      "name: t\nversion: 0.1.0\nstate: {schema: {items: {type: array}}}\n"
      "graph:\n  nodes:\n"
      "    - {id: a, kind: tool, impl: x, for_each: {source: $.items.0}}\n"
      "    - {id: b, kind: tool, impl: x, for_each: {source: $.itemz}}\n"
      "  edges: []\n  pipelines:\n"
      "    - {id: p, items: $.items, stages: [a, c]}\n"
      "    - {id: q, items: items, stages: [b]}\n";
  auto ds = validate(yaml);
  ASSERT_EQ(ds.size(), 4u) << dump(ds);
  EXPECT_EQ(ds[0].severity, Severity::kWarning);
  EXPECT_EQ(ds[0].message,
            "\"$.items.0\" is not a $.path (such as $.items), so it gives zero iterations");
  EXPECT_EQ(ds[0].field, "for_each.source");
  EXPECT_EQ(ds[1].severity, Severity::kWarning);
  EXPECT_NE(ds[1].message.find("not declared in state.schema"), std::string::npos);
  EXPECT_EQ(ds[2].message, "Pipeline \"p\" references unknown stage node \"c\"");
  EXPECT_EQ(ds[2].severity, Severity::kError);
  EXPECT_EQ(ds[3].severity, Severity::kWarning);
  EXPECT_NE(ds[3].message.find("\"items\" is not a $.path"), std::string::npos);
}

TEST(ValidateExperience, ArgsPaths) {
  auto ds = validate(experience(" {x: {}}",
                                "    - {id: a, kind: tool, impl: x, args: {ok: $.x, "
                                "typo: $.y, literal: '$.x[0]', n: [$.x, 3]}}\n"));
  ASSERT_EQ(ds.size(), 2u) << dump(ds);
  EXPECT_NE(ds[0].message.find("\"$.y\" reads \"y\", which is not declared"), std::string::npos);
  EXPECT_EQ(ds[0].field, "args.typo");
  EXPECT_NE(ds[1].message.find("\"$.x[0]\" is not a $.path"), std::string::npos);
  EXPECT_EQ(ds[1].field, "args.literal");
}

TEST(ValidateExperience, CyclesAreReportedWithTheirPath) {
  std::string nodes;
  for (const char* id : {"a", "b", "c", "d"}) {
    nodes += std::string("    - {id: ") + id + ", kind: tool, impl: x}\n";
  }
  auto ds = validate(experience(" {}", nodes,
                                "\n    - {from: a, to: b}\n    - {from: b, to: c}\n"
                                "    - {from: c, to: a}\n    - {from: d, to: d}\n"));
  ASSERT_EQ(ds.size(), 2u) << dump(ds);
  EXPECT_EQ(ds[0].message.rfind("graph contains a cycle: a -> b -> c -> a", 0), 0u);
  EXPECT_EQ(ds[0].line, 14);
  EXPECT_EQ(ds[0].field, "graph.edges[2]");
  EXPECT_EQ(ds[1].message.rfind("graph contains a cycle: d -> d", 0), 0u);
  Experience exp = loadOk(experience(" {}", nodes, "[{from: a, to: b}, {from: b, to: a}]"));
  EXPECT_EQ(findCycles(exp), (std::vector<std::vector<std::string>>{{"a", "b", "a"}}));
}

TEST(ValidateExperience, ManyErrorsAtOnce) {
  std::string yaml = experience(" {x: {}}", R"(    - {id: a, kind: tool, writes: [y]}
    - {id: a, kind: wizard, reads: [z]}
)",
                                "[{from: a, to: ghost, when: 'x'}]");
  auto ds = validate(yaml);
  auto errors = errorsOf(ds);
  EXPECT_EQ(errors.size(), 7u) << dump(ds);
  EXPECT_EQ(matching(ds, "missing required key \"impl\"").size(), 1u);
  EXPECT_EQ(matching(ds, "writes undeclared state field \"y\"").size(), 1u);
  EXPECT_EQ(matching(ds, "reads undeclared state field \"z\"").size(), 1u);
  EXPECT_EQ(matching(ds, "Duplicate node ids").size(), 1u);
  EXPECT_EQ(matching(ds, "unknown node kind \"wizard\"").size(), 1u);
  EXPECT_EQ(matching(ds, "unknown node id \"ghost\"").size(), 1u);
  EXPECT_EQ(matching(ds, "Unexpected identifier \"x\" without parens").size(), 1u);
}

TEST(ValidateExperience, InvalidPluginSchemaIsReportedOnce) {
  KindCatalog kinds;
  kinds["odd"] =
      KindInfo{"odd", Json::parse(R"({"type": "object", "properties": {"x": {"type": 5}}})")};
  Experience exp =
      loadOk(experience(" {}", "    - {id: a, kind: odd}\n    - {id: b, kind: odd}\n"));
  auto ds = validateExperience(exp, kinds, false);
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_NE(ds[0].message.find("declares an invalid schema"), std::string::npos);
}

TEST(ValidateExperience, ClosedKindSchemaChecksOnlyKindFields) {
  KindCatalog kinds;
  kinds["closed"] = KindInfo{"closed", Json::parse(R"({"type": "object",
      "additionalProperties": false, "properties": {"impl": {"type": "string"}}})")};
  Experience exp = loadOk(experience(
      " {x: {}}", "    - {id: a, kind: closed, impl: x, writes: [x], timeout_ms: 5, imp: y}\n"));
  auto ds = validateExperience(exp, kinds, false);
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].message, "unknown key \"imp\"; did you mean \"impl\"?");
  EXPECT_EQ(ds[0].severity, Severity::kError);
  EXPECT_EQ(ds[0].column, 66);
}

// An agent's structured answer is its whole state delta: a property of its schema that the node
// does not list in its writes would be written outside them (a warning at run time, refused
// under runtime.strict_writes), so `oe validate` notes it where the property is.
TEST(ValidateExperience, ASchemaPropertyOutsideTheNodesWritesIsNoted) {
  KindCatalog kinds;
  kinds["agent"] = KindInfo{"agent", Json::parse(R"({"type": "object", "properties": {
      "prompt": {"type": "string"}, "schema": {"x-oe-writes": "properties"}}})")};
  const std::string schema =
      "schema: {type: object, properties: {label: {type: string}, score: {type: number}}}";
  Experience exp = loadOk(experience(" {label: {}, score: {}}",
                                     "    - {id: a, kind: agent, prompt: p, writes: [label], " +
                                         schema + "}\n"));
  auto ds = validateExperience(exp, kinds, false);
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].severity, Severity::kWarning);
  EXPECT_EQ(ds[0].line, 7);
  EXPECT_NE(ds[0].message.find("property \"score\" of the node's schema is written to the "
                               "state"),
            std::string::npos)
      << ds[0].message;
  EXPECT_NE(ds[0].message.find("not in the node's writes (label)"), std::string::npos);
  // Every property in writes, or no writes at all (nothing declared, nothing checked): quiet.
  for (const std::string& writes : {std::string("writes: [label, score], "), std::string()}) {
    Experience ok = loadOk(experience(" {label: {}, score: {}}",
                                      "    - {id: a, kind: agent, prompt: p, " + writes +
                                          schema + "}\n"));
    EXPECT_TRUE(validateExperience(ok, kinds, false).empty()) << writes;
  }
  // runtime.strict_writes is a known key.
  Experience strict = loadOk(experience(" {label: {}}", "    - {id: a, kind: agent, prompt: p}\n",
                                        "[]", "runtime: { strict_writes: true }\n"));
  EXPECT_TRUE(validateExperience(strict, kinds, false).empty());
  EXPECT_TRUE(strict.runtime.strict_writes);
}

TEST(ValidateExperience, EmptyCatalogNamesNoKinds) {
  Experience exp = loadOk(experience(" {}", kNodeA));
  auto ds = validateExperience(exp, KindCatalog{}, false);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_NE(ds[0].message.find("(installed kinds: none)"), std::string::npos);
}

TEST(ValidateExperience, PhasesMustBeDeclaredWhenAnyAre) {
  std::string yaml = experience(" {}", "    - {id: a, kind: tool, impl: x, phase: reveiw}\n", "[]",
                                "phases: [{id: review}]\n");
  auto ds = validate(yaml);
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].severity, Severity::kWarning);
  EXPECT_NE(ds[0].message.find("did you mean \"review\"?"), std::string::npos);
  EXPECT_TRUE(
      validate(experience(" {}", "    - {id: a, kind: tool, impl: x, phase: any}\n")).empty());
}

TEST(Suggest, ClosestPlausibleMatch) {
  EXPECT_EQ(closestMatch("promt", {"prompt", "impl"}), "prompt");
  EXPECT_EQ(closestMatch("impl_path", {"id", "impl", "kind"}), "impl");
  EXPECT_EQ(closestMatch("zzzzzz", {"id", "impl", "kind"}), "");
  EXPECT_EQ(closestMatch("id", {"id"}), "");
  EXPECT_EQ(levenshtein("kitten", "sitting"), 3u);
}

}  // namespace
}  // namespace oe::spec

namespace oe::spec {
namespace {

using testing::dump;
using testing::load;
using testing::matching;
using testing::testKinds;

// Issue 10, item 5: structural errors no longer hide the reference errors.
TEST(CheckLoaded, StructuralAndReferenceErrorsInOnePass) {
  // (a.mjs and b.mjs do not exist: two more errors, which this test does not count)
  const std::string yaml = R"(name: both
version: 1
state:
  schema:
    x: {type: integer}
graph:
  nodes:
    - {id: a, kind: tool, impl: a.mjs, writes: [y]}
    - {id: a, kind: wizard}
    - {kind: tool, impl: b.mjs, timeout_ms: 0}
    - 3
  edges:
    - {from: a, to: ghost, when: "$.x >"}
    - {from: a}
  loops:
    - {id: l, body: nobody, max_iters: 2}
)";
  LoadResult loaded = load(yaml);
  EXPECT_FALSE(loaded.experience);
  ASSERT_TRUE(loaded.partial);
  const auto ds = checkLoaded(loaded, testKinds(), false);
  // Structural (the loader's) ...
  EXPECT_EQ(matching(ds, "must be a string, got 1").size(), 1u) << dump(ds);  // version
  EXPECT_EQ(matching(ds, "must be one of: string, number").size(), 1u) << dump(ds);
  EXPECT_EQ(matching(ds, "missing required key \"id\"").size(), 1u) << dump(ds);
  EXPECT_EQ(matching(ds, "must be at least 1, got 0").size(), 1u) << dump(ds);
  EXPECT_EQ(matching(ds, "must be an object").size() + matching(ds, "must be a mapping").size(),
            1u)
      << dump(ds);
  EXPECT_EQ(matching(ds, "missing required key \"to\"").size(), 1u) << dump(ds);
  // ... and the references, at once.
  EXPECT_EQ(matching(ds, "writes undeclared state field \"y\"").size(), 1u) << dump(ds);
  EXPECT_EQ(matching(ds, "Duplicate node ids").size(), 1u) << dump(ds);
  EXPECT_EQ(matching(ds, "unknown node kind \"wizard\"").size(), 1u) << dump(ds);
  EXPECT_EQ(matching(ds, "unknown node id \"ghost\"").size(), 1u) << dump(ds);
  EXPECT_EQ(matching(ds, "invalid when of edge").size(), 1u) << dump(ds);
  EXPECT_EQ(matching(ds, "unknown body node \"nobody\"").size(), 1u) << dump(ds);
  // A missing or mistyped key is reported once, not again as a reference to "".
  EXPECT_EQ(matching(ds, "\"\"").size(), 0u) << dump(ds);
  // In file order.
  for (size_t i = 1; i < ds.size(); ++i) {
    EXPECT_LE(ds[i - 1].line, ds[i].line) << dump(ds);
  }
}

TEST(CheckLoaded, MistypedSectionsStillGetTheReferenceChecks) {
  // graph.edges is not a list, state.schema not a mapping: the nodes are still checked.
  LoadResult loaded = load(R"(name: t
version: 0.1.0
state: {schema: [x]}
graph:
  nodes: [{id: a, kind: wizard, writes: [x]}]
  edges: {from: a}
)");
  ASSERT_TRUE(loaded.partial);
  const auto ds = checkLoaded(loaded, testKinds(), false);
  EXPECT_EQ(matching(ds, "must be an object").size() + matching(ds, "must be a mapping").size() +
                matching(ds, "must be an array").size() + matching(ds, "must be a list").size(),
            2u)
      << dump(ds);
  EXPECT_EQ(matching(ds, "unknown node kind \"wizard\"").size(), 1u) << dump(ds);
  EXPECT_EQ(matching(ds, "writes undeclared state field \"x\"").size(), 1u) << dump(ds);
}

TEST(CheckLoaded, AYamlErrorHasNoModel) {
  LoadResult loaded = load("name: [\n");
  EXPECT_FALSE(loaded.experience);
  EXPECT_FALSE(loaded.partial);
  EXPECT_EQ(checkLoaded(loaded, testKinds(), false).size(), 1u);
}

}  // namespace
}  // namespace oe::spec

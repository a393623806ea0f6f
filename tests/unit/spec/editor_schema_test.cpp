// editorJsonSchema: the experience schema with the loaded kinds' fields, checked as a validator
// (valijson, through SchemaChecker) reads it, the way an editor's YAML language server would.
#include "oe/spec/editor_schema.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "oe/spec/schema.hpp"
#include "oe/spec/schema_check.hpp"

namespace oe::spec {
namespace {

KindCatalog kinds() {
  KindCatalog catalog;
  catalog["agent"] = KindInfo{"agent", Json::parse(R"({
    "type": "object", "required": ["prompt"],
    "properties": {"prompt": {"type": "string", "minLength": 1, "x-oe-path": "file"},
                   "max_tokens": {"type": "integer", "minimum": 1}}})")};
  // Closed, and with a local $ref and its own $schema: both must still work once embedded.
  catalog["closed"] = KindInfo{"closed", Json::parse(R"({
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object", "additionalProperties": false,
    "properties": {"level": {"$ref": "#/definitions/level"}},
    "definitions": {"level": {"enum": ["low", "high"]}}})")};
  catalog["bare"] = KindInfo{"bare", std::nullopt};
  catalog["broken"] = KindInfo{"broken", Json::parse(R"({"type": 3})")};
  return catalog;
}

// A valid experience whose only node is `node`.
Json withNode(const Json& node) {
  Json doc = Json::parse(R"({"name": "t", "version": "0.1.0",
                             "state": {"schema": {"out": {"type": "string"}}},
                             "graph": {"edges": []}})");
  doc["graph"]["nodes"] = Json::array({node});
  return doc;
}

class EditorSchema : public ::testing::Test {
 protected:
  // The messages of `doc` against the generated schema (empty when it validates).
  std::vector<std::string> problems(const Json& doc) {
    std::vector<std::string> out;
    for (const SchemaIssue& issue : checker_.check(doc)) {
      out.push_back(issue.pointer + ": " + issue.message);
    }
    return out;
  }

  Json schema_ = editorJsonSchema(kinds());
  SchemaChecker checker_ = SchemaChecker::compile(schema_).value();
};

TEST_F(EditorSchema, ChecksAKindsFieldsOnlyOnNodesOfThatKind) {
  const Json good = {{"id", "a"},
                     {"kind", "agent"},
                     {"prompt", "p.md"},
                     {"max_tokens", 100},
                     {"writes", Json::array({"out"})}};
  EXPECT_EQ(problems(withNode(good)), std::vector<std::string>{});

  Json lots = good;
  lots["max_tokens"] = "lots";
  const auto errors = problems(withNode(lots));
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors.front().find("/graph/nodes/0/max_tokens"), std::string::npos) << errors.front();

  Json no_prompt = good;
  no_prompt.erase("prompt");
  EXPECT_FALSE(problems(withNode(no_prompt)).empty());

  // The same field on another kind is that kind's business, not the agent's.
  EXPECT_EQ(problems(withNode({{"id", "a"}, {"kind", "bare"}, {"max_tokens", "lots"}})),
            std::vector<std::string>{});
}

TEST_F(EditorSchema, KindIsOneOfTheLoadedKindsSoATypoIsFlagged) {
  EXPECT_FALSE(problems(withNode({{"id", "a"}, {"kind", "agnet"}})).empty());
  EXPECT_FALSE(problems(withNode({{"id", "a"}, {"kind", ""}})).empty());
  EXPECT_EQ(problems(withNode({{"id", "a"}, {"kind", "bare"}})), std::vector<std::string>{});
  const Json& kind = schema_["definitions"]["node"]["properties"]["kind"];
  EXPECT_EQ(kind["enum"], Json::array({"agent", "bare", "broken", "closed"}));
}

TEST_F(EditorSchema, OpenKindsAcceptsAnyNameAndOffersTheLoadedKinds) {
  schema_ = editorJsonSchema(kinds(), /*open_kinds=*/true);
  checker_ = SchemaChecker::compile(schema_).value();
  EXPECT_EQ(problems(withNode({{"id", "a"}, {"kind", "acme-scraper"}, {"url", "x"}})),
            std::vector<std::string>{});
  EXPECT_FALSE(problems(withNode({{"id", "a"}, {"kind", ""}})).empty());
  const Json& kind = schema_["definitions"]["node"]["properties"]["kind"];
  EXPECT_EQ(kind["type"], "string");
  EXPECT_FALSE(kind.contains("enum"));
  EXPECT_EQ(kind["examples"], Json::array({"agent", "bare", "broken", "closed"}));
}

TEST_F(EditorSchema, AClosedKindSchemaStillAllowsTheCommonFields) {
  const Json node = {{"id", "c"},          {"kind", "closed"},
                     {"level", "high"},    {"reads", Json::array({"out"})},
                     {"timeout_ms", 500},  {"phase", "p"},
                     {"args", {{"k", 1}}}, {"on_error", {{"policy", "skip"}}}};
  EXPECT_EQ(problems(withNode(node)), std::vector<std::string>{});
  Json typo = node;
  typo["levle"] = "high";
  EXPECT_FALSE(problems(withNode(typo)).empty());  // the plugin closed it: validate refuses it too
  Json wrong = node;
  wrong["level"] = "medium";  // through the rebased $ref
  EXPECT_FALSE(problems(withNode(wrong)).empty());
  const Json& then = schema_["definitions"]["node"]["allOf"][1]["then"];
  EXPECT_EQ(then["properties"]["level"]["$ref"],
            "#/definitions/node/allOf/1/then/definitions/level");
  EXPECT_FALSE(then.contains("$schema"));
}

TEST_F(EditorSchema, SelectsOnlyKindsWithAUsableSchema) {
  const Json& all_of = schema_["definitions"]["node"]["allOf"];
  ASSERT_EQ(all_of.size(), 2U);  // agent and closed; bare has no schema, broken's is invalid
  EXPECT_EQ(all_of[0]["if"]["properties"]["kind"]["const"], "agent");
  EXPECT_EQ(all_of[0]["if"]["required"], Json::array({"kind"}));
  EXPECT_EQ(all_of[0]["then"]["properties"]["prompt"]["x-oe-path"], "file");  // kept
  EXPECT_EQ(problems(withNode({{"id", "b"}, {"kind", "broken"}, {"x", 1}})),
            std::vector<std::string>{});
}

TEST_F(EditorSchema, AcceptsWhatValidateOnlyWarnsAbout) {
  // Unknown keys in a node and in on_error are warnings of `oe validate` (errors with --strict).
  EXPECT_EQ(problems(withNode({{"id", "a"}, {"kind", "agent"}, {"prompt", "p.md"}, {"promt", 1}})),
            std::vector<std::string>{});
  const Json skip_with_attempts = {{"policy", "skip"}, {"attempts", 3}, {"note", "x"}};
  EXPECT_EQ(problems(withNode({{"id", "a"}, {"kind", "bare"}, {"on_error", skip_with_attempts}})),
            std::vector<std::string>{});
  // What checkOnError refuses, the schema refuses.
  for (const Json& bad : {Json{{"policy", "retry"}}, Json{{"policy", "again"}},
                          Json{{"policy", "retry"}, {"attempts", 21}},
                          Json{{"policy", "retry"}, {"attempts", 2}, {"backoff", "cubic"}}}) {
    EXPECT_FALSE(problems(withNode({{"id", "a"}, {"kind", "bare"}, {"on_error", bad}})).empty())
        << bad.dump();
  }
  // And the top level stays closed, as the loader's is.
  Json misspelled = withNode({{"id", "a"}, {"kind", "bare"}});
  misspelled["grpah"] = misspelled["graph"];
  misspelled.erase("graph");
  EXPECT_FALSE(problems(misspelled).empty());
}

TEST_F(EditorSchema, WithoutKindsIsTheCoreStructure) {
  Json plain = editorJsonSchema({});
  Json core = experienceJsonSchema();
  EXPECT_FALSE(plain["definitions"]["node"].contains("allOf"));
  EXPECT_FALSE(plain["definitions"]["node"]["properties"]["kind"].contains("examples"));
  for (Json* s : {&plain, &core}) {
    (*s)["definitions"].erase("onError");
    (*s)["definitions"]["node"]["properties"]["kind"].erase("description");
  }
  EXPECT_EQ(plain, core);
}

}  // namespace
}  // namespace oe::spec

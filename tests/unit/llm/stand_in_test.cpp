// The stand-in answers of the smoke run: minimal instances that satisfy the schema.
#include "oe/llm/stand_in.hpp"

#include <gtest/gtest.h>

namespace oe::llm {
namespace {

// Each schema with the instance it must give: the smallest value it accepts.
void expectInstance(const char* schema, const char* expected) {
  EXPECT_EQ(standInInstance(Json::parse(schema)), Json::parse(expected)) << schema;
}

TEST(StandIn, InstancesAreTheSmallestValuesTheSchemasAccept) {
  expectInstance(R"({"type":"object","required":["verdicts","score"],"properties":{
    "verdicts":{"type":"array","minItems":2,"items":{"type":"object","required":["keep","why"],
      "properties":{"keep":{"type":"boolean"},"why":{"type":"string","minLength":3}}}},
    "score":{"type":"integer","minimum":1,"maximum":5}}})",
                 R"({"verdicts":[{"keep":false,"why":"xxx"},{"keep":false,"why":"xxx"}],
    "score":1})");
  expectInstance(R"({"enum":["high","low"]})", R"("high")");
  expectInstance(R"({"const":{"a":1}})", R"({"a":1})");
  expectInstance(R"({"anyOf":[{"type":"number","exclusiveMinimum":3},{"type":"null"}]})", "4");
  expectInstance(R"({"type":["string","null"],"minLength":2})", R"("xx")");
  expectInstance(R"({"type":"number","maximum":-2})", "-2");
  expectInstance(R"({"definitions":{"item":{"type":"object","required":["id"],
    "properties":{"id":{"type":"string"}}}},"type":"array","minItems":1,
    "items":{"$ref":"#/definitions/item"}})",
                 R"([{"id":""}])");
  expectInstance(R"({"allOf":[{"type":"object","required":["a"],
    "properties":{"a":{"type":"number"}}},{"required":["b"],"properties":{"b":{"type":"boolean"}}}]})",
                 R"({"a":0,"b":false})");
}

TEST(StandIn, AnObjectWithoutRequiredGetsEveryProperty) {
  const Json v = standInInstance(Json::parse(
      R"({"type":"object","properties":{"summary":{"type":"string"},"n":{"type":"number"}}})"));
  EXPECT_EQ(v, Json::parse(R"({"summary":"","n":0})"));
}

TEST(StandIn, HostileSchemasAreBounded) {
  // A $ref to itself and a huge minItems end, small.
  const Json self = Json::parse(R"({"type":"object","required":["next"],
    "properties":{"next":{"$ref":"#"}}})");
  EXPECT_NO_THROW((void)standInInstance(self));
  const Json twice = Json::parse(R"({"type":"object","required":["a","b"],
    "properties":{"a":{"$ref":"#"},"b":{"$ref":"#"}}})");
  EXPECT_LT(standInInstance(twice).dump().size(), size_t{1} << 20) << "2^32 values otherwise";
  const Json big = standInInstance(Json::parse(R"({"type":"array","minItems":1e12})"));
  EXPECT_LE(big.size(), 16U);
  EXPECT_TRUE(standInInstance(Json("not a schema")).is_null());
  // Members of the wrong type (what the fuzzer found aborting): read as absent.
  EXPECT_EQ(standInInstance(Json::parse(
                R"({"type":"object","required":["a","b"],"properties":"object"})")),
            Json::parse(R"({"a":null,"b":null})"));
  EXPECT_EQ(standInInstance(Json::parse(R"({"type":"array","minItems":2,"items":"x"})")),
            Json::parse("[null,null]"));
  EXPECT_EQ(standInResponse(Json::parse(R"({"tools":[{"input_schema":3}]})"))["tool_calls"][0]
                ["input"],
            Json::object());
}

TEST(StandIn, ResponseCallsTheFirstToolOrAnswersText) {
  const Json with_tool = standInResponse(Json::parse(R"({"messages":[],"tools":[
    {"name":"structured_output","input_schema":{"type":"object","required":["x"],
    "properties":{"x":{"type":"string"}}}}]})"));
  ASSERT_EQ(with_tool["tool_calls"].size(), 1U);
  EXPECT_EQ(with_tool["tool_calls"][0]["name"], "structured_output");
  EXPECT_EQ(with_tool["tool_calls"][0]["input"], Json::parse(R"({"x":""})"));
  EXPECT_EQ(with_tool["usage"]["input_tokens"], 0);
  const Json text = standInResponse(Json::parse(R"({"messages":[]})"));
  EXPECT_FALSE(text.contains("tool_calls"));
  EXPECT_FALSE(text["text"].get<std::string>().empty());
  EXPECT_EQ(standInCliOutcome("{}")["exit_code"], 0);
}

TEST(StandIn, CliStdoutFollowsTheNodesOutputFormatAndSchema) {
  EXPECT_EQ(standInCliStdout(Json::parse(R"({"writes":["notes"]})")), "stand-in answer");
  EXPECT_EQ(Json::parse(standInCliStdout(Json::parse(
                R"({"output_format":"json","writes":["a"],"schema":{"type":"object",
                "required":["a"],"properties":{"a":{"type":"array","minItems":1}}}})"))),
            Json::parse(R"({"a":[null]})"));
  EXPECT_EQ(
      Json::parse(standInCliStdout(Json::parse(R"({"output_format":"json","writes":["a","b"]})"))),
      Json::parse(R"({"a":null,"b":null})"));
}

}  // namespace
}  // namespace oe::llm

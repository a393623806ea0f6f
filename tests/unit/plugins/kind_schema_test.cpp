// checkKindSchema: what the loader refuses in a kind's spec_schema_json (a schema that would
// take down whatever applies it), and what it must keep accepting (recursive schemas that
// descend into the value, the first-party kinds' schemas).
#include "oe/plugins/kind_schema.hpp"

#include <gtest/gtest.h>

#include <string>

namespace oe::plugins {
namespace {

std::string nestedItems(size_t depth) {
  std::string text;
  for (size_t i = 0; i < depth; ++i) {
    text += R"({"items":)";
  }
  text += "{}";
  text.append(depth, '}');
  return text;
}

std::string errorOf(std::string_view schema) {
  auto checked = checkKindSchema(schema);
  return checked ? std::string() : checked.error().message;
}

TEST(KindSchema, AnOrdinarySchemaPassesAndComesBackParsed) {
  auto checked = checkKindSchema(
      R"({"type":"object","properties":{"impl":{"type":"string"},)"
      R"("args":{"type":"object","additionalProperties":true}},"required":["impl"]})");
  ASSERT_TRUE(checked) << checked.error().message;
  EXPECT_EQ((*checked)["required"][0], "impl");
}

TEST(KindSchema, TextThatIsNotJsonIsRefused) {
  EXPECT_NE(errorOf("{type: object").find("is not JSON"), std::string::npos);
  EXPECT_NE(errorOf("").find("is not JSON"), std::string::npos);
  EXPECT_NE(errorOf(R"("a string")").find("is not a JSON object"), std::string::npos);
}

TEST(KindSchema, NestingBeyondTheLimitIsRefusedWithoutRecursing) {
  EXPECT_EQ(errorOf(nestedItems(30)), "");
  // 100,000 levels: a recursive parser, walker or destructor would overflow the stack here.
  const std::string deep = nestedItems(100000);
  EXPECT_NE(errorOf(deep).find("more than " + std::to_string(kMaxSchemaJsonDepth) + " levels"),
            std::string::npos);
  EXPECT_NE(errorOf(std::string(100000, '[') + std::string(100000, ']')).find("levels deep"),
            std::string::npos);
}

TEST(KindSchema, ARefCycleThatStaysOnTheSameValueIsRefused) {
  EXPECT_NE(errorOf(R"({"$ref":"#"})").find("refers to itself"), std::string::npos);
  const std::string two = errorOf(
      R"({"$ref":"#/definitions/a","definitions":{"a":{"$ref":"#/definitions/b"},)"
      R"("b":{"$ref":"#/definitions/a"}}})");
  EXPECT_NE(two.find(R"("#/definitions/a" -> "#/definitions/b" -> "#/definitions/a")"),
            std::string::npos)
      << two;
  // Through the combinators, which apply to the same value as well.
  EXPECT_NE(errorOf(R"({"anyOf":[{"$ref":"#"}]})").find("refers to itself"), std::string::npos);
  EXPECT_NE(errorOf(R"({"not":{"$ref":"#"}})").find("refers to itself"), std::string::npos);
  EXPECT_NE(errorOf(R"({"definitions":{"a":{"allOf":[{"$ref":"#/definitions/a"}]}},)"
                    R"("properties":{"x":{"$ref":"#/definitions/a"}}})")
                .find("refers to itself"),
            std::string::npos);
}

TEST(KindSchema, ARecursiveSchemaThatDescendsIntoTheValueIsKept) {
  EXPECT_EQ(errorOf(R"({"type":"object","properties":{"kids":{"type":"array",)"
                    R"("items":{"$ref":"#"}}}})"),
            "");
  EXPECT_EQ(errorOf(R"({"definitions":{"node":{"type":"object","additionalProperties":)"
                    R"({"$ref":"#/definitions/node"}}},"$ref":"#/definitions/node"})"),
            "");
}

TEST(KindSchema, ALongChainOfRefsCountsAsNesting) {
  // Shallow as a document, but 1,000 subschemas deep once the $refs are followed.
  std::string text = R"({"$ref":"#/definitions/d0","definitions":{)";
  for (int i = 0; i < 1000; ++i) {
    text += "\"d" + std::to_string(i) + "\":" +
            (i == 999 ? std::string("{}")
                      : R"({"properties":{"x":{"$ref":"#/definitions/d)" + std::to_string(i + 1) +
                            "\"}}}") +
            (i == 999 ? "" : ",");
  }
  text += "}}";
  EXPECT_NE(errorOf(text).find("subschemas"), std::string::npos);
}

TEST(KindSchema, ARefThatPointsNowhereOrAnUncompilableSchemaIsRefused) {
  EXPECT_NE(errorOf(R"({"$ref":"#/definitions/nope"})").find("points nowhere"), std::string::npos);
  EXPECT_NE(errorOf(R"({"$ref":"https://example.com/schema.json"})").find("draft-07"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"type":5})").find("draft-07"), std::string::npos);
}

}  // namespace
}  // namespace oe::plugins

// The experience kind's field rules: $.paths, the inputs and outputs mappings, and the messages
// for a node that names a field it does not read or write.
#include "mapping.hpp"

#include <gtest/gtest.h>

namespace oe::experience {
namespace {

Json node(Json extra) {
  Json n = {{"id", "child"}, {"kind", "experience"}, {"impl", "./sub/experience.yaml"}};
  for (auto& [key, value] : extra.items()) {
    n[key] = value;
  }
  return n;
}

TEST(ExperienceMapping, PathsParseAndLookUpMembersAndIndices) {
  auto path = parsePath("$.report.items.1");
  ASSERT_TRUE(path);
  EXPECT_EQ(path->segments, (std::vector<std::string>{"report", "items", "1"}));
  const Json state = {{"report", {{"items", {"a", "b"}}}}};
  EXPECT_EQ(lookUp(state, *path), Json("b"));
  EXPECT_FALSE(lookUp(state, *parsePath("$.report.items.2")));
  EXPECT_FALSE(lookUp(state, *parsePath("$.report.nope")));
  EXPECT_EQ(lookUp(state, *parsePath("$")), state);
  EXPECT_FALSE(parsePath("report"));
  EXPECT_FALSE(parsePath("$."));
  EXPECT_FALSE(parsePath("$.a..b"));
}

TEST(ExperienceMapping, DefaultsToIsolatedWithNoMappings) {
  auto read = readNodeSpec(node(Json::object()));
  ASSERT_TRUE(read.spec) << read.error;
  EXPECT_EQ(read.spec->scope, "isolated");
  EXPECT_TRUE(read.spec->inputs.empty());
  EXPECT_TRUE(read.spec->outputs.empty());
}

TEST(ExperienceMapping, MissingImplAndBadScopeAreRefusedByName) {
  Json no_impl = node(Json::object());
  no_impl.erase("impl");
  EXPECT_NE(readNodeSpec(no_impl).error.find("requires impl"), std::string::npos);
  EXPECT_NE(readNodeSpec(node({{"state_scope", "global"}})).error.find("state_scope must be"),
            std::string::npos);
}

TEST(ExperienceMapping, AnInputMustReadAFieldOfReads) {
  auto read = readNodeSpec(node({{"inputs", {{"question", "$.topic.text"}}}}));
  EXPECT_FALSE(read.spec);
  EXPECT_NE(read.error.find("inputs.question reads $.topic, which is not in the node's reads"),
            std::string::npos)
      << read.error;
  read = readNodeSpec(node({{"reads", {"topic"}}, {"inputs", {{"question", "$.topic.text"}}}}));
  ASSERT_TRUE(read.spec) << read.error;
}

TEST(ExperienceMapping, AnOutputMustBeAWriteAndAPath) {
  EXPECT_NE(
      readNodeSpec(node({{"outputs", {{"summary", "$.summary"}}}}))
          .error.find("outputs.summary writes \"summary\", which is not in the node's writes"),
      std::string::npos);
  EXPECT_NE(readNodeSpec(node({{"writes", {"summary"}}, {"outputs", {{"summary", "summary"}}}}))
                .error.find("must be a $.path"),
            std::string::npos);
}

TEST(ExperienceMapping, ChildArgsTakeBundleArgsThenInputs) {
  auto read = readNodeSpec(
      node({{"reads", {"topic"}},
            {"inputs", {{"question", "$.topic.text"}, {"depth", 2}, {"absent", "$.topic.none"}}}}));
  ASSERT_TRUE(read.spec) << read.error;
  const Json args = childArgs(*read.spec, {{"question", "old"}, {"run_arg", true}},
                              {{"topic", {{"text", "why?"}}}});
  EXPECT_EQ(args, Json({{"question", "why?"}, {"depth", 2}, {"run_arg", true}}));
}

TEST(ExperienceMapping, OutputsPickFromTheFinalStateAndNameWhatIsMissing) {
  auto read = readNodeSpec(
      node({{"writes", {"summary", "count"}},
            {"outputs", {{"summary", "$.report.summary"}, {"count", "$.report.count"}}}}));
  ASSERT_TRUE(read.spec) << read.error;
  std::vector<std::string> missing;
  const Json delta = outputDelta(*read.spec, {{"report", {{"summary", "ok"}}}}, missing);
  EXPECT_EQ(delta, Json({{"summary", "ok"}}));
  EXPECT_EQ(missing, std::vector<std::string>{"count ($.report.count)"});
}

}  // namespace
}  // namespace oe::experience

// `$.path` values and args templates: upstream expressions.test (reference §2.2).
#include "oe/expr/state_path.hpp"

#include <gtest/gtest.h>

#include "oe/expr/args_template.hpp"

namespace oe::expr {
namespace {

const Json kPathState = {
    {"pr_id", "PR-1"}, {"nested", {{"count", 3}}}, {"list", {1, 2, 3}}, {"title", "héllo"}};

Json resolveArgs(const Json& args, const Json& state = kPathState) {
  return ArgsTemplate::compile(args).resolve(JsonStateReader(state));
}

TEST(StatePath, ParsesOnlyWholeStringPaths) {
  EXPECT_TRUE(StatePath::parse("$.a").has_value());
  EXPECT_TRUE(StatePath::parse("$.a_b.c1._d").has_value());
  EXPECT_FALSE(StatePath::parse("$.items.0").has_value());
  EXPECT_FALSE(StatePath::parse("$.a[0]").has_value());
  EXPECT_FALSE(StatePath::parse("$.").has_value());
  EXPECT_FALSE(StatePath::parse("$.a.").has_value());
  EXPECT_FALSE(StatePath::parse("$.a..b").has_value());
  EXPECT_FALSE(StatePath::parse(" $.a").has_value());
  EXPECT_FALSE(StatePath::parse("$.a ").has_value());
  EXPECT_FALSE(StatePath::parse("$a").has_value());
  EXPECT_FALSE(StatePath::parse("hello").has_value());
  auto p = StatePath::parse("$.nested.count");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->field(), "nested");
  EXPECT_EQ(p->text(), "$.nested.count");
  EXPECT_TRUE(StatePath::looksLikePath("$.items.0"));
  EXPECT_FALSE(StatePath::looksLikePath("$.items"));
  EXPECT_FALSE(StatePath::looksLikePath("plain"));
}

TEST(StatePath, ResolvesAgainstState) {
  JsonStateReader reader(kPathState);
  EXPECT_EQ(StatePath::parse("$.pr_id")->resolve(reader), Json("PR-1"));
  EXPECT_EQ(StatePath::parse("$.nested.count")->resolve(reader), Json(3));
  EXPECT_EQ(StatePath::parse("$.missing")->resolve(reader), std::nullopt);
  EXPECT_EQ(StatePath::parse("$.nested.absent")->resolve(reader), std::nullopt);
  EXPECT_EQ(StatePath::parse("$.pr_id.deeper")->resolve(reader), std::nullopt);
  EXPECT_EQ(StatePath::parse("$.list.length")->resolve(reader), Json(3));
  EXPECT_EQ(StatePath::parse("$.title.length")->resolve(reader), Json(5));  // UTF-16 units
  EXPECT_EQ(StatePath::parse("$.nested.length")->resolve(reader), std::nullopt);
}

// expressions.test
TEST(ExpressionsTest, LiteralsPassThrough) {
  EXPECT_EQ(resolveArgs(42), Json(42));
  EXPECT_EQ(resolveArgs("hello"), Json("hello"));
  EXPECT_EQ(resolveArgs(nullptr), Json(nullptr));
  EXPECT_EQ(resolveArgs(true), Json(true));
}

TEST(ExpressionsTest, ResolvesPaths) {
  EXPECT_EQ(resolveArgs("$.pr_id"), Json("PR-1"));
  EXPECT_EQ(resolveArgs("$.nested.count"), Json(3));
}

TEST(ExpressionsTest, MissingPathsAreUndefined) {
  // Top level: undefined comes back as null (a Json has no undefined).
  EXPECT_EQ(resolveArgs("$.missing"), Json(nullptr));
  EXPECT_EQ(resolveArgs("$.nested.absent"), Json(nullptr));
  // Inside an object the member is dropped; inside an array the element is null.
  EXPECT_EQ(resolveArgs({{"a", "$.missing"}, {"b", 1}}), (Json{{"b", 1}}));
  EXPECT_EQ(resolveArgs(Json::array({"$.missing", 1})), Json::array({nullptr, 1}));
}

TEST(ExpressionsTest, ResolvesRecursively) {
  Json args = {{"id", "$.pr_id"}, {"extra", {{"n", "$.nested.count"}}}};
  EXPECT_EQ(resolveArgs(args), (Json{{"id", "PR-1"}, {"extra", {{"n", 3}}}}));
  EXPECT_EQ(resolveArgs(Json::array({"$.pr_id", "literal"})), Json::array({"PR-1", "literal"}));
  EXPECT_EQ(resolveArgs({{"deep", Json::array({Json::array({"$.nested"})})}}),
            (Json{{"deep", Json::array({Json::array({{{"count", 3}}})})}}));
  EXPECT_EQ(resolveArgs({{"not_a_path", "$.items.0"}, {"x", "$.a[0]"}}),
            (Json{{"not_a_path", "$.items.0"}, {"x", "$.a[0]"}}));
}

TEST(ExpressionsTest, ResolvedValuesAreCopies) {
  Json state = kPathState;
  Json resolved = resolveArgs("$.list", state);
  resolved.push_back(4);
  EXPECT_EQ(state["list"], Json({1, 2, 3}));
}

TEST(ArgsTemplate, CompiledOnceResolvedMany) {
  auto t = ArgsTemplate::compile({{"n", "$.count"}, {"k", "fixed"}});
  EXPECT_FALSE(t.isConstant());
  Json state = {{"count", 1}};
  JsonStateReader reader(state);
  EXPECT_EQ(t.resolve(reader), (Json{{"n", 1}, {"k", "fixed"}}));
  state["count"] = 2;
  EXPECT_EQ(t.resolve(reader), (Json{{"n", 2}, {"k", "fixed"}}));
  state.erase("count");
  EXPECT_EQ(t.resolve(reader), (Json{{"k", "fixed"}}));
}

TEST(ArgsTemplate, AViewResolvesLikeACompiledTemplateWithoutACopy) {
  const Json args = {{"n", "$.count"}, {"k", Json::array({"fixed", "$.missing"})}};
  const auto viewed = ArgsTemplate::view(args);
  EXPECT_EQ(&viewed.source(), &args);
  const Json state = {{"count", 3}};
  EXPECT_EQ(viewed.resolve(JsonStateReader(state)),
            ArgsTemplate::compile(args).resolve(JsonStateReader(state)));
  EXPECT_EQ(viewed.resolve(JsonStateReader(state)),
            (Json{{"n", 3}, {"k", Json::array({"fixed", nullptr})}}));
}

TEST(ArgsTemplate, ConstantArgs) {
  auto t = ArgsTemplate::compile({{"a", 1}, {"b", {"x", "$.notpath!"}}});
  EXPECT_TRUE(t.isConstant());
  EXPECT_EQ(t.resolve(JsonStateReader(kPathState)), t.source());
  EXPECT_TRUE(ArgsTemplate().isConstant());
}

}  // namespace
}  // namespace oe::expr

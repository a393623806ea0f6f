// when/until expressions: upstream evaluate.test (reference §2.3) plus oe's D8 additions.
#include "oe/expr/condition.hpp"

#include <gtest/gtest.h>

namespace oe::expr {
namespace {

const Json kState = {
    {"count", 3}, {"ratio", 0.5}, {"name", "alice"}, {"items", {1, 2, 3}}, {"flag", true}};

Json eval(std::string_view src, const Json& state = kState) {
  auto c = Condition::compile(src);
  EXPECT_TRUE(c.ok()) << src << ": " << (c.ok() ? "" : c.error().message);
  if (!c.ok()) {
    return Json(Json::value_t::discarded);
  }
  return c->evaluate(JsonStateReader(state));
}

bool test(std::string_view src, const Json& state = kState) {
  auto c = Condition::compile(src);
  EXPECT_TRUE(c.ok()) << src << ": " << (c.ok() ? "" : c.error().message);
  return c.ok() && c->test(JsonStateReader(state));
}

std::string compileError(std::string_view src) {
  auto c = Condition::compile(src);
  EXPECT_FALSE(c.ok()) << src << " compiled";
  return c.ok() ? std::string() : c.error().message;
}

// evaluate.test, one row per upstream assertion.
struct Case {
  const char* src;
  bool expected;
};

class UpstreamEvaluate : public ::testing::TestWithParam<Case> {};

TEST_P(UpstreamEvaluate, GivesTheUpstreamResult) {
  const Case& c = GetParam();
  EXPECT_EQ(eval(c.src), Json(c.expected)) << c.src;
  EXPECT_EQ(test(c.src), c.expected) << c.src;
}

INSTANTIATE_TEST_SUITE_P(
    EvaluateTest, UpstreamEvaluate,
    ::testing::Values(Case{"true", true}, Case{"false", false}, Case{"$.count > 2", true},
                      Case{"$.count >= 3", true}, Case{"$.count < 3", false},
                      Case{"$.count <= 3", true}, Case{"$.count == 3", true},
                      Case{"$.count != 3", false}, Case{"$.name == \"alice\"", true},
                      Case{"$.name == \"bob\"", false}, Case{"$.count > 0 && $.flag", true},
                      Case{"$.count > 100 || $.flag", true},
                      Case{"$.count > 100 || $.count < 0", false},
                      Case{"length($.items) > 2", true}, Case{"length($.items) == 3", true},
                      Case{"$.missing > 0", false}, Case{"$.missing == \"x\"", false}));

TEST(Condition, MalformedExpressionIsAnError) {
  EXPECT_NE(compileError("$.count >>>").find("column 10: Unexpected token \">\""),
            std::string::npos);
}

TEST(Condition, ExamplesFromShippedExperiences) {
  Json state = {{"findings", Json::array({{{"id", 1}}})},
                {"similar_issues", Json::array()},
                {"success", true},
                {"test_results", {1}}};
  EXPECT_TRUE(test("length($.findings) > 0", state));
  EXPECT_FALSE(test("length($.similar_issues) > 0", state));
  EXPECT_TRUE(test("$.success == true", state));
  EXPECT_TRUE(test("$.test_results.length > 0", state));
  EXPECT_FALSE(test("$.count >= 3", state));
}

TEST(Condition, MissingFieldSemantics) {
  EXPECT_TRUE(test("$.missing != 3"));          // l !== r
  EXPECT_FALSE(test("$.missing != $.absent"));  // undefined !== undefined is false
  EXPECT_FALSE(test("$.missing < 1"));
  EXPECT_FALSE(test("$.missing >= 0"));
  EXPECT_FALSE(test("$.missing == $.absent"));
  EXPECT_TRUE(eval("$.missing").is_discarded());
  EXPECT_FALSE(test("$.missing"));
  EXPECT_FALSE(test("$.count.deeper.still"));
}

TEST(Condition, JsComparisonSemantics) {
  Json state = {{"s", "10"}, {"n", 9},        {"a", "apple"},      {"b", "banana"},
                {"f", 3.0},  {"arr", {1, 2}}, {"obj", {{"k", 1}}}, {"nul", nullptr}};
  EXPECT_TRUE(test("$.a < $.b", state));        // strings compare lexicographically
  EXPECT_TRUE(test("$.s > $.n", state));        // string vs number: numeric
  EXPECT_FALSE(test("$.s == 10", state));       // == is strict: no coercion
  EXPECT_TRUE(test("$.f == 3", state));         // 3.0 and 3 are the same JS number
  EXPECT_FALSE(test("$.arr == $.obj", state));  // distinct objects
  EXPECT_TRUE(test("$.arr == $.arr", state));   // the same value is identical, as in JS
  EXPECT_FALSE(test("$.obj > 0", state));       // NaN compares false
  EXPECT_FALSE(test("$.obj <= 0", state));
  EXPECT_TRUE(test("$.nul == null", state));
  EXPECT_TRUE(test("$.nul >= 0", state));  // null is 0 in a relational comparison
  EXPECT_TRUE(test("'abc' == 'abc'", state));
  EXPECT_TRUE(test("-1 < 0", state));
  EXPECT_TRUE(test("1.5 == 1.5.7", state));  // parseFloat reads the longest number prefix
}

TEST(Condition, BooleanOperatorsReturnBooleans) {
  EXPECT_EQ(eval("$.name && $.count"), Json(true));
  EXPECT_EQ(eval("$.missing || 0"), Json(false));
  EXPECT_EQ(eval("$.name"), Json("alice"));  // a bare path yields the value itself
  EXPECT_EQ(eval("length($.name)"), Json(5));
  EXPECT_EQ(eval("length($.count)"), Json(0));
  EXPECT_EQ(eval("length()"), Json(0));
  EXPECT_EQ(eval("$.items.length"), Json(3));
  EXPECT_EQ(eval("$.items.0"), Json(1));  // digits are allowed in when-paths, like JS
}

TEST(Condition, Precedence) {
  EXPECT_TRUE(test("true || false && false"));  // && binds tighter than ||
  EXPECT_FALSE(test("(true || false) && false"));
  EXPECT_TRUE(test("$.count > 1 && ($.flag || $.missing)"));
}

TEST(Condition, TruthinessOfBareValues) {
  Json state = {{"zero", 0},      {"empty", ""}, {"arr", Json::array()}, {"obj", Json::object()},
                {"nul", nullptr}, {"s", "x"}};
  EXPECT_FALSE(test("$.zero", state));
  EXPECT_FALSE(test("$.empty", state));
  EXPECT_TRUE(test("$.arr", state));  // [] is truthy in JS
  EXPECT_TRUE(test("$.obj", state));
  EXPECT_FALSE(test("$.nul", state));
  EXPECT_TRUE(test("$.s", state));
}

// D8 additions.
TEST(Condition, NotOperator) {
  EXPECT_FALSE(test("!$.flag"));
  EXPECT_TRUE(test("!$.missing"));
  EXPECT_TRUE(test("!!$.flag"));
  EXPECT_TRUE(test("!($.count > 5)"));
  // `!` binds tighter than comparison: (!$.flag) == false.
  EXPECT_TRUE(test("!$.flag == false"));
  EXPECT_TRUE(test("$.count != 4"));  // `!=` is still one token
}

TEST(Condition, NullLiteral) {
  EXPECT_TRUE(test("$.missing == null"));  // a missing field counts as null for ==/!= null
  EXPECT_FALSE(test("$.missing != null"));
  EXPECT_TRUE(test("null == $.missing"));
  EXPECT_FALSE(test("$.count == null"));
  EXPECT_TRUE(test("$.count != null"));
  EXPECT_FALSE(test("null"));
  EXPECT_EQ(eval("null"), Json(nullptr));
}

TEST(Condition, TrailingTokensAreRejected) {
  EXPECT_EQ(compileError("true false"),
            "column 6: Unexpected token \"false\" after the end of the expression");
  EXPECT_EQ(compileError("$.a == 1 'x'"),
            "column 10: Unexpected token \"'x'\" after the end of the expression");
  EXPECT_EQ(compileError("(true))"),
            "column 7: Unexpected token \")\" after the end of the expression");
}

TEST(Condition, UpstreamErrorTextsWithColumns) {
  EXPECT_EQ(compileError("$.name == 'bob"),
            "column 11: Unterminated string in expression: $.name == 'bob");
  EXPECT_EQ(compileError("$.a = 1"), "column 5: Unexpected character \"=\" in expression: $.a = 1");
  EXPECT_EQ(compileError("$.a[0] > 1"),
            "column 4: Unexpected character \"[\" in expression: $.a[0] > 1");
  EXPECT_EQ(compileError("1, 2"), "column 2: Unexpected character \",\" in expression: 1, 2");
  EXPECT_EQ(compileError("$.a == é"),
            "column 8: Unexpected character \"é\" in expression: $.a == é");
  EXPECT_EQ(compileError("$.a > foo"), "column 7: Unexpected identifier \"foo\" without parens");
  EXPECT_EQ(compileError("$.count >"), "column 10: Unexpected end of expression");
  EXPECT_EQ(compileError(""), "column 1: Unexpected end of expression");
  EXPECT_EQ(compileError("(true"), "column 6: Unexpected end of expression");
  EXPECT_EQ(compileError("size($.items) > 1"), "column 1: Unknown function: size");
  EXPECT_EQ(compileError("(true false)"), "column 7: Expected \")\" but found \"false\"");
  EXPECT_EQ(compileError("== 3"), "column 1: Unexpected token \"==\"");
  EXPECT_EQ(compileError("$.a & $.b"),
            "column 5: Unexpected character \"&\" in expression: $.a & $.b");
}

TEST(Condition, DeepNestingIsAnErrorNotACrash) {
  std::string src(5000, '(');
  src += "true";
  src += std::string(5000, ')');
  EXPECT_NE(compileError(src).find("nested too deeply"), std::string::npos);
  std::string nots(5000, '!');
  nots += "true";
  EXPECT_NE(compileError(nots).find("nested too deeply"), std::string::npos);
}

TEST(Condition, ListsTheFieldsItReads) {
  auto c = Condition::compile("$.a.b > 1 && length($.c) > 0 || $.a == 2");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->fields(), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(c->source(), "$.a.b > 1 && length($.c) > 0 || $.a == 2");
}

TEST(Condition, CompiledOnceEvaluatedAgainstChangingState) {
  auto c = Condition::compile("$.count >= 3");
  ASSERT_TRUE(c.ok());
  Json state = {{"count", 0}};
  JsonStateReader reader(state);
  int iterations = 0;
  while (!c->test(reader) && iterations < 10) {
    state["count"] = state["count"].get<int>() + 1;
    ++iterations;
  }
  EXPECT_EQ(iterations, 3);
}

}  // namespace
}  // namespace oe::expr

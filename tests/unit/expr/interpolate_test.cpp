// Prompt interpolation: upstream llm-prompt.test (reference §2.1) and oe's D3 superset.
#include "oe/expr/interpolate.hpp"

#include <gtest/gtest.h>

namespace oe::expr {
namespace {

std::string ok(std::string_view tmpl, const Json& values, bool strict = true) {
  auto r = interpolate(tmpl, values, strict);
  EXPECT_TRUE(r.ok()) << tmpl << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : std::string();
}

// llm-prompt.test
TEST(LlmPromptTest, ReplacesAPlaceholder) {
  EXPECT_EQ(ok("hi {{name}}", {{"name", "Alice"}}), "hi Alice");
}

TEST(LlmPromptTest, NonStringsAsCompactJson) {
  EXPECT_EQ(ok("data: {{x}}", {{"x", {1, 2, 3}}}), "data: [1,2,3]");
}

TEST(LlmPromptTest, StrictMissingThrows) {
  auto r = interpolate("{{absent}}", Json::object(), true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "Prompt placeholder \"{{absent}}\" has no value in the input bundle");
  EXPECT_NE(r.error().message.find("placeholder \"{{absent}}\""), std::string::npos);
}

TEST(LlmPromptTest, NonStrictLeavesMissingVerbatim) {
  EXPECT_EQ(ok("{{absent}}", Json::object(), false), "{{absent}}");
}

TEST(LlmPromptTest, SeveralPlaceholders) {
  EXPECT_EQ(ok("{{a}} + {{b}} = {{c}}", {{"a", 1}, {"b", 2}, {"c", 3}}), "1 + 2 = 3");
}

TEST(LlmPromptTest, WhitespaceInsideBraces) { EXPECT_EQ(ok("{{ name }}", {{"name", "ok"}}), "ok"); }

// D3 superset.
TEST(Interpolate, DottedPathsAndInjectedKeys) {
  Json values = {{"$item", {{"id", 7}, {"tags", {"a", "b"}}}},
                 {"$index", 2},
                 {"$loop", "l1"},
                 {"$iter", 0},
                 {"$pipeline", "p"},
                 {"symptoms", {{"repo_path", "/src"}}}};
  EXPECT_EQ(ok("{{$item.id}}", values), "7");
  EXPECT_EQ(ok("{{$item}}", values), "{\"id\":7,\"tags\":[\"a\",\"b\"]}");
  EXPECT_EQ(ok("{{ $item.tags.1 }}/{{$item.tags.length}}", values), "b/2");
  EXPECT_EQ(ok("{{$index}} {{$iter}} {{$loop}} {{$pipeline}}", values), "2 0 l1 p");
  EXPECT_EQ(ok("cd {{symptoms.repo_path}}", values), "cd /src");
}

TEST(Interpolate, MissingDottedKey) {
  Json values = {{"$item", {{"id", 7}}}};
  EXPECT_EQ(ok("{{$item.name}} {{$item.id}}", values, false), "{{$item.name}} 7");
  auto r = interpolate("{{$item.name}}", values, true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "Prompt placeholder \"{{$item.name}}\" has no value in the input bundle");
}

TEST(Interpolate, JsFormattingOfValues) {
  Json values = {{"f", 3.0},   {"g", 0.5},    {"n", nullptr},
                 {"b", false}, {"s", "a\"b"}, {"o", {{"s", "a\"b"}}}};
  EXPECT_EQ(ok("{{f}} {{g}} {{n}} {{b}} {{s}}", values), "3 0.5 null false a\"b");
  EXPECT_EQ(ok("{{o}}", values), "{\"s\":\"a\\\"b\"}");
}

TEST(Interpolate, NotPlaceholders) {
  Json values = {{"a", "A"}};
  EXPECT_EQ(ok("{{ a b }} {{1a}} {{}} {a} {{a}", values), "{{ a b }} {{1a}} {{}} {a} {{a}");
  EXPECT_EQ(ok("{{{a}}}", values), "{A}");  // the regex finds the inner match
  EXPECT_EQ(ok("{{a.}}", values), "{{a.}}");
  EXPECT_EQ(ok("no placeholders", values), "no placeholders");
  EXPECT_EQ(ok("", values), "");
  EXPECT_EQ(ok("{{a}}{{a}}", values), "AA");
  EXPECT_EQ(ok("{{\n a \n}}", values), "A");
}

}  // namespace
}  // namespace oe::expr

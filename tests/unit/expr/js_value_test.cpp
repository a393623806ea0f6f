// JS semantics helpers: number text, ToNumber, stringify, UTF-16 length.
#include "oe/expr/js_value.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace oe::expr {
namespace {

TEST(JsValue, NumberToStringFollowsJs) {
  EXPECT_EQ(numberToString(3.0), "3");
  EXPECT_EQ(numberToString(-2.5), "-2.5");
  EXPECT_EQ(numberToString(0.1), "0.1");
  EXPECT_EQ(numberToString(1e21), "1e+21");
  EXPECT_EQ(numberToString(1e20), "100000000000000000000");
  EXPECT_EQ(numberToString(1e-7), "1e-7");
  EXPECT_EQ(numberToString(0.000001), "0.000001");
  EXPECT_EQ(numberToString(1.5e-10), "1.5e-10");
  EXPECT_EQ(numberToString(123456.789), "123456.789");
  EXPECT_EQ(numberToString(-0.0), "0");
  EXPECT_EQ(numberToString(NAN), "NaN");
  EXPECT_EQ(numberToString(-INFINITY), "-Infinity");
}

TEST(JsValue, StringToNumberFollowsJs) {
  EXPECT_EQ(stringToNumber(" 12 "), 12);
  EXPECT_EQ(stringToNumber(""), 0);
  EXPECT_EQ(stringToNumber("0x1A"), 26);
  EXPECT_EQ(stringToNumber("-1.5e2"), -150);
  EXPECT_EQ(stringToNumber(".5"), 0.5);
  EXPECT_TRUE(std::isinf(stringToNumber("-Infinity")));
  EXPECT_TRUE(std::isnan(stringToNumber("12px")));
  EXPECT_TRUE(std::isnan(stringToNumber("inf")));
  EXPECT_TRUE(std::isnan(stringToNumber("nan")));
  EXPECT_EQ(toNumber(Json::array({5})), 5);
  EXPECT_EQ(toNumber(Json::array()), 0);
  EXPECT_TRUE(std::isnan(toNumber(Json::array({1, 2}))));
  EXPECT_TRUE(std::isnan(toNumber(Json::object())));
}

TEST(JsValue, StringifyIsCompactJsJson) {
  EXPECT_EQ(stringify(Json::parse(R"({"b":[1,2.0,null],"a":"x\ny"})")),
            R"({"a":"x\ny","b":[1,2,null]})");
  EXPECT_EQ(stringify(Json(std::string("\x01"))), "\"\\u0001\"");
  EXPECT_EQ(stringify(Json(NAN)), "null");
  EXPECT_EQ(toJsString(Json::array({1, nullptr, "a", Json::array({2, 3})})), "1,,a,2,3");
}

TEST(JsValue, Utf16Length) {
  EXPECT_EQ(utf16Length("abc"), 3);
  EXPECT_EQ(utf16Length("é"), 1);
  EXPECT_EQ(utf16Length("😀"), 2);
}

}  // namespace
}  // namespace oe::expr

namespace oe::expr {
namespace {

TEST(StringifyIndented, MatchesJsonStringifyWithAnIndent) {
  Json v = Json::parse(R"({"b":[1,2.0,{"c":null}],"a":"x","e":[],"f":{}})");
  EXPECT_EQ(stringifyIndented(v, 2),
            "{\n  \"a\": \"x\",\n  \"b\": [\n    1,\n    2,\n    {\n      \"c\": null\n    }\n  ],\n"
            "  \"e\": [],\n  \"f\": {}\n}");
  EXPECT_EQ(stringifyIndented(v, 0), stringify(v));
  EXPECT_EQ(stringifyIndented(Json("s"), 2), "\"s\"");
}

TEST(StringifyIndented, MembersKeepTheOrderTheyAreGivenIn) {
  const Json utterance = "hi";
  const Json list = Json::parse(R"([1,{"z":1,"a":2}])");
  const Json mode = "strict";
  EXPECT_EQ(stringifyIndentedMembers({{"utterance", &utterance}, {"list", &list}, {"mode", &mode}}, 2),
            "{\n  \"utterance\": \"hi\",\n  \"list\": [\n    1,\n    {\n      \"a\": 2,\n"
            "      \"z\": 1\n    }\n  ],\n  \"mode\": \"strict\"\n}");
  EXPECT_EQ(stringifyIndentedMembers({{"b", &mode}, {"a", &utterance}}, 0),
            "{\"b\":\"strict\",\"a\":\"hi\"}");
  EXPECT_EQ(stringifyIndentedMembers({}, 2), "{}");
}

}  // namespace
}  // namespace oe::expr

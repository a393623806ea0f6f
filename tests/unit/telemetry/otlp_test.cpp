// The OTLP JSON encoding: what a collector checks (hex ids, 64-bit ints as strings, integer
// enums, the attribute shape, the envelope).
#include "oe/telemetry/otlp.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>

namespace oe::telemetry {
namespace {

using nlohmann::json;

TEST(OtlpIds, AreLowercaseHexOfTheRightLengthAndDiffer) {
  static const std::regex kTrace("^[0-9a-f]{32}$");
  static const std::regex kSpan("^[0-9a-f]{16}$");
  std::set<std::string> seen;
  IdGenerator ids;
  IdGenerator other;  // seeded apart: two runs' ids differ too
  for (int i = 0; i < 100; ++i) {
    const std::string trace = ids.traceId();
    const std::string span = ids.spanId();
    EXPECT_TRUE(seen.insert(other.spanId()).second);
    EXPECT_TRUE(std::regex_match(trace, kTrace)) << trace;
    EXPECT_TRUE(std::regex_match(span, kSpan)) << span;
    EXPECT_TRUE(seen.insert(trace).second);
    EXPECT_TRUE(seen.insert(span).second);
  }
}

Span sample() {
  Span span;
  span.trace_id = "0af7651916cd43dd8448eb211c80319c";
  span.span_id = "b7ad6b7169203331";
  span.name = "chat gpt-4o";
  span.kind = SpanKind::kClient;
  span.start_ns = 1764100000123456789ULL;  // beyond 2^53: exact only as a string
  span.end_ns = 1764100000987654321ULL;
  span.attributes = {{"gen_ai.provider.name", std::string("openai")},
                     {"gen_ai.usage.input_tokens", int64_t{9007199254740993}},
                     {"oe.llm.cost_usd", 0.25},
                     {"oe.cache.hit", false},
                     {"gen_ai.response.finish_reasons", std::vector<std::string>{"stop"}}};
  return span;
}

TEST(OtlpEncode, WritesTheEnvelopeWithResourceAndScope) {
  const json body = json::parse(encodeTraces({{"service.name", std::string("svc")}}, "1.2.3", {}));
  ASSERT_EQ(body["resourceSpans"].size(), 1u);
  const json& rs = body["resourceSpans"][0];
  EXPECT_EQ(rs["resource"]["attributes"][0],
            json({{"key", "service.name"}, {"value", {{"stringValue", "svc"}}}}));
  ASSERT_EQ(rs["scopeSpans"].size(), 1u);
  EXPECT_EQ(rs["scopeSpans"][0]["scope"], json({{"name", "oe"}, {"version", "1.2.3"}}));
  EXPECT_EQ(rs["scopeSpans"][0]["spans"], json::array());
}

TEST(OtlpEncode, TimesAreDecimalStringsAndEnumsIntegers) {
  const json body = json::parse(encodeTraces({}, "1", {sample()}));
  const json& s = body["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  EXPECT_EQ(s["traceId"], "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(s["spanId"], "b7ad6b7169203331");
  EXPECT_EQ(s["startTimeUnixNano"], "1764100000123456789");
  EXPECT_EQ(s["endTimeUnixNano"], "1764100000987654321");
  EXPECT_EQ(s["kind"], 3);
  EXPECT_EQ(s["status"], json({{"code", 0}}));
  EXPECT_FALSE(s.contains("parentSpanId"));  // a root span has none (not an empty string)
}

TEST(OtlpEncode, AttributesUseTheTypedValueShape) {
  const json body = json::parse(encodeTraces({}, "1", {sample()}));
  const json& a = body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"];
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a[0]["value"], json({{"stringValue", "openai"}}));
  EXPECT_EQ(a[1]["value"], json({{"intValue", "9007199254740993"}}));
  EXPECT_EQ(a[2]["value"], json({{"doubleValue", 0.25}}));
  EXPECT_EQ(a[3]["value"], json({{"boolValue", false}}));
  EXPECT_EQ(a[4]["value"],
            json({{"arrayValue", {{"values", json::array({{{"stringValue", "stop"}}})}}}}));
  EXPECT_EQ(a[4]["key"], "gen_ai.response.finish_reasons");
}

TEST(OtlpEncode, ChildCarriesItsParentAndAnErrorStatus) {
  Span child = sample();
  child.parent_span_id = "00f067aa0ba902b7";
  child.status = StatusCode::kError;
  child.status_message = "bad \xff byte";  // invalid UTF-8 from a plugin: replaced, not thrown
  const json body = json::parse(encodeTraces({}, "1", {child}));
  const json& s = body["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  EXPECT_EQ(s["parentSpanId"], "00f067aa0ba902b7");
  EXPECT_EQ(s["status"]["code"], 2);
  EXPECT_EQ(s["status"]["message"], "bad \xef\xbf\xbd byte");
}

TEST(OtlpClock, NowIsNanosecondsSinceTheEpoch) {
  const uint64_t now = nowUnixNanos();
  EXPECT_GT(now, 1700000000000000000ULL);  // after 2023-11, in nanoseconds
  EXPECT_LT(now, 4102444800000000000ULL);  // before 2100
}

}  // namespace
}  // namespace oe::telemetry

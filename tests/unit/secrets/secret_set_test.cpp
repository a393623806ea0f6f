// The secret set: references, substitution, redaction in every form, keyed digests.
#include "oe/secrets/secret_set.hpp"

#include <gtest/gtest.h>

namespace oe::secrets {
namespace {

const std::string kOpenQuote = "\xC2\xAB";
const std::string kCloseQuote = "\xC2\xBB";

TEST(SecretReferences, FindsWellFormedOnes) {
  const auto refs = findReferences("a ${secret:TOKEN} b ${secret:x_2}${secret:}${secret:9}");
  ASSERT_EQ(refs.size(), 2U);
  EXPECT_EQ(refs[0].name, "TOKEN");
  EXPECT_EQ(refs[0].begin, 2U);
  EXPECT_EQ(refs[0].end, 17U);
  EXPECT_EQ(refs[1].name, "x_2");
  EXPECT_TRUE(findReferences("${secret:A").empty());
  EXPECT_TRUE(findReferences("$secret:A}").empty());
  EXPECT_TRUE(findReferences(std::string(200, 'x')).empty());
}

TEST(SecretReferences, ReportsTheMalformedOne) {
  EXPECT_EQ(malformedAt("ok ${secret:A} and ${secret:B-C}"), 19U);
  EXPECT_EQ(malformedAt("${secret:A} ${secret:B}"), std::string_view::npos);
  EXPECT_EQ(malformedAt("${secret:" + std::string(129, 'a') + "}"), 0U);
  EXPECT_TRUE(isSecretName(std::string(128, 'a')));
  EXPECT_FALSE(isSecretName("1A"));
  EXPECT_FALSE(isSecretName(""));
}

TEST(SecretReferences, CollectsFromKeysAndValues) {
  std::vector<std::string> names;
  collectReferences(
      Json::parse(R"({"${secret:K}": ["${secret:B} ${secret:A}", 3, {"x": "${secret:B}"}]})"),
      names);
  EXPECT_EQ(names, (std::vector<std::string>{"A", "B", "K"}));
}

TEST(SecretSet, SubstitutesKnownNamesOnly) {
  SecretSet set;
  set.add("TOKEN", "s3cr\"et\\value");
  EXPECT_EQ(set.substitute("x=${secret:TOKEN};y=${secret:OTHER}", false),
            "x=s3cr\"et\\value;y=${secret:OTHER}");
  // Inside JSON text the value goes in escaped, so the document stays valid.
  const std::string json = set.substitute(R"({"a":"Bearer ${secret:TOKEN}"})", true);
  EXPECT_EQ(Json::parse(json)["a"], "Bearer s3cr\"et\\value");
  const Json substituted = set.substitute(Json::parse(R"({"k":["${secret:TOKEN}", 1]})"));
  EXPECT_EQ(substituted["k"][0], "s3cr\"et\\value");
}

TEST(SecretSet, SubstitutesOnlyWhatTheAuthorWrote) {
  SecretSet set;
  set.add("TOKEN", "value-1234");
  const Json source = Json::parse(R"({"auth": "Bearer ${secret:TOKEN}", "from_state": "$.x",
                                      "list": ["${secret:TOKEN}", "$.y"]})");
  Json bundle = Json::parse(R"({"auth": "Bearer ${secret:TOKEN}", "from_state": "${secret:TOKEN}",
                                "list": ["${secret:TOKEN}", "${secret:TOKEN}"],
                                "run_arg": "${secret:TOKEN}"})");
  set.substituteWritten(source, bundle);
  EXPECT_EQ(bundle["auth"], "Bearer value-1234");
  EXPECT_EQ(bundle["list"][0], "value-1234");
  // What the state, an edge or --args put there stays as it came.
  EXPECT_EQ(bundle["from_state"], "${secret:TOKEN}");
  EXPECT_EQ(bundle["list"][1], "${secret:TOKEN}");
  EXPECT_EQ(bundle["run_arg"], "${secret:TOKEN}");
}

TEST(SecretSet, RedactsRawAndEscapedForms) {
  SecretSet set;
  set.add("TOKEN", "ab\"cd\\ef");
  const std::string shown = kOpenQuote + "secret:TOKEN" + kCloseQuote;
  EXPECT_EQ(set.redacted("raw ab\"cd\\ef!"), "raw " + shown + "!");
  const std::string once = Json("ab\"cd\\ef").dump();
  EXPECT_EQ(set.redacted("{\"v\":" + once + "}"), "{\"v\":\"" + shown + "\"}");
  const std::string twice = Json(Json{{"v", "ab\"cd\\ef"}}.dump()).dump();
  EXPECT_FALSE(set.leaks(set.redacted(twice)));
  EXPECT_TRUE(set.leaks(twice));
  std::string untouched = "nothing here";
  set.redact(untouched);
  EXPECT_EQ(untouched, "nothing here");
}

TEST(SecretSet, LongerValueWinsOverOneItContains) {
  SecretSet set;
  set.add("SHORT", "abcd");
  set.add("LONG", "xxabcdxx");
  EXPECT_EQ(set.redacted("xxabcdxx abcd"), kOpenQuote + "secret:LONG" + kCloseQuote + " " +
                                               kOpenQuote + "secret:SHORT" + kCloseQuote);
}

TEST(SecretSet, RedactsJsonKeysAndValues) {
  SecretSet set;
  set.add("K", "hunter22");
  Json value = Json::parse(R"({"hunter22": {"list": ["a hunter22 b"]}})");
  set.redact(value);
  EXPECT_FALSE(set.leaks(value.dump()));
  EXPECT_TRUE(value.contains(kOpenQuote + "secret:K" + kCloseQuote));
}

TEST(SecretSet, AddMissingKeepsItsOwnValues) {
  SecretSet parent;
  parent.add("SHARED", "parent-value");
  parent.add("PARENT_ONLY", "only-in-parent");
  SecretSet child;
  child.add("SHARED", "child-value");
  child.addMissing(parent);
  EXPECT_EQ(*child.find("SHARED"), "child-value");
  EXPECT_EQ(*child.find("PARENT_ONLY"), "only-in-parent");
  EXPECT_EQ(child.redacted("only-in-parent"), kOpenQuote + "secret:PARENT_ONLY" + kCloseQuote);
  // The parent's value of a name the child has is redacted too, and never substituted.
  EXPECT_EQ(child.redacted("parent-value"), kOpenQuote + "secret:SHARED" + kCloseQuote);
  EXPECT_EQ(child.substitute("${secret:SHARED}", false), "child-value");
}

TEST(SecretSet, ARedactOnlyValueIsNeverSubstituted) {
  SecretSet set;
  set.addRedactOnly("OPENAI_API_KEY", "sk-test-1234");
  EXPECT_FALSE(set.empty());
  EXPECT_EQ(set.find("OPENAI_API_KEY"), nullptr);
  EXPECT_EQ(set.substitute("${secret:OPENAI_API_KEY}", false), "${secret:OPENAI_API_KEY}");
  EXPECT_EQ(set.redacted("key sk-test-1234"),
            "key " + kOpenQuote + "secret:OPENAI_API_KEY" + kCloseQuote);
  SecretSet child;
  child.addMissing(set);
  EXPECT_EQ(child.find("OPENAI_API_KEY"), nullptr);
  EXPECT_TRUE(child.leaks("sk-test-1234"));
}

TEST(SecretSet, EmptySetDoesNothing) {
  SecretSet set;
  set.add("EMPTY", "");
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.redacted("anything"), "anything");
  EXPECT_EQ(set.substitute("${secret:EMPTY}", false), "${secret:EMPTY}");
}

TEST(SecretSet, KeyedDigestIsStableAndKeyed) {
  SecretSet one;
  one.add("A", "value-1");
  SecretSet other;
  other.add("A", "value-2");
  const std::vector<std::string> names = {"A"};
  EXPECT_EQ(one.keyedDigest(names, "key"), one.keyedDigest(names, "key"));
  EXPECT_NE(one.keyedDigest(names, "key"), other.keyedDigest(names, "key"));
  EXPECT_NE(one.keyedDigest(names, "key"), one.keyedDigest(names, "other key"));
  EXPECT_EQ(one.keyedDigest(names, "key").size(), 64U);
  // RFC 4231 test case 2.
  EXPECT_EQ(hmacSha256Hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

}  // namespace
}  // namespace oe::secrets

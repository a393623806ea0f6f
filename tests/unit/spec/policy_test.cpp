// `policy:` (docs/policy.md): the model, a node's policy only narrowing the experience's, the
// policy in force, and what `oe validate` says about a policy.
#include "oe/spec/policy.hpp"

#include <gtest/gtest.h>

#include "oe/spec/validate.hpp"
#include "unit/spec/spec_test_support.hpp"

namespace oe::spec {
namespace {

using testing::loadOk;
using testing::testKinds;

std::string withPolicy(const std::string& experience_policy, const std::string& node_policy,
                       const std::string& kind = "tool") {
  std::string yaml = "name: t\nversion: 0.1.0\n" + experience_policy +
                     "state:\n  schema: {}\ngraph:\n  nodes:\n    - id: n\n      kind: " + kind +
                     "\n";
  yaml +=
      kind == "tool" ? "      impl: ./t.mjs\n" : "      provider: claude-code\n      prompt: p\n";
  yaml += node_policy;
  yaml += "  edges: []\n";
  return yaml;
}

std::vector<Diagnostic> diagnosticsOf(const std::string& yaml) {
  Experience exp = loadOk(yaml);
  return validateExperience(exp, testKinds(), false, /*check_files=*/false);
}

std::string joined(const std::vector<Diagnostic>& all, Severity severity) {
  std::string out;
  for (const auto& d : all) {
    if (d.severity == severity) {
      out += std::to_string(d.line) + ": " + d.message + "\n";
    }
  }
  return out;
}

TEST(Policy, ReadsEverySectionAndWritesItBackInTheSameShape) {
  const Json raw = Json::parse(R"({"enforce":"best_effort","fs":{"read":[".","/usr"],
    "write":["./out","$TMP"]},"network":{"allow":["api.anthropic.com:443","*.github.com"]},
    "env":["PATH","HOME"],"limits":{"cpu_seconds":600,"memory_mb":2048,"processes":256,
    "file_size_mb":512,"open_files":1024}})");
  const PolicySpec policy = policyFrom(raw);
  EXPECT_EQ(policy.required, false);
  EXPECT_EQ(policy.network, NetworkRule::kAllow);
  EXPECT_EQ(policy.allow.size(), 2u);
  EXPECT_EQ(policy.limits.at("processes"), 256);
  EXPECT_EQ(policyJson(policy), raw);
}

TEST(Policy, ANodeInheritsWhatItDoesNotSayAndItsOwnSectionsReplaceTheExperiences) {
  PolicySpec experience = policyFrom(Json::parse(
      R"({"fs":{"read":["."],"write":["./out"]},"network":"loopback","limits":{"memory_mb":2048}})"));
  PolicySpec node = policyFrom(Json::parse(R"({"network":"none","limits":{"memory_mb":512}})"));
  auto in_force = effectivePolicy(&experience, &node);
  ASSERT_TRUE(in_force);
  EXPECT_EQ(in_force->network, NetworkRule::kNone);
  EXPECT_EQ(in_force->limits.at("memory_mb"), 512);
  ASSERT_TRUE(in_force->fs_write);
  EXPECT_EQ(*in_force->fs_write, std::vector<std::string>{"./out"});
  EXPECT_FALSE(effectivePolicy(nullptr, nullptr));
  EXPECT_EQ(effectivePolicy(&experience, nullptr)->network, NetworkRule::kLoopback);
}

TEST(Policy, AllowRulesCoverNarrowerOnesOnly) {
  EXPECT_TRUE(allowCovers("*.github.com", "api.github.com"));
  EXPECT_TRUE(allowCovers("*.github.com", "*.api.github.com"));
  EXPECT_TRUE(allowCovers("*.github.com", "API.GitHub.com.:443"));
  EXPECT_FALSE(allowCovers("*.github.com", "github.com"));
  EXPECT_FALSE(allowCovers("*.github.com", "evilgithub.com"));
  EXPECT_TRUE(allowCovers("api.x.com", "api.x.com:443"));
  EXPECT_FALSE(allowCovers("api.x.com:443", "api.x.com"));  // 80 too
  EXPECT_FALSE(allowCovers("api.x.com", "api.x.com:8443"));
  EXPECT_EQ(allowEntryProblem("api.anthropic.com:443"), "");
  EXPECT_EQ(allowEntryProblem("*.github.com"), "");
  EXPECT_NE(allowEntryProblem("api.x.com:99999"), "");
  EXPECT_NE(allowEntryProblem("a.*.com"), "");
  EXPECT_NE(allowEntryProblem("http://api.x.com"), "");
}

TEST(Policy, PathsAreRelativeToTheExperienceFolderAndNormal) {
  EXPECT_EQ(policyPath("./out/", "/e"), "/e/out");
  EXPECT_EQ(policyPath("../shared", "/e/x"), "/e/shared");
  EXPECT_EQ(policyPath("/usr", "/e"), "/usr");
  EXPECT_EQ(policyPath("$TMP", "/e"), "$TMP");
}

TEST(PolicyValidate, ANodeWiderThanTheExperienceIsAnErrorNamingTheKeyAndTheLine) {
  const std::string yaml = withPolicy(
      "policy:\n  fs: { read: [\".\"], write: [\"./out\"] }\n  network: { allow: "
      "[\"*.github.com\"] }\n  env: [PATH]\n  limits: { memory_mb: 1024 }\n",
      "      policy:\n        enforce: best_effort\n        fs: { write: [\"./out/sub\", "
      "\"./other\"] }\n        network: full\n        env: [PATH, OPENAI_API_KEY]\n"
      "        limits: { memory_mb: 4096 }\n");
  const std::string errors = joined(diagnosticsOf(yaml), Severity::kError);
  EXPECT_NE(errors.find("enforce: best_effort is wider"), std::string::npos) << errors;
  EXPECT_NE(errors.find("\"./other\" is outside the experience's fs.write"), std::string::npos)
      << errors;
  EXPECT_EQ(errors.find("./out/sub"), std::string::npos) << errors;  // inside ./out: narrower
  EXPECT_NE(errors.find("network: full is wider than the experience's network: an allow-list"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("\"OPENAI_API_KEY\" is not in the experience's env"), std::string::npos)
      << errors;
  EXPECT_NE(errors.find("memory_mb: 4096 is more than the experience's 1024"), std::string::npos)
      << errors;
  EXPECT_NE(errors.find("17: node \"n\": \"./other\""), std::string::npos)
      << errors;  // the line of the node's fs.write
}

TEST(PolicyValidate, ANarrowerNodeAndNoPolicyAtAllAreClean) {
  EXPECT_EQ(joined(diagnosticsOf(withPolicy("", "")), Severity::kError), "");
  const std::string yaml =
      withPolicy("policy:\n  network: { allow: [\"*.github.com\", \"api.anthropic.com:443\"] }\n",
                 "      policy:\n        network: { allow: [\"api.github.com:443\"] }\n");
  EXPECT_EQ(joined(diagnosticsOf(yaml), Severity::kError), "");
}

TEST(PolicyValidate, MalformedHostsAndUnknownKeysAreErrors) {
  const std::string errors =
      joined(diagnosticsOf(withPolicy("policy:\n  network: { allow: [\"api.x.com:0\"] }\n", "")),
             Severity::kError);
  EXPECT_NE(errors.find("\"api.x.com:0\" has port \"0\""), std::string::npos) << errors;
  const LoadResult loaded = testing::load(withPolicy("policy:\n  fs: { exec: [\".\"] }\n", ""));
  std::string structure;
  for (const auto& d : loaded.diagnostics) {
    structure += d.format() + "\n";
  }
  EXPECT_NE(structure.find("policy.fs.exec: unknown key \"exec\""), std::string::npos) << structure;
}

TEST(PolicyValidate, ACodingCliWithoutNetworkIsWarnedThatItCannotReachItsProvider) {
  const std::string yaml = withPolicy("policy:\n  network: none\n", "", "cli-agent");
  const std::string warnings = joined(diagnosticsOf(yaml), Severity::kWarning);
  EXPECT_NE(warnings.find("cannot reach its provider"), std::string::npos) << warnings;
}

}  // namespace
}  // namespace oe::spec

// The confinement's JSON: every field read back as written, and each bad input refused with an
// error that names its field.
#include "oe/sandbox/confinement.hpp"

#include <gtest/gtest.h>

namespace oe::sandbox {
namespace {

TEST(ConfinementJson, RoundTripsEveryField) {
  Confinement c;
  c.enforce = Enforce::kBestEffort;
  c.fs = FsRules{{"/usr", "/etc"}, {"/work/repo", "$TMP"}, {"/work/repo/.git"}};
  c.network = NetworkRules{NetworkMode::kProxy, "/run/oe/proxy.sock"};
  c.env = EnvRules{{"PATH", "HOME"}, {{"LANG", "C.UTF-8"}}};
  c.limits.cpu_seconds = 60;
  c.limits.memory_mb = 2048;
  c.limits.processes = 256;
  c.limits.file_size_mb = 100;
  c.limits.open_files = 1024;
  const auto back = fromJson(toJson(c));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, c);
}

TEST(ConfinementJson, OnlyEnforceIsRequiredAndAbsentRulesStayAbsent) {
  const auto c = fromJson(Json::parse(R"({"enforce": "required"})"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->enforce, Enforce::kRequired);
  EXPECT_FALSE(c->fs.has_value());
  EXPECT_FALSE(c->env.has_value());
  EXPECT_EQ(c->network.mode, NetworkMode::kFull);
  EXPECT_EQ(c->limits, Limits{});
}

std::string errorOf(const char* json) {
  const auto c = fromJson(Json::parse(json));
  return c.ok() ? std::string("(accepted)") : c.error().message;
}

TEST(ConfinementJson, RefusesBadInputNamingTheField) {
  EXPECT_EQ(errorOf(R"({})"), "confinement.enforce: missing; say \"required\" or \"best_effort\"");
  EXPECT_EQ(errorOf(R"({"enforce": "sometimes"})"),
            "confinement.enforce: expected \"required\" or \"best_effort\", got \"sometimes\"");
  EXPECT_EQ(errorOf(R"({"enforce": "required", "fs": {"write": ["/a", "rel"]}})"),
            "confinement.fs.write[1]: \"rel\" is not an absolute path (nor \"$TMP\")");
  EXPECT_EQ(errorOf(R"({"enforce": "required", "fs": {"read": ["$TMP"]}})"),
            "confinement.fs.read[0]: \"$TMP\" is not an absolute path");
  EXPECT_EQ(errorOf(R"({"enforce": "required", "network": {"mode": "proxy"}})"),
            "confinement.network.proxy_socket: required when mode is \"proxy\"");
  EXPECT_EQ(errorOf(R"({"enforce": "required", "network": {"mode": "wifi"}})"),
            "confinement.network.mode: expected \"none\", \"loopback\", \"full\" or \"proxy\", "
            "got \"wifi\"");
  EXPECT_EQ(errorOf(R"({"enforce": "required", "limits": {"memory_mb": 0}})"),
            "confinement.limits.memory_mb: expected a positive integer");
  EXPECT_EQ(errorOf(R"({"enforce": "required", "limits": {"memory": 5}})"),
            "confinement.limits.memory: unknown key; expected one of cpu_seconds, memory_mb, "
            "processes, file_size_mb, open_files");
  EXPECT_EQ(errorOf(R"({"enforce": "required", "env": {"set": {"A": 1}}})"),
            "confinement.env.set.A: expected a string value under a name without '='");
  EXPECT_EQ(errorOf(R"({"enforce": "required", "filesystem": {}})"),
            "confinement.filesystem: unknown key; expected one of enforce, fs, network, env, "
            "limits");
  EXPECT_EQ(errorOf(R"([1])"), "confinement: expected a JSON object");
}

}  // namespace
}  // namespace oe::sandbox

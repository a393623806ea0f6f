// `oe doctor`'s checks as values: the verdict on each program's `--version`, the provider's
// environment, the state folder, and where a plugin folder on the search path comes from.
#include "oe/ops/doctor.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>

#include "support/temp_dir.hpp"

namespace oe::ops {
namespace {

using namespace std::chrono_literals;

VersionProbe answered(std::string text) {
  return VersionProbe{"/usr/bin/node", true, std::move(text)};
}

TEST(NodeCheck, PassesFromVersion20AndSaysWhatToDoOtherwise) {
  EXPECT_EQ(nodeCheck(answered("v20.11.1")).status, CheckStatus::kPass);
  EXPECT_EQ(nodeCheck(answered("v20.11.1")).detail, "v20.11.1 (/usr/bin/node)");
  const Check old = nodeCheck(answered("v18.2.0"));
  EXPECT_EQ(old.status, CheckStatus::kFail);
  EXPECT_NE(old.detail.find("older than 20"), std::string::npos) << old.detail;
  const Check missing = nodeCheck(VersionProbe{});
  EXPECT_EQ(missing.status, CheckStatus::kFail);
  EXPECT_NE(missing.detail.find("`node` is not on PATH"), std::string::npos) << missing.detail;
  const Check silent = nodeCheck(VersionProbe{"/usr/bin/node", false, "it hung"});
  EXPECT_EQ(silent.status, CheckStatus::kFail);
  EXPECT_EQ(silent.detail, "it hung; only .mjs/.js tools need it");
}

TEST(CliCheck, AMissingCliIsAWarningNamingItsProvider) {
  const Check missing = cliCheck("codex", "codex", VersionProbe{});
  EXPECT_EQ(missing.status, CheckStatus::kWarn);
  EXPECT_EQ(missing.detail, "`codex` is not on PATH; cli-agent nodes with provider: codex need it");
  const Check found = cliCheck("claude", "claude-code", answered("1.2.3 (Claude Code)"));
  EXPECT_EQ(found.status, CheckStatus::kPass);
  EXPECT_EQ(found.detail, "1.2.3 (Claude Code) (/usr/bin/node)");
}

TEST(ProviderCheck, NamesTheVariablesSetAndNeverTheirValues) {
  std::map<std::string, std::string> env = {{"OPENAI_API_KEY", "sk-secret"},
                                            {"OPENAI_BASE_URL", ""}};
  const auto lookup = [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  const Check set = providerCheck(lookup);
  EXPECT_EQ(set.status, CheckStatus::kPass);
  EXPECT_EQ(set.detail, "OPENAI_API_KEY set");
  env.clear();
  EXPECT_EQ(providerCheck(lookup).status, CheckStatus::kWarn);
}

TEST(StateFolderCheck, AFolderWithoutStateYetPassesAndAFileInItsPlaceFails) {
  test::TempDir dir;
  const Check fresh = stateFolderCheck(dir.path());
  EXPECT_EQ(fresh.status, CheckStatus::kPass);
  EXPECT_NE(fresh.detail.find("(created by the first run)"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / ".openexpertise"));  // the probe leaves nothing
  dir.write(".openexpertise", "not a folder");
  const Check blocked = stateFolderCheck(dir.path());
  EXPECT_EQ(blocked.status, CheckStatus::kFail);
  EXPECT_NE(blocked.detail.find("is not a folder"), std::string::npos) << blocked.detail;
  EXPECT_EQ(stateFolderCheck(dir / "nowhere").status, CheckStatus::kFail);
}

TEST(PluginFolderOrigin, NamesTheFirstRoleOfAFolder) {
  EXPECT_EQ(pluginFolderOrigin("/x/plugins", "/x/plugins", "/x/plugins"),
            "the experience's plugins/");
  EXPECT_EQ(pluginFolderOrigin("/b", "/x/plugins", "/a:/b"), "OE_PLUGIN_PATH");
  EXPECT_EQ(pluginFolderOrigin("/c", "/x/plugins", "/a:/b"), "beside this oe binary");
  EXPECT_EQ(pluginFolderOrigin("/c", "/x/plugins", nullptr), "beside this oe binary");
}

void script(const test::TempDir& dir, const std::string& name, const std::string& body) {
  const auto path = dir.write(name, "#!/bin/sh\n" + body + "\n");
  ::chmod(path.c_str(), 0755);
}

TEST(ProbeVersion, TakesTheFirstLineAndSaysHowAProgramFailed) {
  test::TempDir dir;
  script(dir, "fine", "printf '\\n  v22.1.0\\nmore\\n'");
  script(dir, "broken", "echo 'no config' >&2; exit 3");
  const std::string path = dir.path().string();
  const VersionProbe fine = probeVersion("fine", 10s, path.c_str());
  EXPECT_TRUE(fine.answered);
  EXPECT_EQ(fine.text, "v22.1.0");
  EXPECT_EQ(fine.path, (dir / "fine").string());
  const VersionProbe broken = probeVersion("broken", 10s, path.c_str());
  EXPECT_FALSE(broken.answered);
  EXPECT_NE(broken.text.find("`broken --version` ended with"), std::string::npos) << broken.text;
  EXPECT_NE(broken.text.find("no config"), std::string::npos) << broken.text;
  EXPECT_FALSE(probeVersion("absent", 10s, path.c_str()).path);
}

TEST(RunDoctor, CountsEveryCheckOnceAndReportsThemAsJson) {
  test::TempDir dir;
  const DoctorReport report = runDoctor(dir.path(), 5s);
  EXPECT_EQ(static_cast<size_t>(report.passed + report.warned + report.failed),
            report.checks.size());
  const Json json = report.toJson();
  EXPECT_EQ(json["checks"].size(), report.checks.size());
  EXPECT_EQ(json["summary"]["failed"], report.failed);
  ASSERT_FALSE(report.plugin_folders.empty());
  EXPECT_EQ(report.plugin_folders.front().path, dir / "plugins");
  EXPECT_EQ(report.plugin_folders.front().state, "missing");
}

TEST(SandboxChecks, SayWhatThisKernelEnforcesAndWhatAPolicyLosesWithoutIt) {
  sandbox::KernelFeatures full;
  full.landlock_abi = 7;
  full.user_ns = full.net_ns = full.mount_ns = full.pid_ns = true;
  auto checks = sandboxChecks(full, true, true, std::string("/usr/libexec/oe/oe-sandbox"));
  ASSERT_EQ(checks.size(), 5u);
  for (const Check& check : checks) {
    EXPECT_EQ(check.status, CheckStatus::kPass) << check.name << ": " << check.detail;
  }
  EXPECT_EQ(checks[1].detail, "ABI 7: policy fs rules enforced");

  sandbox::KernelFeatures bare;
  bare.landlock_note = "Landlock is not enabled in this kernel";
  checks = sandboxChecks(bare, false, true, std::nullopt);
  EXPECT_EQ(checks[0].status, CheckStatus::kFail);
  EXPECT_NE(checks[0].detail.find("reinstall oe"), std::string::npos);
  EXPECT_EQ(checks[1].status, CheckStatus::kWarn);
  EXPECT_NE(checks[1].detail.find("Landlock is not enabled in this kernel; a policy with fs: runs "
                                  "only under enforce: best_effort"),
            std::string::npos)
      << checks[1].detail;
  EXPECT_EQ(checks[2].status, CheckStatus::kWarn);
  EXPECT_NE(checks[2].detail.find("user, network, mount, pid"), std::string::npos)
      << checks[2].detail;
  EXPECT_EQ(checks[3].status, CheckStatus::kWarn);  // root without a per-namespace pid_max
  // Not root: RLIMIT_NPROC applies whatever the kernel's version.
  EXPECT_EQ(sandboxChecks(bare, false, false, std::nullopt)[3].status, CheckStatus::kPass);
}

}  // namespace
}  // namespace oe::ops

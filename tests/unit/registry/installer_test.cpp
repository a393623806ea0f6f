// `oe install`'s clone, check and placement without the CLI, against a repository the test makes
// with the real git: an install is kept only when the validator passes it, a refused one leaves
// nothing behind and brings the previous install back, and `oe installed` lists them.
#include "oe/registry/installer.hpp"

#include <gtest/gtest.h>

#include "oe/common/file.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace oe::registry {
namespace {

namespace fs = std::filesystem;

class Installer : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = dir_ / "work";
    fs::create_directories(work_);
    git({"init", "--quiet", work_.string()});
    dir_.write("work/experience.yaml", "name: flow\n");
    git({"-C", work_.string(), "add", "."});
    git({"-C", work_.string(), "commit", "--quiet", "-m", "v1"});
    fs::create_directories(dir_ / "proj");
  }

  void git(std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-c", "user.name=oe test", "-c", "user.email=t@example.com",
                               "-c", "init.defaultBranch=main"});
    auto r = test::runProcess(args, {{"GIT_CONFIG_NOSYSTEM", "1"}, {"HOME", dir_.path().string()}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  InstallRequest request(bool force = false) const {
    return InstallRequest{"./work", Source{work_.string(), "", "", "flow"}, dir_ / "proj", force,
                          std::chrono::milliseconds(60000)};
  }

  test::TempDir dir_;
  fs::path work_;
};

Validation valid(const fs::path& /*dir*/) {
  return {true, {Diagnostic{Severity::kWarning, "experience.yaml", 1, 1, "", "", "a warning"}}};
}

Validation invalid(const fs::path& /*dir*/) {
  return {true, {Diagnostic{Severity::kError, "experience.yaml", 2, 1, "", "", "broken"}}};
}

TEST_F(Installer, KeepsAValidCloneWithItsRecordAndWithoutItsGitFolder) {
  const InstallOutcome out = installExperience(request(), valid);
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.target, dir_ / "proj" / ".openexpertise" / "experiences" / "flow");
  EXPECT_EQ(out.shown, work_.string());
  EXPECT_EQ(out.commit.size(), 40U);
  ASSERT_EQ(out.diagnostics.size(), 1U);  // the warnings, for the front end to print
  EXPECT_TRUE(fs::is_regular_file(out.target / "experience.yaml"));
  EXPECT_FALSE(fs::exists(out.target / ".git"));
  const Json record = Json::parse(readFile(out.target / kInstallRecordFile).value_or("null"));
  EXPECT_EQ(record["spec"], "./work");
  EXPECT_EQ(record["commit"], out.commit);
  // Nothing else is left in the installs folder (the scratch clone is gone).
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(out.target.parent_path())) {
    ++entries;
  }
  EXPECT_EQ(entries, 1U);
}

TEST_F(Installer, AnExistingInstallIsReplacedOnlyWithForce) {
  ASSERT_TRUE(installExperience(request(), valid).ok());
  const InstallOutcome again = installExperience(request(), valid);
  EXPECT_NE(again.error.find("is already installed; pass --force"), std::string::npos)
      << again.error;
  EXPECT_TRUE(installExperience(request(/*force=*/true), valid).ok());
}

TEST_F(Installer, ARefusedInstallLeavesThePreviousOneInPlace) {
  const InstallOutcome first = installExperience(request(), valid);
  ASSERT_TRUE(first.ok()) << first.error;
  const InstallOutcome refused = installExperience(request(/*force=*/true), invalid);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.error.find("does not validate (1 error, above); nothing was installed and "
                               "the previous install is kept"),
            std::string::npos)
      << refused.error;
  ASSERT_EQ(refused.diagnostics.size(), 1U);
  EXPECT_TRUE(fs::is_regular_file(first.target / kInstallRecordFile));  // the previous one
}

TEST_F(Installer, ACloneWithoutAnExperienceIsRefused) {
  InstallRequest wrong = request();
  wrong.source.subpath = "nowhere";
  const InstallOutcome out = installExperience(wrong, valid);
  EXPECT_NE(out.error.find("no folder nowhere in"), std::string::npos) << out.error;
  EXPECT_FALSE(fs::exists(out.target));
}

TEST_F(Installer, ListsInstallsByNameWithTheirRecordAndValidity) {
  ASSERT_TRUE(installExperience(request(), valid).ok());
  dir_.write("proj/.openexpertise/experiences/by-hand/experience.yaml", "name: x\n");
  dir_.write("proj/.openexpertise/experiences/.clone-left/experience.yaml", "name: x\n");
  const Json list = listInstalls(dir_ / "proj", [](const fs::path& dir) {
    return dir.filename() == "flow" ? valid(dir) : invalid(dir);
  });
  ASSERT_EQ(list.size(), 2U) << list.dump();
  EXPECT_EQ(list[0]["name"], "by-hand");
  EXPECT_EQ(list[0]["source"], "");
  EXPECT_EQ(list[0]["valid"], false);
  EXPECT_EQ(list[0]["errors"], 1);
  EXPECT_EQ(list[1]["name"], "flow");
  EXPECT_EQ(list[1]["source"], work_.string());
  EXPECT_EQ(list[1]["valid"], true);
}

}  // namespace
}  // namespace oe::registry

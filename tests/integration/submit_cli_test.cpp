// `oe submit` through the binary, in a git checkout the test makes: origin on GitHub, a tag at
// HEAD (else the branch) and the experience in a subfolder give the registry entry; without
// --dry-run the address of a pre-filled issue follows. git only reads the checkout: no network.
#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class SubmitCli : public OeTest {
 protected:
  void SetUp() override {
    git({"init", "--quiet", (dir_.path() / "flows").string()}, dir_.path());
    dir_.write("flows/pipelines/greeter/experience.yaml",
               "name: greeter\nversion: 0.1.0\ndescription: Greets whoever asks.\n"
               "state:\n  schema:\n    greeting: { type: string }\n"
               "graph:\n  nodes:\n    - id: greet\n      kind: tool\n"
               "      impl: ./tools/greet.mjs\n      writes: [greeting]\n  edges: []\n");
    dir_.write("flows/pipelines/greeter/tools/greet.mjs",
               "export default async () => ({ state_delta: { greeting: 'hi' } });\n");
    git({"add", "."}, checkout());
    git({"commit", "--quiet", "-m", "greeter"}, checkout());
    git({"remote", "add", "origin", "https://github.com/acme/flows.git"}, checkout());
  }

  ProcessResult git(std::vector<std::string> args, const fs::path& cwd) {
    args.insert(args.begin(), {"git", "-c", "user.name=oe test", "-c", "user.email=t@example.com",
                               "-c", "init.defaultBranch=main"});
    auto r = runProcess(args, {{"GIT_CONFIG_NOSYSTEM", "1"}, {"HOME", dir_.path().string()}}, cwd);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  }

  fs::path checkout() { return dir_.path() / "flows"; }
  std::string experience() { return (checkout() / "pipelines" / "greeter").string(); }
};

TEST_F(SubmitCli, DryRunPrintsTheEntryFromTheCheckout) {
  git({"tag", "v1.2.0"}, checkout());
  auto r = oe({"submit", experience(), "--dry-run", "--tags", "demo, tool"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json entry = json::parse(r.out);
  const json expected = {{"name", "greeter"},
                         {"owner", "acme"},
                         {"repo", "flows"},
                         {"ref", "v1.2.0"},
                         {"description", "Greets whoever asks."},
                         {"tags", {"demo", "tool"}},
                         {"subpath", "pipelines/greeter"}};
  EXPECT_EQ(entry, expected) << r.out;
  EXPECT_EQ(r.out.find("issues/new"), std::string::npos);
}

TEST_F(SubmitCli, TheBranchWithoutATagAndTheFlagsOverride) {
  auto r = oe({"submit", experience(), "--dry-run", "--name", "hello", "--description", "Hi.",
               "--output", (dir_.path() / "entry.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json entry = json::parse(readFile(dir_.path() / "entry.json"));
  EXPECT_EQ(entry["ref"], "main");
  EXPECT_EQ(entry["name"], "hello");
  EXPECT_EQ(entry["description"], "Hi.");
  EXPECT_EQ(entry["subpath"], "pipelines/greeter");
  EXPECT_EQ(r.out, "");
}

TEST_F(SubmitCli, WithoutDryRunItPrintsTheIssueAddressAndOpensNothing) {
  auto r = oe({"submit", experience(), "--ref", "main"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("https://github.com/xingchengxu/OpenExpertise/issues/new?title="
                       "Registry%20submission%3A%20greeter&body="),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("%22owner%22%3A%20%22acme%22"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("oe opens no browser"), std::string::npos) << r.err;
}

TEST_F(SubmitCli, RefusesAnInvalidExperienceOrOneOutsideGit) {
  fs::create_directories(dir_.path() / "loose");
  fs::copy(experience(), dir_.path() / "loose", fs::copy_options::recursive);
  dir_.write("flows/pipelines/greeter/experience.yaml", "name: greeter\ngraph: 3\n");
  auto invalid = oe({"submit", experience(), "--dry-run"});
  EXPECT_EQ(invalid.exit_code, 1);
  EXPECT_NE(invalid.err.find("fix the errors above before submitting"), std::string::npos)
      << invalid.err;

  auto outside = oe({"submit", (dir_.path() / "loose").string(), "--dry-run"},
                    {{"GIT_CEILING_DIRECTORIES", dir_.path().string()}});
  EXPECT_EQ(outside.exit_code, 1);
  EXPECT_NE(outside.err.find("is not in a git checkout"), std::string::npos) << outside.err;
}

}  // namespace
}  // namespace oe::test

// `oe install`, `oe installed` and `oe registry` through the binary, against git repositories
// the test makes with the real git (a bare repository, a tag, a branch whose experience does not
// validate): file:// URLs, plain paths, @ref and --ref, subpaths, registry names, --force, and
// the refusals, each leaving nothing behind. No network.
#include <set>

#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr std::string_view kValid = R"(name: flow
version: 0.1.0
state:
  schema:
    greeting: { type: string }
graph:
  nodes:
    - id: greet
      kind: tool
      impl: ./tools/greet.mjs
      args: { name: World }
      writes: [greeting]
  edges: []
)";

constexpr std::string_view kTool =
    "export default async function greet(args) {\n"
    "  return { state_delta: { greeting: `hello, ${args.name}` } };\n"
    "}\n";

// A node writing a field the state does not declare: `oe validate` refuses it.
constexpr std::string_view kInvalid = R"(name: flow
version: 0.1.0
state:
  schema:
    greeting: { type: string }
graph:
  nodes:
    - id: greet
      kind: tool
      impl: ./tools/greet.mjs
      writes: [no_such_field]
  edges: []
)";

class InstallCli : public OeTest {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.path() / "proj");
    makeRemote();
  }

  ProcessResult git(std::vector<std::string> args, const fs::path& cwd) {
    args.insert(args.begin(), {"git", "-c", "user.name=oe test", "-c", "user.email=t@example.com",
                               "-c", "init.defaultBranch=main", "-c", "advice.detachedHead=false"});
    auto r = runProcess(args, {{"GIT_CONFIG_NOSYSTEM", "1"}, {"HOME", dir_.path().string()}}, cwd);
    EXPECT_EQ(r.exit_code, 0) << args[9] << ": " << r.err;
    return r;
  }

  std::string revParse(const std::string& rev) {
    auto r = git({"rev-parse", rev}, remote_);
    return r.out.substr(0, r.out.find('\n'));
  }

  // remote.git: v1 (greets World) tagged, then main greets Everyone, with nested/sub-flow (an
  // experience) and nested/empty (none); branch `broken` whose root experience does not validate.
  void makeRemote() {
    const fs::path work = dir_.path() / "work";
    remote_ = dir_.path() / "remote.git";
    git({"init", "--quiet", "--bare", remote_.string()}, dir_.path());
    git({"init", "--quiet", work.string()}, dir_.path());
    dir_.write("work/experience.yaml", kValid);
    dir_.write("work/tools/greet.mjs", kTool);
    dir_.write("work/nested/sub-flow/experience.yaml", kValid);
    dir_.write("work/nested/sub-flow/tools/greet.mjs", kTool);
    dir_.write("work/nested/empty/README.md", "no experience here\n");
    git({"add", "."}, work);
    git({"commit", "--quiet", "-m", "v1"}, work);
    git({"tag", "v1"}, work);
    std::string second(kValid);
    second.replace(second.find("World"), 5, "Everyone");
    dir_.write("work/experience.yaml", second);
    git({"commit", "--quiet", "-am", "greet everyone"}, work);
    git({"push", "--quiet", remote_.string(), "main", "v1"}, work);
    git({"checkout", "--quiet", "-b", "broken"}, work);
    dir_.write("work/experience.yaml", kInvalid);
    git({"commit", "--quiet", "-am", "broken"}, work);
    git({"push", "--quiet", remote_.string(), "broken"}, work);
  }

  ProcessResult install(std::vector<std::string> args,
                        std::map<std::string, std::string> env = {}) {
    args.insert(args.begin(), "install");
    args.insert(args.end(), {"--experience", (dir_.path() / "proj").string()});
    return oe(args, std::move(env));
  }

  fs::path installed(const std::string& name) {
    return dir_.path() / "proj" / ".openexpertise" / "experiences" / name;
  }

  json record(const std::string& name) {
    return json::parse(readFile(installed(name) / ".oe-install.json"));
  }

  json installedJson() {
    auto r = oe({"installed", "--json", "--experience", (dir_.path() / "proj").string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }

  // What is in .openexpertise/experiences/: no clone is left over after any outcome.
  std::set<std::string> installFolders() {
    std::set<std::string> out;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(installed("").parent_path(), ec)) {
      out.insert(entry.path().filename().string());
    }
    return out;
  }

  std::string fileUrl() { return "file://" + remote_.string(); }

  // A registry file for OE_REGISTRY.
  std::string writeRegistry(const json& doc) {
    return dir_.write("registry-" + std::to_string(++registries_) + ".json", doc.dump(2)).string();
  }

  fs::path remote_;
  int registries_ = 0;
};

TEST_F(InstallCli, InstallsFromAFileUrlAndRecordsTheCommit) {
  auto r = install({fileUrl()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("installed remote from " + fileUrl()), std::string::npos) << r.out;
  EXPECT_NE(readFile(installed("remote") / "experience.yaml").find("Everyone"), std::string::npos);
  EXPECT_TRUE(fs::exists(installed("remote") / "tools" / "greet.mjs"));
  EXPECT_FALSE(fs::exists(installed("remote") / ".git"));
  const json rec = record("remote");
  EXPECT_EQ(rec["commit"], revParse("main"));
  EXPECT_EQ(rec["source"], fileUrl());
  EXPECT_EQ(rec["spec"], fileUrl());
  EXPECT_EQ(rec["ref"], "");
  EXPECT_FALSE(rec["installed_at"].get<std::string>().empty());

  const json list = installedJson();
  ASSERT_EQ(list.size(), 1U) << list.dump();
  EXPECT_EQ(list[0]["name"], "remote");
  EXPECT_EQ(list[0]["commit"], revParse("main"));
  EXPECT_EQ(list[0]["source"], fileUrl());
  EXPECT_EQ(list[0]["valid"], true);
  auto text = oe({"installed", "--experience", (dir_.path() / "proj").string()});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("remote  " + fileUrl() + "  " + revParse("main").substr(0, 12)),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("valid"), std::string::npos);
  EXPECT_EQ(installFolders(), std::set<std::string>{"remote"});
}

TEST_F(InstallCli, APlainPathAtATagOrWithRef) {
  auto r = install({remote_.string() + "@v1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(record("remote")["commit"], revParse("v1^{commit}"));
  EXPECT_EQ(record("remote")["ref"], "v1");
  EXPECT_NE(readFile(installed("remote") / "experience.yaml").find("World"), std::string::npos);

  // --ref wins over @ref; a commit id is checked out after a full clone.
  r = install({remote_.string() + "@v1", "--ref", revParse("main"), "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(record("remote")["commit"], revParse("main"));
}

TEST_F(InstallCli, ASubpathIsNamedByItsLastSegment) {
  auto r = install({fileUrl() + "@v1", "--subpath", "nested/sub-flow"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(installed("sub-flow") / "experience.yaml"));
  EXPECT_FALSE(fs::exists(installed("sub-flow") / "nested"));
  EXPECT_EQ(record("sub-flow")["subpath"], "nested/sub-flow");
  EXPECT_EQ(record("sub-flow")["commit"], revParse("v1^{commit}"));
  EXPECT_EQ(installedJson()[0]["valid"], true);
}

TEST_F(InstallCli, AnExperienceThatDoesNotValidateIsRefusedAndLeavesNothing) {
  auto r = install({fileUrl() + "@broken"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no_such_field"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("does not validate"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was installed"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(installed("remote")));
  EXPECT_TRUE(installFolders().empty());
  EXPECT_TRUE(installedJson().empty());
}

TEST_F(InstallCli, AnExistingInstallNeedsForceAndSurvivesAFailedReplacement) {
  ASSERT_EQ(install({fileUrl(), "--ref", "v1"}).exit_code, 0);
  auto again = install({fileUrl()});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("already installed; pass --force"), std::string::npos) << again.err;
  EXPECT_EQ(record("remote")["commit"], revParse("v1^{commit}"));

  auto broken = install({fileUrl() + "@broken", "--force"});
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_NE(broken.err.find("the previous install is kept"), std::string::npos) << broken.err;
  EXPECT_EQ(record("remote")["commit"], revParse("v1^{commit}"));
  EXPECT_NE(readFile(installed("remote") / "experience.yaml").find("World"), std::string::npos);
  EXPECT_EQ(installFolders(), std::set<std::string>{"remote"});

  auto forced = install({fileUrl(), "--force"});
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_EQ(record("remote")["commit"], revParse("main"));
  EXPECT_EQ(installFolders(), std::set<std::string>{"remote"});
}

TEST_F(InstallCli, ClearErrors) {
  // A subpath that is not there, one without an experience.yaml.
  auto missing = install({fileUrl(), "--subpath", "nested/nope"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no folder nested/nope in " + fileUrl()), std::string::npos)
      << missing.err;
  auto empty = install({fileUrl(), "--subpath", "nested/empty"});
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_NE(empty.err.find("no experience.yaml in nested/empty of"), std::string::npos)
      << empty.err;
  // A subpath out of the clone moves nothing of the user's.
  auto out = install({fileUrl(), "--subpath", "../../proj"});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_NE(out.err.find("leads out of"), std::string::npos) << out.err;
  EXPECT_TRUE(fs::is_directory(dir_.path() / "proj" / ".openexpertise"));
  // git's own words for a repository that is not there.
  auto nowhere = install({"file://" + (dir_.path() / "nowhere.git").string()});
  EXPECT_EQ(nowhere.exit_code, 1);
  EXPECT_NE(nowhere.err.find("cannot clone"), std::string::npos) << nowhere.err;
  EXPECT_NE(nowhere.err.find("fatal:"), std::string::npos) << nowhere.err;
  // A tag that is not there.
  auto no_ref = install({fileUrl() + "@v9"});
  EXPECT_EQ(no_ref.exit_code, 1);
  EXPECT_NE(no_ref.err.find("v9"), std::string::npos) << no_ref.err;
  EXPECT_TRUE(installFolders().empty());
  // No git on PATH.
  fs::create_directories(dir_.path() / "empty-bin");
  auto no_git = install({fileUrl()}, {{"PATH", (dir_.path() / "empty-bin").string()}});
  EXPECT_EQ(no_git.exit_code, 1);
  EXPECT_NE(no_git.err.find("`git` is not on PATH"), std::string::npos) << no_git.err;
  // Not a repository, not a registry name.
  auto bad = install({"no-such-entry"}, {{"OE_REGISTRY", writeRegistry(json::array())}});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("no experience named \"no-such-entry\""), std::string::npos) << bad.err;
}

TEST_F(InstallCli, NothingInstalled) {
  auto r = oe({"installed", "--experience", (dir_.path() / "proj").string()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("nothing installed"), std::string::npos) << r.out;
  EXPECT_TRUE(installedJson().empty());
}

class RegistryCli : public InstallCli {};

TEST_F(RegistryCli, ListsTheEntriesAndInstallsByName) {
  const json entries = {{"experiences",
                         {{{"name", "flow"},
                           {"owner", "acme"},
                           {"repo", "flow"},
                           {"ref", "v1"},
                           {"description", "greets the world"},
                           {"tags", {"demo", "tool"}},
                           {"url", fileUrl()}},
                          {{"name", "sub"},
                           {"owner", "acme"},
                           {"repo", "flow"},
                           {"ref", "main"},
                           {"description", "a nested one"},
                           {"tags", json::array()},
                           {"subpath", "nested/sub-flow"},
                           {"url", fileUrl()}}}}};
  const std::map<std::string, std::string> env = {{"OE_REGISTRY", writeRegistry(entries)}};
  auto r = oe({"registry"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("flow  " + fileUrl() + "@v1  greets the world  [demo,tool]"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("sub  " + fileUrl() + "//nested/sub-flow@main  a nested one"),
            std::string::npos)
      << r.out;
  auto listed = oe({"registry", "--json"}, env);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const json list = json::parse(listed.out);
  ASSERT_EQ(list.size(), 2U);
  EXPECT_EQ(list[0]["name"], "flow");
  EXPECT_EQ(list[0]["owner"], "acme");
  EXPECT_EQ(list[0]["tags"], json({"demo", "tool"}));
  EXPECT_FALSE(list[0].contains("subpath"));
  EXPECT_EQ(list[1]["subpath"], "nested/sub-flow");

  // Installed under the entry's repo name, at the entry's ref.
  auto flow = install({"flow"}, env);
  ASSERT_EQ(flow.exit_code, 0) << flow.err;
  EXPECT_EQ(record("flow")["commit"], revParse("v1^{commit}"));
  EXPECT_EQ(record("flow")["spec"], "flow");
  auto sub = install({"sub"}, env);
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  EXPECT_EQ(record("sub-flow")["commit"], revParse("main"));
  EXPECT_EQ(installedJson().size(), 2U);
}

TEST_F(RegistryCli, TheShippedRegistryIsEmptyAndABrokenOneIsNamed) {
  auto shipped = oe({"registry", "--json"}, {{"OE_REGISTRY", ""}});
  ASSERT_EQ(shipped.exit_code, 0) << shipped.err;
  EXPECT_EQ(json::parse(shipped.out), json::array());
  auto text = oe({"registry"}, {{"OE_REGISTRY", ""}});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("has no entries"), std::string::npos) << text.out;

  const std::string file = writeRegistry(json::array({{{"name", "x"}, {"ref", "main"}}}));
  auto broken = oe({"registry"}, {{"OE_REGISTRY", file}});
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_NE(broken.err.find(file + ": entry 1 (x) has no \"owner\""), std::string::npos)
      << broken.err;
  auto absent = oe({"registry"}, {{"OE_REGISTRY", (dir_.path() / "none.json").string()}});
  EXPECT_EQ(absent.exit_code, 1);
  EXPECT_NE(absent.err.find("cannot read the registry"), std::string::npos) << absent.err;
}

}  // namespace
}  // namespace oe::test

// Where `oe install` gets an experience from: each spec form (gh:, a URL, a path, a registry
// name) resolved to the URL git clones, the ref, the folder inside the repository and the
// install's name; names that cannot be a folder refused with a message saying why.
#include "oe/registry/install.hpp"

#include <gtest/gtest.h>

#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

namespace oe::registry {
namespace {

TEST(InstallSpec, GithubSpecGivesUrlSubpathAndRef) {
  std::string error;
  const auto source = githubSource("owner/repo/sub/path@v1", error);
  ASSERT_TRUE(source) << error;
  EXPECT_EQ(source->url, "https://github.com/owner/repo.git");
  EXPECT_EQ(source->subpath, "sub/path");
  EXPECT_EQ(source->ref, "v1");
  EXPECT_FALSE(githubSource("owner", error));
  EXPECT_NE(error.find("gh:owner/repo[/sub/path][@ref]"), std::string::npos) << error;
}

TEST(InstallSpec, TheNameComesFromTheSubpathElseTheRepository) {
  std::string error;
  auto source = resolveSpec("gh:o/r/a/b@main", "", error);
  ASSERT_TRUE(source) << error;
  EXPECT_EQ(source->name, "b");
  EXPECT_EQ(source->ref, "main");

  source = resolveSpec("https://example.com/x/my-repo.git@v2", "", error);
  ASSERT_TRUE(source) << error;
  EXPECT_EQ(source->url, "https://example.com/x/my-repo.git");
  EXPECT_EQ(source->ref, "v2");
  EXPECT_EQ(source->name, "my-repo");

  // The `@` of git@host is no ref.
  source = resolveSpec("git@host:o/r.git", "", error);
  ASSERT_TRUE(source) << error;
  EXPECT_EQ(source->url, "git@host:o/r.git");
  EXPECT_EQ(source->ref, "");
  EXPECT_EQ(source->name, "r");

  // --subpath wins over the spec's.
  source = resolveSpec("gh:o/r/a", "sub/dir/", error);
  ASSERT_TRUE(source) << error;
  EXPECT_EQ(source->subpath, "sub/dir");
  EXPECT_EQ(source->name, "dir");
}

TEST(InstallSpec, ANameThatCannotBeAFolderIsRefused) {
  EXPECT_TRUE(installableName("ok-name.1"));
  EXPECT_TRUE(installableName("_x"));
  EXPECT_FALSE(installableName(""));
  EXPECT_FALSE(installableName("-x"));
  EXPECT_FALSE(installableName(".x"));
  EXPECT_FALSE(installableName("a b"));
  std::string error;
  EXPECT_FALSE(resolveSpec("gh:o/bad name", "", error));
  EXPECT_NE(error.find("cannot name an install folder"), std::string::npos) << error;
}

TEST(InstallSpec, APathMustBeAFolder) {
  test::TempDir dir;
  std::string error;
  const auto source = resolveSpec(dir.path().string(), "", error);
  ASSERT_TRUE(source) << error;
  EXPECT_EQ(source->url, dir.path().lexically_normal().string());
  EXPECT_EQ(source->name, dir.path().filename().string());
  EXPECT_FALSE(resolveSpec((dir / "missing/x").string(), "", error));
  EXPECT_NE(error.find("no git repository at"), std::string::npos) << error;
}

TEST(InstallSpec, ARegistryNameResolvesThroughTheRegistryFile) {
  test::TempDir dir;
  const auto file = dir.write("registry.json", R"([{"name": "demo", "owner": "o", "repo": "r",
      "ref": "v1", "subpath": "x/y"}, {"name": "mirror", "owner": "o", "repo": "m",
      "url": "file:///srv/m.git"}])");
  test::ScopedEnv env("OE_REGISTRY", file.string());
  std::string error;
  auto source = resolveSpec("demo", "", error);
  ASSERT_TRUE(source) << error;
  EXPECT_EQ(source->url, "https://github.com/o/r.git");
  EXPECT_EQ(source->subpath, "x/y");
  EXPECT_EQ(source->ref, "v1");
  EXPECT_EQ(source->name, "y");
  source = resolveSpec("mirror", "", error);
  ASSERT_TRUE(source) << error;
  EXPECT_EQ(source->url, "file:///srv/m.git");
  EXPECT_EQ(source->name, "m");  // the repository's name, not the mirror's
  EXPECT_FALSE(resolveSpec("nothing-by-that-name", "", error));
  EXPECT_NE(error.find("no experience named \"nothing-by-that-name\""), std::string::npos)
      << error;
}

TEST(InstallSpec, ACommitIdIsToldFromABranch) {
  EXPECT_TRUE(looksLikeCommit("abc1234"));
  EXPECT_TRUE(looksLikeCommit(std::string(40, 'f')));
  EXPECT_FALSE(looksLikeCommit("abc123"));
  EXPECT_FALSE(looksLikeCommit("v1.0.0"));
  EXPECT_FALSE(looksLikeCommit("ABC1234"));
  EXPECT_EQ(installsDir("/x"), std::filesystem::path("/x/.openexpertise/experiences"));
}

}  // namespace
}  // namespace oe::registry

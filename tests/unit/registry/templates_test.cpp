// `oe init`'s templates: only folders with an experience.yaml are templates, a template's
// description is read from its yaml, and scaffolding names the experience in every file, keeps
// a template's run state out and creates the folders an experience grows into.
#include "oe/registry/templates.hpp"

#include <gtest/gtest.h>

#include "support/temp_dir.hpp"

namespace oe::registry {
namespace {

TEST(Templates, OnlyFoldersWithAnExperienceAreListed) {
  test::TempDir dir;
  dir.write("b/experience.yaml", "name: b\ndescription: |\n  Second one.\n");
  dir.write("a/experience.yaml", "name: a\n");
  dir.write("not-one/README.md", "x");
  const auto templates = listTemplates(dir.path());
  ASSERT_EQ(templates.size(), 2U);
  EXPECT_EQ(templates.begin()->first, "a");
  EXPECT_EQ(templateDescription(dir / "b"), "Second one.");
  EXPECT_EQ(templateDescription(dir / "a"), "");
}

TEST(Templates, ScaffoldNamesTheExperienceAndLeavesRunStateOut) {
  test::TempDir dir;
  dir.write("t/experience.yaml", "name: __NAME__\n# __NAME__ again\n");
  dir.write("t/tools/x.mjs", "export default () => ({ who: '__NAME__' });\n");
  dir.write("t/.openexpertise/state.sqlite", "not copied");
  std::filesystem::create_directories(dir / "out");
  std::vector<std::filesystem::path> written;
  ASSERT_EQ(scaffold(dir / "t", dir / "out", "flow", written), std::nullopt);
  EXPECT_EQ(test::readFile(dir / "out/experience.yaml"), "name: flow\n# flow again\n");
  EXPECT_EQ(test::readFile(dir / "out/tools/x.mjs"), "export default () => ({ who: 'flow' });\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "out/.openexpertise"));
  EXPECT_TRUE(std::filesystem::is_directory(dir / "out/prompts"));
  EXPECT_EQ(written.size(), 2U);
}

TEST(Templates, APlainNameIsSafeAsAFolderAndInYaml) {
  EXPECT_TRUE(plainName("my_flow-2.x"));
  EXPECT_FALSE(plainName(""));
  EXPECT_FALSE(plainName("-x"));
  EXPECT_FALSE(plainName(".x"));
  EXPECT_FALSE(plainName("a: b"));
}

}  // namespace
}  // namespace oe::registry

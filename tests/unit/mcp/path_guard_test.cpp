// The roots of `oe mcp`: what resolves inside them, and `..`, absolute paths and symlinks that
// lead out of them, refused with a message naming the path and the roots.
#include "oe/mcp/path_guard.hpp"

#include <gtest/gtest.h>

#include "support/temp_dir.hpp"

namespace oe::mcp {
namespace {

namespace fs = std::filesystem;

class Guard : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "exp" / "sub");
    fs::create_directories(other_.path());
    fs::create_symlink(other_.path(), root_ / "escape");
    fs::create_symlink(root_ / "exp", root_ / "alias");
    auto guard = PathGuard::create({root_.path()}, root_.path());
    ASSERT_TRUE(guard) << guard.error().message;
    guard_.emplace(std::move(*guard));
  }
  test::TempDir root_;
  test::TempDir other_;
  std::optional<PathGuard> guard_;
};

TEST_F(Guard, PathsUnderTheRootResolve) {
  const fs::path real = fs::canonical(root_.path());
  EXPECT_EQ(*guard_->resolve("exp"), real / "exp");
  EXPECT_EQ(*guard_->resolve("exp/sub/../sub"), real / "exp" / "sub");
  EXPECT_EQ(*guard_->resolve((real / "exp").string()), real / "exp");
  EXPECT_EQ(*guard_->resolve("."), real);
  EXPECT_EQ(*guard_->resolve("alias"), real / "exp");  // a symlink staying inside is fine
  EXPECT_EQ(*guard_->resolve("not-yet/created"), real / "not-yet" / "created");
}

TEST_F(Guard, PathsLeadingOutAreRefused) {
  for (const std::string arg :
       {"..", "exp/../..", "/", "/etc/passwd", "escape", "escape/new", "alias/../../x"}) {
    auto resolved = guard_->resolve(arg);
    ASSERT_FALSE(resolved) << arg << " resolved to " << resolved->string();
    EXPECT_NE(resolved.error().message.find("outside the allowed roots"), std::string::npos);
    EXPECT_NE(resolved.error().message.find(arg), std::string::npos);
    EXPECT_NE(resolved.error().message.find("--root"), std::string::npos);
  }
  EXPECT_FALSE(guard_->resolve(""));
}

TEST_F(Guard, AnotherRootAllowsItsFolder) {
  auto guard = PathGuard::create({root_.path(), other_.path()}, root_.path());
  ASSERT_TRUE(guard);
  EXPECT_TRUE(guard->resolve("escape/new"));
  EXPECT_EQ(guard->roots().size(), 2U);
}

TEST_F(Guard, AMissingRootIsAnError) {
  auto guard = PathGuard::create({root_ / "nope"}, root_.path());
  ASSERT_FALSE(guard);
  EXPECT_NE(guard.error().message.find("nope"), std::string::npos);
}

TEST(IsWithin, ComparesWholeParts) {
  EXPECT_TRUE(isWithin("/a/b", "/a/b"));
  EXPECT_TRUE(isWithin("/a/b/c", "/a/b"));
  EXPECT_FALSE(isWithin("/a/bc", "/a/b"));
  EXPECT_FALSE(isWithin("/a", "/a/b"));
  EXPECT_TRUE(isWithin("/a/b/c", "/a/b/"));
  EXPECT_TRUE(isWithin("/x", "/"));
}

}  // namespace
}  // namespace oe::mcp

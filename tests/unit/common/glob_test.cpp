// Glob patterns of `cache.inputs`: what they match below a folder, and which patterns are refused.
#include "oe/common/glob.hpp"

#include <gtest/gtest.h>

#include "support/temp_dir.hpp"

namespace oe {
namespace {

std::vector<std::string> matches(const test::TempDir& dir, std::string_view pattern,
                                 size_t max = 100, bool* truncated = nullptr) {
  std::vector<std::string> out;
  for (const auto& p : globMatches(dir.path(), pattern, max, truncated)) {
    out.push_back(p.lexically_relative(dir.path()).generic_string());
  }
  return out;
}

TEST(Glob, SegmentsAndDoubleStar) {
  test::TempDir dir;
  dir.write("data/a.csv", "");
  dir.write("data/b.csv", "");
  dir.write("data/b.txt", "");
  dir.write("data/deep/c.csv", "");
  dir.write("data/.hidden.csv", "");
  dir.write(".openexpertise/cache/x.csv", "");
  EXPECT_EQ(matches(dir, "data/*.csv"), (std::vector<std::string>{"data/a.csv", "data/b.csv"}));
  EXPECT_EQ(matches(dir, "./data/?.txt"), (std::vector<std::string>{"data/b.txt"}));
  EXPECT_EQ(matches(dir, "data/**/*.csv"),
            (std::vector<std::string>{"data/a.csv", "data/b.csv", "data/deep/c.csv"}));
  EXPECT_EQ(matches(dir, "**/*.csv"),
            (std::vector<std::string>{"data/a.csv", "data/b.csv", "data/deep/c.csv"}));
  EXPECT_EQ(matches(dir, "data/.*.csv"), (std::vector<std::string>{"data/.hidden.csv"}));
  EXPECT_EQ(matches(dir, "data"), (std::vector<std::string>{"data"}));
  EXPECT_EQ(matches(dir, "data/**"), (std::vector<std::string>{"data"}));
  EXPECT_EQ(matches(dir, "data/[ab].csv"), (std::vector<std::string>{"data/a.csv", "data/b.csv"}));
  EXPECT_TRUE(matches(dir, "nothing/*.csv").empty());
}

TEST(Glob, StopsAtTheBoundAndSaysSo) {
  test::TempDir dir;
  for (int i = 0; i < 5; ++i) {
    dir.write("f" + std::to_string(i), "");
  }
  bool truncated = false;
  EXPECT_EQ(matches(dir, "f*", 3, &truncated).size(), 3u);
  EXPECT_TRUE(truncated);
  EXPECT_EQ(matches(dir, "f*", 5, &truncated).size(), 5u);
  EXPECT_FALSE(truncated);
}

TEST(Glob, RefusesPatternsOutsideTheFolder) {
  EXPECT_EQ(globProblem("data/*.csv"), "");
  EXPECT_EQ(globProblem("./x"), "");
  EXPECT_NE(globProblem(""), "");
  EXPECT_NE(globProblem("/etc/*").find("absolute"), std::string::npos);
  EXPECT_NE(globProblem("../x/*").find("leaves the experience folder"), std::string::npos);
  EXPECT_NE(globProblem("data/../../x").find(".."), std::string::npos);
  EXPECT_NE(globProblem(".openexpertise/cache/*").find("oe owns"), std::string::npos);
  EXPECT_NE(globProblem("data/[ab.csv").find("without its"), std::string::npos);
  EXPECT_NE(globProblem("./").find("experience folder itself"), std::string::npos);
}

}  // namespace
}  // namespace oe

// `oe submit`'s helpers: the owner/repo of each form of GitHub remote (and none for another host
// or a path deeper than owner/repo), and --tags split on commas.
#include "oe/registry/submit.hpp"

#include <gtest/gtest.h>

namespace oe::registry {
namespace {

TEST(Submit, EveryFormOfGithubRemoteGivesOwnerAndRepo) {
  using Pair = std::pair<std::string, std::string>;
  EXPECT_EQ(githubRepo("https://github.com/o/r.git"), Pair("o", "r"));
  EXPECT_EQ(githubRepo("https://github.com/o/r/"), Pair("o", "r"));
  EXPECT_EQ(githubRepo("git@github.com:o/r.git"), Pair("o", "r"));
  EXPECT_EQ(githubRepo("ssh://git@github.com/o/r"), Pair("o", "r"));
  EXPECT_FALSE(githubRepo("https://gitlab.com/o/r.git"));
  EXPECT_FALSE(githubRepo("https://github.com/o/r/extra"));
  EXPECT_FALSE(githubRepo("https://github.com/o"));
}

TEST(Submit, TagsAreSplitOnCommasWithoutBlanks) {
  EXPECT_EQ(splitTags(" a, b ,,c "), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(splitTags("").empty());
}

}  // namespace
}  // namespace oe::registry

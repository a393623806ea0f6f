// The registry file oe registry lists and oe install resolves names through: both shapes of the
// file, the url extension, and errors that name the file and the entry.
#include "oe/registry/registry.hpp"

#include <gtest/gtest.h>

#include "support/temp_dir.hpp"

namespace oe::registry {
namespace {

class RegistryFile : public ::testing::Test {
 protected:
  RegistryLoad load(std::string_view text) { return loadRegistry(dir_.write("r.json", text)); }
  test::TempDir dir_;
};

TEST_F(RegistryFile, ReadsTheObjectAndTheBareArray) {
  const auto object = load(R"({"experiences": [{"name": "a", "owner": "o", "repo": "r",
      "ref": "v1", "description": "d", "tags": ["x", "y"], "subpath": "s/a"}]})");
  ASSERT_TRUE(object.registry) << object.error;
  ASSERT_EQ(object.registry->entries.size(), 1U);
  const RegistryEntry& entry = object.registry->entries[0];
  EXPECT_EQ(entry.name, "a");
  EXPECT_EQ(entry.owner, "o");
  EXPECT_EQ(entry.repo, "r");
  EXPECT_EQ(entry.ref, "v1");
  EXPECT_EQ(entry.subpath, "s/a");
  EXPECT_EQ(entry.tags, (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(entry.url.empty());

  const auto array = load(R"([{"name": "b", "url": "file:///srv/b.git"}])");
  ASSERT_TRUE(array.registry) << array.error;
  EXPECT_EQ(array.registry->entries.at(0).url, "file:///srv/b.git");
  EXPECT_TRUE(load("[]").registry->entries.empty());
}

TEST_F(RegistryFile, TheJsonOfAnEntryHasSubpathAndUrlOnlyWhenSet) {
  RegistryEntry entry{"a", "o", "r", "main", "d", {"t"}, "", ""};
  const Json plain = registryEntryJson(entry);
  EXPECT_EQ(plain, Json::parse(R"({"name": "a", "owner": "o", "repo": "r", "ref": "main",
      "description": "d", "tags": ["t"]})"));
  entry.subpath = "x/a";
  entry.url = "https://git.example.com/r.git";
  const Json full = registryEntryJson(entry);
  EXPECT_EQ(full["subpath"], "x/a");
  EXPECT_EQ(full["url"], "https://git.example.com/r.git");
}

TEST_F(RegistryFile, ErrorsNameTheFileAndTheEntry) {
  const std::string file = (dir_.path() / "r.json").string();
  EXPECT_EQ(load(R"([{"name": "a", "owner": "o", "repo": "r"}, {"name": "b", "repo": "r"}])").error,
            file + ": entry 2 (b) has no \"owner\"");
  EXPECT_EQ(load(R"([{"owner": "o", "repo": "r"}])").error, file + ": entry 1 has no \"name\"");
  EXPECT_EQ(load(R"([{"name": "a", "owner": "o", "repo": "r", "tags": "x"}])").error,
            file + ": entry 1 (a): \"tags\" must be an array of strings");
  EXPECT_EQ(load(R"([{"name": "a", "owner": "o", "repo": 3}])").error,
            file + ": entry 1 (a): \"repo\" must be a string");
  EXPECT_EQ(load("{").error, file + " is not valid JSON");
  EXPECT_EQ(load(R"({"entries": []})").error,
            file + " must hold an array of entries, or {\"experiences\": [...]}");
  EXPECT_FALSE(loadRegistry(dir_.path() / "none.json").registry);
}

}  // namespace
}  // namespace oe::registry

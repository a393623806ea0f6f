// The fixtures exist where the loading tests expect them, and oe_add_plugin() really exports
// nothing but the entry symbol (hidden visibility + version script), for C and C++ plugins.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "abi/fixtures.hpp"
#include "abi/process.hpp"

namespace oe::abi_test {
namespace {

struct FixtureFile {
  const char* dir;
  const char* file;
};

void PrintTo(const FixtureFile& f, std::ostream* os) { *os << f.dir << "/" << f.file; }

class BuiltWithOeAddPlugin : public ::testing::TestWithParam<FixtureFile> {};

TEST_P(BuiltWithOeAddPlugin, ExportsOnlyTheEntrySymbol) {
  const std::filesystem::path library = fixtureFile(GetParam().dir, GetParam().file);
  ASSERT_TRUE(std::filesystem::is_regular_file(library)) << library << " was not built";
  std::string error;
  const std::vector<std::string> symbols = exportedSymbols(library, &error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(symbols, std::vector<std::string>{"oe_plugin_entry_v1"})
      << library << " leaks symbols: oe_add_plugin must export oe_plugin_entry_v1 alone";
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, BuiltWithOeAddPlugin,
    ::testing::Values(FixtureFile{"good", "good.so"}, FixtureFile{"wrong_major", "wrong_major.so"},
                      FixtureFile{"wrong_minor", "wrong_minor.so"},
                      FixtureFile{"entry_returns_null", "entry_returns_null.so"},
                      FixtureFile{"struct_too_small", "struct_too_small.so"},
                      FixtureFile{"init_fails", "init_fails.so"},
                      FixtureFile{"duplicate_kind", "dup_a.so"},
                      FixtureFile{"duplicate_kind", "dup_b.so"},
                      FixtureFile{"throws_in_invoke", "throws_in_invoke.so"},
                      FixtureFile{"c_upper", "c_upper.so"}),
    [](const ::testing::TestParamInfo<FixtureFile>& param_info) {
      std::string name = std::filesystem::path(param_info.param.file).stem().string();
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

TEST(Fixtures, MissingEntryIsALibraryWithoutTheEntrySymbol) {
  const std::filesystem::path library = fixtureFile("missing_entry", "not_a_plugin.so");
  std::string error;
  const std::vector<std::string> symbols = exportedSymbols(library, &error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_NE(std::find(symbols.begin(), symbols.end(), "oe_plugin_entry_v0"), symbols.end());
  EXPECT_EQ(std::find(symbols.begin(), symbols.end(), "oe_plugin_entry_v1"), symbols.end());
  DirectPlugin plugin(library);
  EXPECT_TRUE(plugin.loaded()) << plugin.error();
}

TEST(Fixtures, BogusSoIsNotALibrary) {
  const std::filesystem::path file = fixtureFile("not_a_library", "bogus.so");
  ASSERT_TRUE(std::filesystem::is_regular_file(file));
  DirectPlugin plugin(file);
  EXPECT_FALSE(plugin.loaded());
}

TEST(Fixtures, EachCaseFolderHoldsOnlyItsOwnFiles) {
  // A stray file in a case folder would change what `oe plugins` reports for that case. A
  // plugin the host loads has its manifest beside it; one it refuses has none (oe_add_plugin's
  // NO_MANIFEST).
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"good", {"good.so", "good.so.oe-manifest.json"}},
      {"wrong_major", {"wrong_major.so"}},
      {"wrong_minor", {"wrong_minor.so"}},
      {"entry_returns_null", {"entry_returns_null.so"}},
      {"struct_too_small", {"struct_too_small.so"}},
      {"init_fails", {"init_fails.so"}},
      {"duplicate_kind",
       {"dup_a.so", "dup_a.so.oe-manifest.json", "dup_b.so", "dup_b.so.oe-manifest.json"}},
      {"throws_in_invoke", {"throws_in_invoke.so", "throws_in_invoke.so.oe-manifest.json"}},
      {"missing_entry", {"not_a_plugin.so"}},
      {"not_a_library", {"bogus.so"}},
  };
  for (const auto& [dir, files] : expected) {
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(fixtureDir(dir))) {
      found.push_back(entry.path().filename().string());
    }
    std::sort(found.begin(), found.end());
    EXPECT_EQ(found, files) << dir;
  }
}

}  // namespace
}  // namespace oe::abi_test

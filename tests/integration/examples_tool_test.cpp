// The tool examples' READMEs promise a final state from `oe run`: python-tool from the source
// tree, native-tool from the copy the build stages with its compiled tools/checksum.so. The
// plugin tests drive their nodes one by one; these run them whole, through the real host.
#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using nlohmann::json;

class ToolExamples : public OeTest {
 protected:
  // Copies an example folder (without any .openexpertise/ left by a local run) into the temp
  // dir, so the run's state, logs and cache never land in the source or build tree.
  void copyFrom(const std::filesystem::path& example) {
    ASSERT_TRUE(std::filesystem::exists(example / "experience.yaml")) << example;
    for (const auto& entry : std::filesystem::directory_iterator(example)) {
      if (entry.path().filename() != ".openexpertise") {
        std::filesystem::copy(entry.path(), dir_.path() / entry.path().filename(),
                              std::filesystem::copy_options::recursive);
      }
    }
  }
};

TEST_F(ToolExamples, PythonToolRunsItsThreeExecutablesToTheSummary) {
  copyFrom(std::filesystem::path(OE_SOURCE_DIR) / "examples" / "python-tool");
  int code = -1;
  json out = runJson({}, &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["status"], "success");
  EXPECT_EQ(out["nodes"]["ran"], 3);
  EXPECT_EQ(out["final_state"]["word_count"], 24);
  EXPECT_EQ(out["final_state"]["top_words"][0], (json{{"word", "the"}, {"count", 4}}));
  EXPECT_EQ(out["final_state"]["summary"],
            "24 words, 13 distinct; most frequent: the (4), dog (3), fox (3)");
}

TEST_F(ToolExamples, NativeToolRunsTheBuiltLibraryInProcess) {
  const auto staged = std::filesystem::path(OE_BINARY_DIR) / "examples" / "native-tool";
  ASSERT_TRUE(std::filesystem::exists(staged / "tools" / "checksum.so"))
      << "build the example_native_checksum target";
  copyFrom(staged);
  int code = -1;
  json out = runJson({}, &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["status"], "success");
  EXPECT_EQ(out["final_state"], (json{{"length", 19}, {"crc32", "96c05ec1"}}));
  // A second run replays from the cache, the library's digest unchanged.
  json again = runJson({}, &code);
  EXPECT_EQ(again["nodes"]["cached"], 1);
}

}  // namespace
}  // namespace oe::test

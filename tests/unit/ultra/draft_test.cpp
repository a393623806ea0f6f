// The draft writer and reader: the path-traversal guard, pruning, slugify.
#include "oe/ultra/draft.hpp"

#include <gtest/gtest.h>

#include "oe/common/file.hpp"
#include "support/temp_dir.hpp"

namespace oe::ultra {
namespace {

namespace fs = std::filesystem;

Synthesis draft(std::vector<DraftFile> files) {
  Synthesis s;
  s.experience_yaml = "name: d\n";
  s.files = std::move(files);
  return s;
}

TEST(UltraDraft, GuardAcceptsRelativePathsAndNormalizesThem) {
  EXPECT_EQ(*guardedPath("tools/greet.mjs"), "tools/greet.mjs");
  EXPECT_EQ(*guardedPath("./prompts//a.md"), "prompts/a.md");
}

TEST(UltraDraft, GuardRefusesTraversalAbsoluteReservedAndEmptyPaths) {
  for (const char* bad :
       {"../x", "tools/../../x", "/etc/passwd", "~/x", "", ".", "./", "experience.yaml",
        "./analysis.json", ".openexpertise/state.sqlite", "a\\..\\b"}) {
    EXPECT_FALSE(guardedPath(bad).ok()) << bad;
  }
  EXPECT_FALSE(guardedPath(std::string_view("a\0b", 3)).ok());
  EXPECT_NE(guardedPath("../x").error().message.find("leaves the draft folder"), std::string::npos);
}

TEST(UltraDraft, WriteDraftWritesEveryFileAndRefusesAnUnsafeDraftWhole) {
  test::TempDir tmp;
  auto written = writeDraft(tmp / "d", draft({{"tools/a.mjs", "A"}, {"./prompts/p.md", "P"}}));
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_EQ(*written, (std::vector<std::string>{"experience.yaml", "tools/a.mjs", "prompts/p.md"}));
  EXPECT_EQ(*readFile(tmp / "d/tools/a.mjs"), "A");

  auto refused = writeDraft(tmp / "e", draft({{"ok.txt", "fine"}, {"../escape.txt", "bad"}}));
  ASSERT_FALSE(refused.ok());
  EXPECT_FALSE(fs::exists(tmp / "escape.txt"));
  EXPECT_FALSE(fs::exists(tmp / "e/ok.txt")) << "nothing is written when one path is unsafe";
  EXPECT_FALSE(writeDraft(tmp / "f", draft({{"a", "1"}, {"./a", "2"}})).ok()) << "duplicates";
}

TEST(UltraDraft, WriteDraftDoesNotFollowASymlinkOutOfTheFolder) {
  test::TempDir tmp;
  fs::create_directories(tmp / "d");
  fs::create_directories(tmp / "outside");
  fs::create_directory_symlink(tmp / "outside", tmp / "d/tools");
  auto refused = writeDraft(tmp / "d", draft({{"tools/a.mjs", "A"}}));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("symlink"), std::string::npos);
  EXPECT_FALSE(fs::exists(tmp / "outside/a.mjs"));
}

TEST(UltraDraft, ReadDraftReadsTheFilesAndAnalysisBackAndSkipsOesFolders) {
  test::TempDir tmp;
  ASSERT_TRUE(writeDraft(tmp / "d", draft({{"tools/a.mjs", "A"}, {"data/x.json", "[]"}})).ok());
  tmp.write("d/analysis.json", R"({"name":"d"})");
  tmp.write("d/.openexpertise/state.sqlite", "not a file of the draft");
  auto read = readDraft(tmp / "d");
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->synthesis.experience_yaml, "name: d\n");
  ASSERT_EQ(read->synthesis.files.size(), 2U);
  EXPECT_EQ(read->synthesis.files[0].path, "data/x.json");
  EXPECT_EQ(read->synthesis.files[1].content, "A");
  EXPECT_EQ(read->analysis["name"], "d");
  EXPECT_FALSE(readDraft(tmp / "missing").ok());
  tmp.write("d/analysis.json", "{not json");
  EXPECT_FALSE(readDraft(tmp / "d").ok());
}

TEST(UltraDraft, PruneRemovesFilesNoLongerListedButNeverTheYamlOrAnalysis) {
  test::TempDir tmp;
  ASSERT_TRUE(writeDraft(tmp / "d", draft({{"tools/a.mjs", "A"}, {"old/b.md", "B"}})).ok());
  tmp.write("d/analysis.json", "{}");
  pruneDraft(tmp / "d", {"tools/a.mjs", "old/b.md", "experience.yaml", "analysis.json", "../x"},
             draft({{"tools/a.mjs", "A2"}}));
  EXPECT_TRUE(fs::exists(tmp / "d/tools/a.mjs"));
  EXPECT_FALSE(fs::exists(tmp / "d/old/b.md"));
  EXPECT_FALSE(fs::exists(tmp / "d/old")) << "the folder it left empty goes too";
  EXPECT_TRUE(fs::exists(tmp / "d/experience.yaml"));
  EXPECT_TRUE(fs::exists(tmp / "d/analysis.json"));
}

TEST(UltraDraft, SlugifyAsUpstream) {
  EXPECT_EQ(slugify("Review Pull Requests!"), "review-pull-requests");
  EXPECT_EQ(slugify("--a__b--"), "a-b");
  EXPECT_EQ(slugify("???"), "draft");
  EXPECT_EQ(slugify(std::string(80, 'a')).size(), 60U);
}

TEST(UltraDraft, SynthesisRoundTripsThroughJson) {
  Synthesis s = draft({{"a", "1"}});
  s.next_steps = {"run it"};
  const Synthesis back = Synthesis::fromJson(s.toJson());
  EXPECT_EQ(back.experience_yaml, s.experience_yaml);
  ASSERT_EQ(back.files.size(), 1U);
  EXPECT_EQ(back.files[0].content, "1");
  EXPECT_EQ(back.next_steps, s.next_steps);
}

// What CI's fuzzer found: a member of the wrong type aborted the process (nlohmann's value()
// throws). A malformed answer reads as an empty draft, which the checks then refuse.
TEST(UltraDraft, MembersOfTheWrongTypeReadAsAbsent) {
  const Synthesis s = Synthesis::fromJson(Json::parse(
      R"({"experience_yaml": [{"patnt": ""}], "files": [{"path": 3, "content": {"a": 1}},
          "x", {"path": "b.txt", "content": "B"}], "next_steps": ["run", 4]})"));
  EXPECT_EQ(s.experience_yaml, "");
  ASSERT_EQ(s.files.size(), 2U);
  EXPECT_EQ(s.files[0].path, "");
  EXPECT_EQ(s.files[0].content, "");
  EXPECT_EQ(s.files[1].path, "b.txt");
  EXPECT_EQ(s.next_steps, std::vector<std::string>{"run"});
  EXPECT_EQ(Synthesis::fromJson(Json::array()).experience_yaml, "");
}

}  // namespace
}  // namespace oe::ultra

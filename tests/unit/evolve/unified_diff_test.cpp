// The unified-diff parser and applier: the shapes models send (fenced, wrong counts, missing
// leading spaces), offsets, new and deleted files, and every way a diff fails, with its message.
#include "oe/evolve/unified_diff.hpp"

#include <gtest/gtest.h>

namespace oe::evolve {
namespace {

const std::string kDiffYaml =
    "name: demo\n"
    "graph:\n"
    "  nodes:\n"
    "    - id: score\n"
    "      kind: tool\n"
    "      args: {threshold: 0.5}\n"
    "  edges: []\n";

std::string applyOne(std::string_view diff, const std::optional<std::string>& original,
                     std::vector<std::string>* notes = nullptr) {
  auto patches = parseUnifiedDiff(diff);
  EXPECT_TRUE(patches) << (patches ? "" : patches.error().message);
  if (!patches) {
    return {};
  }
  EXPECT_EQ(patches->size(), 1U);
  auto applied = applyFilePatch(patches->front(), original);
  EXPECT_TRUE(applied) << (applied ? "" : applied.error().message);
  if (!applied) {
    return {};
  }
  if (notes != nullptr) {
    *notes = applied->notes;
  }
  return applied->text.value_or("<deleted>");
}

TEST(UnifiedDiffTest, ReplacesALineAtItsHeaderPosition) {
  const std::string diff =
      "--- a/experience.yaml\n"
      "+++ b/experience.yaml\n"
      "@@ -4,3 +4,3 @@\n"
      "     - id: score\n"
      "       kind: tool\n"
      "-      args: {threshold: 0.5}\n"
      "+      args: {threshold: 0.7}\n";
  auto patches = parseUnifiedDiff(diff);
  ASSERT_TRUE(patches);
  EXPECT_EQ(patches->front().old_path, "experience.yaml");
  EXPECT_EQ(patches->front().new_path, "experience.yaml");
  EXPECT_EQ(patches->front().hunks.front().old_start, 4U);
  std::vector<std::string> notes;
  const std::string out = applyOne(diff, kDiffYaml, &notes);
  EXPECT_NE(out.find("threshold: 0.7"), std::string::npos);
  EXPECT_EQ(out.find("threshold: 0.5"), std::string::npos);
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(out.size(), kDiffYaml.size());
}

TEST(UnifiedDiffTest, FindsAHunkWhoseHeaderLineIsOffAndSaysByHowMuch) {
  const std::string diff =
      "--- a/experience.yaml\n"
      "+++ b/experience.yaml\n"
      "@@ -1,2 +1,2 @@\n"
      "       kind: tool\n"
      "-      args: {threshold: 0.5}\n"
      "+      args: {threshold: 0.9}\n";
  std::vector<std::string> notes;
  const std::string out = applyOne(diff, kDiffYaml, &notes);
  EXPECT_NE(out.find("threshold: 0.9"), std::string::npos);
  ASSERT_EQ(notes.size(), 1U);
  EXPECT_NE(notes[0].find("hunk 1"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("offset +4 lines"), std::string::npos) << notes[0];
}

TEST(UnifiedDiffTest, ContextMismatchNamesTheHunkTheLineAndBothTexts) {
  const std::string diff =
      "--- a/experience.yaml\n"
      "+++ b/experience.yaml\n"
      "@@ -5,2 +5,2 @@\n"
      "       kind: agent\n"
      "-      args: {threshold: 0.5}\n"
      "+      args: {threshold: 0.9}\n";
  auto patches = parseUnifiedDiff(diff);
  ASSERT_TRUE(patches);
  auto applied = applyFilePatch(patches->front(), kDiffYaml);
  ASSERT_FALSE(applied);
  const std::string& message = applied.error().message;
  EXPECT_NE(message.find("hunk 1 (@@ -5,2 +5,2 @@) of experience.yaml does not apply"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("line 5 is `      kind: tool`"), std::string::npos) << message;
  EXPECT_NE(message.find("expects `      kind: agent`"), std::string::npos) << message;
}

TEST(UnifiedDiffTest, RecountsABodyWhoseHeaderCountsAreWrongAndToleratesLostSpaces) {
  // Models miscount and editors strip the space of an empty context line.
  const std::string original = "a\n\nb\nc\n";
  const std::string diff =
      "--- a/f.txt\n"
      "+++ b/f.txt\n"
      "@@ -1,9 +1,1 @@\n"
      " a\n"
      "\n"
      "-b\n"
      "+B\n";
  EXPECT_EQ(applyOne(diff, original), "a\n\nB\nc\n");
}

TEST(UnifiedDiffTest, DropsAMarkdownFenceAndGitPreamble) {
  const std::string diff =
      "```diff\n"
      "diff --git a/experience.yaml b/experience.yaml\n"
      "index 1234567..89abcde 100644\n"
      "--- a/experience.yaml\n"
      "+++ b/experience.yaml\n"
      "@@ -7 +7 @@\n"
      "-  edges: []\n"
      "+  edges: [] # none\n"
      "```\n";
  const std::string out = applyOne(diff, kDiffYaml);
  EXPECT_NE(out.find("edges: [] # none\n"), std::string::npos) << out;
}

TEST(UnifiedDiffTest, CreatesANewFileFromDevNull) {
  const std::string diff =
      "--- /dev/null\n"
      "+++ b/prompts/review.md\n"
      "@@ -0,0 +1,2 @@\n"
      "+Review {{item}}.\n"
      "+Be brief.\n";
  auto patches = parseUnifiedDiff(diff);
  ASSERT_TRUE(patches);
  EXPECT_TRUE(patches->front().createsFile());
  EXPECT_EQ(patches->front().target(), "prompts/review.md");
  EXPECT_EQ(applyOne(diff, std::nullopt), "Review {{item}}.\nBe brief.\n");
  auto again = applyFilePatch(patches->front(), std::string("x\n"));
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("exists already"), std::string::npos);
}

TEST(UnifiedDiffTest, DeletesAFileAndRefusesToPatchAMissingOne) {
  const std::string diff =
      "--- a/old.txt\n"
      "+++ /dev/null\n"
      "@@ -1,2 +0,0 @@\n"
      "-one\n"
      "-two\n";
  EXPECT_EQ(applyOne(diff, std::string("one\ntwo\n")), "<deleted>");
  auto patches = parseUnifiedDiff("--- a/missing.txt\n+++ b/missing.txt\n@@ -1 +1 @@\n-x\n+y\n");
  ASSERT_TRUE(patches);
  auto applied = applyFilePatch(patches->front(), std::nullopt);
  ASSERT_FALSE(applied);
  EXPECT_EQ(applied.error().message, "missing.txt does not exist");
}

TEST(UnifiedDiffTest, KeepsAndChangesTheFinalNewlineAsTheMarkerSays) {
  const std::string diff =
      "--- a/f\n"
      "+++ b/f\n"
      "@@ -1,2 +1,2 @@\n"
      " a\n"
      "-b\n"
      "+c\n"
      "\\ No newline at end of file\n";
  EXPECT_EQ(applyOne(diff, std::string("a\nb\n")), "a\nc");
  EXPECT_EQ(applyOne("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+z\n", std::string("a\nb")), "z\nb");
}

TEST(UnifiedDiffTest, AppliesSeveralHunksInOrderAndRefusesOverlap) {
  const std::string original = "1\n2\n3\n4\n5\n6\n7\n8\n";
  const std::string diff =
      "--- a/n\n"
      "+++ b/n\n"
      "@@ -1,2 +1,3 @@\n"
      " 1\n"
      "+1.5\n"
      " 2\n"
      "@@ -7,2 +8,1 @@\n"
      " 7\n"
      "-8\n";
  EXPECT_EQ(applyOne(diff, original), "1\n1.5\n2\n3\n4\n5\n6\n7\n");
  // The second hunk's context is only before the first hunk's end.
  auto patches = parseUnifiedDiff(
      "--- a/n\n+++ b/n\n@@ -3,2 +3,2 @@\n 3\n-4\n+four\n@@ -1,2 +1,2 @@\n 1\n-2\n+two\n");
  ASSERT_TRUE(patches);
  auto applied = applyFilePatch(patches->front(), original);
  ASSERT_FALSE(applied);
  EXPECT_NE(applied.error().message.find("hunk 2"), std::string::npos) << applied.error().message;
}

TEST(UnifiedDiffTest, MalformedHunkHeadersAreNamedWithTheirLine) {
  for (const std::string header :
       {"@@ -a,1 +1,1 @@", "@@ -1,1 +1,1", "@@ 1,1 1,1 @@", "@@ -1,1 @@", "@@ -1, +1 @@"}) {
    auto patches = parseUnifiedDiff("--- a/f\n+++ b/f\n" + header + "\n-x\n+y\n");
    ASSERT_FALSE(patches) << header;
    EXPECT_NE(patches.error().message.find("line 3: malformed hunk header"), std::string::npos)
        << patches.error().message;
  }
}

TEST(UnifiedDiffTest, OtherMalformedDiffsSayWhatIsMissing) {
  auto no_patch = parseUnifiedDiff("just prose, no diff\n");
  ASSERT_FALSE(no_patch);
  EXPECT_NE(no_patch.error().message.find("no file patch found"), std::string::npos);

  auto no_plus = parseUnifiedDiff("--- a/f\n@@ -1 +1 @@\n-x\n+y\n");
  ASSERT_FALSE(no_plus);
  EXPECT_NE(no_plus.error().message.find("line 1"), std::string::npos);
  EXPECT_NE(no_plus.error().message.find("+++"), std::string::npos);

  auto no_hunk = parseUnifiedDiff("--- a/f\n+++ b/f\nsomething\n");
  ASSERT_FALSE(no_hunk);
  EXPECT_NE(no_hunk.error().message.find("has no hunk"), std::string::npos);

  auto bad_line = parseUnifiedDiff("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n*y\n");
  ASSERT_FALSE(bad_line);
  EXPECT_NE(bad_line.error().message.find("line 5"), std::string::npos);
  EXPECT_NE(bad_line.error().message.find("starts with neither"), std::string::npos);

  auto orphan = parseUnifiedDiff("@@ -1 +1 @@\n-x\n+y\n");
  ASSERT_FALSE(orphan);
  EXPECT_NE(orphan.error().message.find("before any file header"), std::string::npos);
}

TEST(UnifiedDiffTest, AnAbsurdStartLineIsSearchedOnceAndReported) {
  // Found by the fuzzer: a header line number near 2^60 once made the search walk that far.
  auto patches = parseUnifiedDiff("--- a/f\n+++ b/f\n@@ -802379605485813751,2 +2,1 @@\n b\n-c\n");
  ASSERT_TRUE(patches);
  std::vector<std::string> notes;
  const std::string out = applyOne("--- a/f\n+++ b/f\n@@ -802379605485813751,2 +2,1 @@\n b\n-c\n",
                                   std::string("a\nb\nc\n"), &notes);
  EXPECT_EQ(out, "a\nb\n");
  ASSERT_EQ(notes.size(), 1U);
  EXPECT_NE(notes[0].find("offset -802379605485813749 lines"), std::string::npos) << notes[0];
  // An insertion without context past the end lands at the end, with its offset noted.
  EXPECT_EQ(applyOne("--- a/f\n+++ b/f\n@@ -9,0 +10 @@\n+x\n", std::string("a\n"), &notes),
            "a\nx\n");
  ASSERT_EQ(notes.size(), 1U);
  EXPECT_NE(notes[0].find("offset -8 lines"), std::string::npos) << notes[0];
}

TEST(UnifiedDiffTest, ContextMatchesAFileLineEndingInCarriageReturn) {
  // Found by the fuzzer (corpus: context-matches-but-unplaced): the search compared a hunk line
  // with a file line the wrong way round, so a CRLF line (its \r is not part of the text) never
  // matched there, and explaining the failure then read past the hunk's context.
  EXPECT_EQ(
      applyOne("--- a/f\n+++ b/f\n@@ -2,2 +2,2 @@\n b\n-c\n+C\n", std::string("a\r\nb\r\nc\r\n")),
      "a\r\nb\r\nC\n");
  const std::string original = "a\nb\nc\n\r\n\n\n\n\n\n\nb\n-\n";
  auto patches = parseUnifiedDiff("--- a/f\n+++ b/f\n@@ -4,2 +2,1 @@\xf5\n\n\n\n \n\n\n\n+\n\n\n");
  ASSERT_TRUE(patches);
  ASSERT_EQ(patches->size(), 1U);
  EXPECT_TRUE(applyFilePatch(patches->front(), original));
}

TEST(UnifiedDiffTest, PathsMustStayInsideTheTree) {
  EXPECT_TRUE(safeRelativePath("experience.yaml"));
  EXPECT_TRUE(safeRelativePath("prompts/a.md"));
  EXPECT_FALSE(safeRelativePath("../outside.yaml"));
  EXPECT_FALSE(safeRelativePath("prompts/../../x"));
  EXPECT_FALSE(safeRelativePath("/etc/passwd"));
  EXPECT_FALSE(safeRelativePath(""));
}

}  // namespace
}  // namespace oe::evolve

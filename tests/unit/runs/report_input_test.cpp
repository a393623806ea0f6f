// What a run report reads of the diffs of worktree attempts: each node.diff's artifact from the
// experience folder, cut after a whole line at 64 KiB, 1 MiB in all, a missing file named, an
// id that is no sha256 left unread, and each artifact read once.
#include "oe/runs/report_input.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "support/temp_dir.hpp"

namespace oe::runs {
namespace {

// A 64-digit hex id, distinct for each n.
std::string artifactId(int n) {
  char text[65];
  std::snprintf(text, sizeof text, "%064x", n);
  return text;
}

// `lines` lines of 10 bytes each ("+abcdefgh\n").
std::string diffOf(size_t lines) {
  std::string text;
  for (size_t i = 0; i < lines; ++i) {
    text += "+abcdefgh\n";
  }
  return text;
}

class ReportDiffs : public ::testing::Test {
 protected:
  void writeArtifact(const std::string& id, const std::string& text) {
    dir_.write(".openexpertise/artifacts/" + id + ".diff", text);
  }
  // The run's log: a node.diff event per id, then loadRunReport of it.
  RunReportInput load(const std::vector<std::string>& ids) {
    std::string log =
        "{\"type\":\"run.started\",\"run_id\":\"r1\",\"ts\":\"2026-05-26T10:00:00Z\"}\n";
    for (const std::string& id : ids) {
      log += Json{{"type", "node.diff"},          {"run_id", "r1"}, {"node_id", "edit"},
                  {"ts", "2026-05-26T10:00:01Z"}, {"artifact", id}, {"files", {"a.txt"}}}
                 .dump() +
             "\n";
    }
    RunRecord run;
    run.id = "r1";
    run.log = dir_.write(".openexpertise/runs/r1.jsonl", log);
    auto input = loadRunReport(dir_.path(), run);
    EXPECT_TRUE(input) << input.error().message;
    return input ? std::move(input).value() : RunReportInput{};
  }

  test::TempDir dir_;
};

TEST_F(ReportDiffs, EachDiffIsCutAfterAWholeLineAndAllOfThemShareABudget) {
  // 10,000 lines: past 64 KiB, cut after line 6553 (65,530 bytes).
  const std::string big = artifactId(1000);
  writeArtifact(big, diffOf(10'000));
  // Then 18 diffs of 60,000 bytes: 16 whole ones fill the budget to 23,046 bytes short of 1 MiB,
  // the 17th is cut after a whole line within it, the 18th gets 6 bytes: no whole line, no text.
  std::vector<std::string> ids = {big};
  for (int n = 0; n < 18; ++n) {
    ids.push_back(artifactId(n));
    writeArtifact(ids.back(), diffOf(6000));
  }
  // An artifact named twice is read once; a small one still fits in the 6 bytes left.
  ids.push_back(big);
  const std::string small = artifactId(2000);
  writeArtifact(small, "+x\n");
  ids.push_back(small);

  const RunReportInput input = load(ids);
  ASSERT_EQ(input.diffs.size(), 20U);
  const DiffText& cut = input.diffs.at(big);
  EXPECT_EQ(cut.size, 100'000U);
  EXPECT_EQ(cut.text, diffOf(6553));
  EXPECT_EQ(cut.error, "");
  size_t total = cut.text.size();
  for (int n = 0; n < 16; ++n) {
    const DiffText& whole = input.diffs.at(artifactId(n));
    EXPECT_EQ(whole.size, 60'000U) << n;
    EXPECT_EQ(whole.text.size(), 60'000U) << n;
    total += whole.text.size();
  }
  const DiffText& last = input.diffs.at(artifactId(16));
  EXPECT_EQ(last.text, diffOf(2304));  // 23,046 bytes left: 2,304 whole lines
  total += last.text.size();
  EXPECT_LE(total, kReportDiffBudget);
  const DiffText& spent = input.diffs.at(artifactId(17));
  EXPECT_EQ(spent.text, "");
  EXPECT_EQ(spent.size, 60'000U);
  EXPECT_NE(spent.error.find("the report carries 1024 KiB of diffs in all"), std::string::npos)
      << spent.error;
  EXPECT_EQ(input.diffs.at(small).text, "+x\n");
  EXPECT_LE(total + 3, kReportDiffBudget);
}

TEST_F(ReportDiffs, AMissingFileIsNamedAndAnIdThatIsNoSha256IsNotRead) {
  const std::string here = artifactId(1);
  writeArtifact(here, "+a\n");
  const std::string gone = artifactId(2);
  // An edited log could name any path; the file beside the artifacts must not be read.
  dir_.write(".openexpertise/secret.diff", "+secret\n");
  const RunReportInput input = load({here, gone, "../secret", std::string(64, 'G')});
  ASSERT_EQ(input.diffs.size(), 2U);
  EXPECT_EQ(input.diffs.at(here).text, "+a\n");
  EXPECT_EQ(input.diffs.at(here).size, 3U);
  const DiffText& missing = input.diffs.at(gone);
  EXPECT_EQ(missing.text, "");
  EXPECT_NE(missing.error.find(".openexpertise/artifacts/" + gone + ".diff is not here"),
            std::string::npos)
      << missing.error;
  // No experience.yaml here: the diffs are read all the same, and a note says why no graph.
  EXPECT_FALSE(input.experience);
  EXPECT_FALSE(input.notes.empty());
}

}  // namespace
}  // namespace oe::runs

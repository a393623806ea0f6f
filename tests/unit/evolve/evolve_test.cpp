// `oe evolve`'s steps that need no advisor: the yaml a folder names, the sidecar a run's
// proposals live in, `--apply` (only a proposal recorded valid, gated again on the folder as it
// is now, recorded in the sidecar) and the reports `oe diff` lists.
#include "oe/evolve/evolve.hpp"

#include <gtest/gtest.h>

#include "oe/common/file.hpp"
#include "support/temp_dir.hpp"

namespace oe::evolve {
namespace {

using test::TempDir;

const std::string kApplyYaml =
    "name: gate\n"
    "version: 0.1.0\n"
    "state:\n"
    "  schema:\n"
    "    score: {type: number}\n"
    "graph:\n"
    "  nodes:\n"
    "    - id: score\n"
    "      kind: tool\n"
    "      impl: ./tools/score.sh\n"
    "      args: {threshold: 0.5}\n"
    "      writes: [score]\n"
    "  edges: []\n";

const std::string kApplyDiff =
    "--- a/experience.yaml\n"
    "+++ b/experience.yaml\n"
    "@@ -10,3 +10,3 @@\n"
    "       impl: ./tools/score.sh\n"
    "-      args: {threshold: 0.5}\n"
    "+      args: {threshold: 0.7}\n"
    "       writes: [score]";

spec::KindCatalog toolKinds() { return {{"tool", spec::KindInfo{"tool", std::nullopt}}}; }

class EvolveSteps : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("experience.yaml", kApplyYaml);
    dir_.write("tools/score.sh", "#!/bin/sh\necho '{\"score\": 1}'\n");
    std::filesystem::create_directories(evolutionDir(dir_.path()));
  }

  // A sidecar with one proposal recorded as `status`.
  Json sidecar(VerdictStatus status) const {
    const Proposal p{"tune-param", "high", "Tighten", "Scores cluster.", kApplyDiff};
    Verdict verdict;
    verdict.status = status;
    Json entry = p.toJson();
    entry["verdict"] = verdict.toJson();
    return Json{{"run_id", "r1"}, {"proposals", Json::array({entry})}, {"applied", Json::array()}};
  }

  std::filesystem::path yaml() const { return dir_ / "experience.yaml"; }

  TempDir dir_;
};

TEST_F(EvolveSteps, TheYamlOfAFolderIsAbsoluteAndAMissingOneSaysWhatToPass) {
  auto found = experienceYaml(dir_.path());
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_TRUE(found->is_absolute());
  EXPECT_EQ(found->filename(), "experience.yaml");
  auto missing = experienceYaml(dir_ / "nowhere");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("experience.yaml not found at"), std::string::npos);
}

TEST_F(EvolveSteps, ProposalsOfARunWithoutASidecarSayToEvolveFirst) {
  auto read = readProposals(dir_.path(), "r1");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("run `oe evolve r1` first"), std::string::npos)
      << read.error().message;
}

TEST_F(EvolveSteps, ApplyWritesAValidProposalWithABackupAndRecordsIt) {
  ASSERT_TRUE(
      writeTextFile(sidecarPath(dir_.path(), "r1"), sidecar(VerdictStatus::kValid).dump(2)));
  auto read = readProposals(dir_.path(), "r1");
  ASSERT_TRUE(read) << read.error().message;
  auto applied = applyProposal(yaml(), "r1", *read, 1, toolKinds());
  ASSERT_TRUE(applied) << applied.error().message;
  EXPECT_EQ(applied->name, "proposal 1 (\"Tighten\")");
  EXPECT_EQ(applied->files.files, std::vector<std::string>{"experience.yaml"});
  ASSERT_EQ(applied->files.backups.size(), 1U);
  EXPECT_TRUE(applied->warning.empty());
  EXPECT_NE(readFile(yaml()).value_or("").find("threshold: 0.7"), std::string::npos);
  auto recorded = readSidecar(sidecarPath(dir_.path(), "r1"));
  ASSERT_TRUE(recorded);
  ASSERT_EQ((*recorded)["applied"].size(), 1U);
  EXPECT_EQ((*recorded)["applied"][0]["proposal"], 1);
}

TEST_F(EvolveSteps, ApplyRefusesAProposalRecordedInvalidOrNoLongerApplying) {
  auto refused = applyProposal(yaml(), "r1", sidecar(VerdictStatus::kInvalid), 1, toolKinds());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("is not applied: it"), std::string::npos)
      << refused.error().message;
  // The folder changed since: the line the diff replaces is gone.
  dir_.write("experience.yaml", kApplyYaml.substr(0, kApplyYaml.find("      args")) +
                                    "      args: {threshold: 0.9}\n      writes: [score]\n"
                                    "  edges: []\n");
  auto stale = applyProposal(yaml(), "r1", sidecar(VerdictStatus::kValid), 1, toolKinds());
  ASSERT_FALSE(stale);
  EXPECT_NE(stale.error().message.find("the experience changed since it was proposed"),
            std::string::npos)
      << stale.error().message;
  EXPECT_FALSE(applyProposal(yaml(), "r1", sidecar(VerdictStatus::kValid), 2, toolKinds()));
}

TEST_F(EvolveSteps, ReportsAreListedWithTheirVerdictsOrTheirHeadings) {
  ASSERT_TRUE(writeTextFile(reportPath(dir_.path(), "r1"), "# report\n"));
  ASSERT_TRUE(
      writeTextFile(sidecarPath(dir_.path(), "r1"), sidecar(VerdictStatus::kValid).dump(2)));
  // Upstream's report, without a sidecar: its proposals are counted from the headings.
  ASSERT_TRUE(writeTextFile(reportPath(dir_.path(), "up"), "## 1. One\n## 2. Two\n## Notes\n"));
  const auto entries = listReports(dir_.path());
  ASSERT_EQ(entries.size(), 2U);
  for (const auto& e : entries) {
    if (e.run_id == "r1") {
      EXPECT_EQ(e.info["proposals"], 1);
      EXPECT_EQ(e.info["verdicts"]["valid"], 1);
      EXPECT_EQ(e.info["applied"], 0);
    } else {
      EXPECT_EQ(e.run_id, "up");
      EXPECT_EQ(e.info["proposals"], 2);
      EXPECT_FALSE(e.info.contains("verdicts"));
    }
  }
  EXPECT_TRUE(listReports(dir_ / "nowhere").empty());
}

}  // namespace
}  // namespace oe::evolve

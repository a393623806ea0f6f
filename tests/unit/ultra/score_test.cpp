// Scoring, keep-best, the early stop, the score bar and the anchor filter (reference §8.2).
#include "oe/ultra/score.hpp"

#include <gtest/gtest.h>

namespace oe::ultra {
namespace {

Finding finding(std::string severity, Json anchor = Json::object()) {
  return Finding{"correctness", std::move(severity), std::move(anchor), "evidence", "fix"};
}

DraftCheck validCheck() {
  DraftCheck c;
  c.valid = true;
  return c;
}

TEST(UltraScore, CompositeSubtractsTwentyFivePerHighAndFivePerMediumAndClamps) {
  Critique c{90, {finding("high"), finding("medium"), finding("medium"), finding("low")}};
  EXPECT_DOUBLE_EQ(composite(validCheck(), &c), 90 - 25 - 10);
  Critique low{20, {finding("high")}};
  EXPECT_DOUBLE_EQ(composite(validCheck(), &low), 0);
  Critique high{130, {}};
  EXPECT_DOUBLE_EQ(composite(validCheck(), &high), 100);
}

TEST(UltraScore, CompositeIsZeroWithoutACritiqueOrForAnInvalidOrUnsafeDraft) {
  Critique c{90, {}};
  EXPECT_DOUBLE_EQ(composite(validCheck(), nullptr), 0);
  DraftCheck invalid;
  EXPECT_DOUBLE_EQ(composite(invalid, &c), 0);
  DraftCheck unsafe = validCheck();
  unsafe.preflight_ok = false;
  EXPECT_DOUBLE_EQ(composite(unsafe, &c), 0);
}

TEST(UltraScore, KeepBestPrefersValidThenHigherScoreAndKeepsTheIncumbentOnATie) {
  EXPECT_TRUE(better({true, 0}, {false, 0}));
  EXPECT_FALSE(better({false, 100}, {true, 0})) << "valid beats invalid whatever the score";
  EXPECT_TRUE(better({true, 71}, {true, 70}));
  EXPECT_FALSE(better({true, 69}, {true, 70}));
  EXPECT_FALSE(better({true, 70}, {true, 70})) << "a tie keeps the earlier draft";
  EXPECT_TRUE(better({true, 70}, {true, 70}, /*accept_ties=*/true)) << "ultra-revise accepts";
  EXPECT_FALSE(better({true, 69}, {true, 70}, /*accept_ties=*/true));
  EXPECT_FALSE(better({false, 0}, {true, 0}, /*accept_ties=*/true))
      << "the monotonicity gate: an invalid revision never replaces a valid draft";
}

TEST(UltraScore, GoodEnoughNeedsValidityNoHighFindingAndTheBar) {
  Critique ok{90, {finding("medium")}};
  EXPECT_TRUE(goodEnough(validCheck(), ok, 85, 80));
  EXPECT_FALSE(goodEnough(validCheck(), ok, 79, 80));
  Critique high{100, {finding("high")}};
  EXPECT_FALSE(goodEnough(validCheck(), high, 90, 80));
  EXPECT_FALSE(goodEnough(DraftCheck{}, ok, 85, 80));
}

TEST(UltraScore, ScoreBarReadsTheEnvironmentValueOrFallsBackToEighty) {
  EXPECT_DOUBLE_EQ(scoreBar(nullptr), 80);
  EXPECT_DOUBLE_EQ(scoreBar(""), 80);
  EXPECT_DOUBLE_EQ(scoreBar("65.5"), 65.5);
  EXPECT_DOUBLE_EQ(scoreBar("0"), 0);
  EXPECT_DOUBLE_EQ(scoreBar("high"), 80);
  EXPECT_DOUBLE_EQ(scoreBar("70x"), 80);
  EXPECT_DOUBLE_EQ(scoreBar("101"), 80);
}

TEST(UltraScore, AnchorFilterKeepsFindingsWhoseMostSpecificAnchorExists) {
  DraftNames names{{"greet"}, {"greeting"}, {"experience.yaml", "tools/greet.mjs"}};
  std::vector<Finding> in = {
      finding("high", {{"node_id", "greet"}}),
      finding("high", {{"node_id", "missing"}, {"state_field", "greeting"}}),
      finding("medium", {{"state_field", "greeting"}}),
      finding("medium", {{"state_field", "nope"}}),
      finding("low", {{"file_path", "./tools/greet.mjs"}}),
      finding("low", {{"file_path", "tools/other.mjs"}}),
      finding("low", Json::object()),
      finding("low", {{"node_id", ""}}),
  };
  const auto kept = filterAnchors(in, names);
  ASSERT_EQ(kept.size(), 3U);
  EXPECT_EQ(kept[0].anchor["node_id"], "greet");
  EXPECT_EQ(kept[1].anchor["state_field"], "greeting");
  EXPECT_EQ(kept[2].anchor["file_path"], "./tools/greet.mjs");
}

TEST(UltraScore, CheckFindingsTurnEveryErrorIntoAHighFinding) {
  DraftCheck c;
  c.errors = {"experience.yaml:9:7: error: node \"greet\" writes undeclared field \"x\"",
              "smoke run: node \"greet\" failed: boom"};
  c.preflight = {"file path \"../x\" leaves the draft folder (\"..\")"};
  const auto findings = checkFindings(c);
  ASSERT_EQ(findings.size(), 3U);
  for (const auto& f : findings) {
    EXPECT_EQ(f.severity, "high");
    EXPECT_EQ(f.dimension, "validity");
  }
  EXPECT_EQ(findings[1].evidence, c.errors[0]);
  EXPECT_NE(findings[2].fix.find("run end to end"), std::string::npos);
}

}  // namespace
}  // namespace oe::ultra

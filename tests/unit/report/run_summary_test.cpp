// What `oe run` prints about a run: the summary's counts and call lines, how to continue an
// interrupted run, a long value cut, the JSON of --json, and a resume's notes on changed nodes.
#include "oe/report/run_summary.hpp"

#include <gtest/gtest.h>

#include "oe/spec/loader.hpp"

namespace oe::report {
namespace {

spec::Experience experience() {
  auto loaded = spec::loadExperienceText(
      "name: x\nversion: 0.1.0\nstate:\n  schema:\n    a: {type: string}\n    b: {type: string}\n"
      "graph:\n  nodes:\n    - id: n\n      kind: tool\n      impl: ./t.sh\n      writes: [a]\n"
      "  edges: []\n",
      "/tmp/x/experience.yaml");
  EXPECT_TRUE(loaded.experience);
  return std::move(*loaded.experience);
}

TEST(OneLine, CutsAtTheFirstLineOrOnAUtf8Boundary) {
  EXPECT_EQ(oneLine("first\nsecond"), "first ...");
  EXPECT_EQ(oneLine("short"), "short");
  EXPECT_EQ(oneLine("h\xC3\xA9llo", 2), "h ...");  // not inside the two bytes of é
}

TEST(ExperienceFlag, QuotesAPathAShellWouldSplit) {
  EXPECT_EQ(experienceFlag("."), "");
  EXPECT_EQ(experienceFlag("examples/flow"), " --experience examples/flow");
  EXPECT_EQ(experienceFlag("my flow's"), " --experience 'my flow'\\''s'");
}

TEST(RunSummaryText, ItemsThatEndedAlikeShareALineAndAnInterruptedRunSaysHowToGoOn) {
  run::RunSummary s;
  s.run_id = "r1";
  s.status = run::RunStatus::kInterrupted;
  s.failed = 0;
  s.cancelled = 3;
  s.cancellations = {{"each", "cancelled"}, {"each", "cancelled"}, {"each", "cancelled"}};
  s.event_log = "/tmp/x/.openexpertise/runs/r1.jsonl";
  s.final_state = {{"a", std::string(300, 'v')}};
  s.usage.calls = 2;
  s.usage.input_tokens = 10;
  s.usage.output_tokens = 20;
  s.usage.cost_usd = 0.5;
  const std::string text = runSummaryText(s, experience(), "flows/x", 42);
  EXPECT_NE(text.find("run r1: interrupted in 42 ms (0 ran, 0 cached, 0 failed, 3 cancelled, "
                      "0 skipped)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cancelled: each (3 calls): cancelled\n"), std::string::npos) << text;
  EXPECT_NE(text.find("errors in full: oe inspect r1 --experience flows/x\n"), std::string::npos);
  EXPECT_NE(text.find("llm: 2 calls, 10 in + 20 out tokens, $0.5000\n"), std::string::npos);
  EXPECT_NE(text.find("run `oe resume r1 --experience flows/x` to continue\n"), std::string::npos);
  EXPECT_NE(text.find("(302 chars; `oe state a --experience flows/x` prints it all)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("  b:"), std::string::npos);  // unset fields are left out
}

TEST(RunSummaryJson, CarriesTheCountsAndWhatAppliesOnly) {
  run::RunSummary s;
  s.run_id = "r1";
  s.ran = 2;
  s.failures = {{"n", "boom"}};
  Json out = runSummaryJson(s, nullptr);
  EXPECT_EQ(out["status"], "success");
  EXPECT_EQ(out["nodes"]["ran"], 2);
  EXPECT_EQ(out["failures"][0]["error"], "boom");
  EXPECT_FALSE(out.contains("reason"));
  EXPECT_FALSE(out.contains("usage"));
  EXPECT_FALSE(out.contains("definition_changes"));
  s.stop_reason = "fail_run";
  out = runSummaryJson(s, Json{{"changed", Json::array()}});
  EXPECT_EQ(out["reason"], "fail_run");
  EXPECT_TRUE(out.contains("definition_changes"));
}

TEST(DefinitionChanges, SayWhatAResumeDoesWithChangedNodes) {
  EXPECT_EQ(definitionChangesText("r1", Json{{"changed", Json::array()},
                                             {"added", Json::array()},
                                             {"removed", Json::array()}}),
            "resuming run r1: the experience is unchanged");
  const std::string changed = definitionChangesText(
      "r1", Json{{"changed", {"a", "b"}}, {"added", Json::array()}, {"removed", {"c"}}});
  EXPECT_NE(changed.find("changed since it ran; changed: a, b; removed: c."), std::string::npos)
      << changed;
  EXPECT_EQ(changedNodeNote({"a", 0}, "."),
            "node \"a\" changed and nothing of it had landed: it runs with its new definition");
  EXPECT_NE(changedNodeNote({"a", 2}, "flows/x")
                .find("its 2 writes that had landed are kept (those calls are not run or "
                      "applied again; any other runs with the new definition). To run it again "
                      "entirely: oe run flows/x --from a"),
            std::string::npos);
}

}  // namespace
}  // namespace oe::report

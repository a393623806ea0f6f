// Where a resume picks a run up, from its event log: its args, the chain it continues, what the
// chain spent before, and which nodes changed since the definition it ran.
#include "oe/launch/resume.hpp"

#include <gtest/gtest.h>

#include "oe/run/run.hpp"
#include "oe/spec/loader.hpp"
#include "support/temp_dir.hpp"

namespace oe::launch {
namespace {

class NullLog final : public plugins::LogSink {
 public:
  void write(oe_log_level, std::string_view, std::string_view) override {}
};

runs::RunRecord recordOf(const std::filesystem::path& log) {
  runs::RunRecord run;
  run.id = log.stem().string();
  run.log = log;
  return run;
}

TEST(PriorUsage, AddsTheChainsEarlierTotalAndEveryTokensEvent) {
  const std::vector<Json> events = {
      {{"type", "run.started"},
       {"usage_before",
        {{"input_tokens", 10}, {"output_tokens", 5}, {"cost_usd", 0.5}, {"llm_calls", 2}}}},
      {{"type", "node.tokens"}, {"input_tokens", 3}, {"output_tokens", 4}, {"cost_usd", 0.25}},
      {{"type", "node.finished"}}};
  const llm::Usage usage = priorUsage(events);
  EXPECT_EQ(usage.input_tokens, 13);
  EXPECT_EQ(usage.output_tokens, 9);
  EXPECT_DOUBLE_EQ(usage.cost_usd, 0.75);
  EXPECT_EQ(usage.calls, 3);
}

TEST(ResumePointOf, TakesTheArgsAndChainOfRunStarted) {
  test::TempDir dir;
  const auto log = dir.write(
      "r2.jsonl",
      R"({"type":"run.started","ts":"2026-01-01T00:00:00.000Z","args":{"n":3},"chain_id":"r1"})"
      "\n");
  auto point = resumePointOf(recordOf(log));
  ASSERT_TRUE(point) << point.error().message;
  EXPECT_EQ(point->run_id, "r2");
  EXPECT_EQ(point->chain_id, "r1");
  EXPECT_EQ(point->args, (Json{{"n", 3}}));
  EXPECT_TRUE(point->notes.empty());
  EXPECT_FALSE(point->stored_pin);
}

TEST(ResumePointOf, ALogWithoutRunStartedStartsItsOwnChainWithNoArgs) {
  test::TempDir dir;
  const auto log = dir.write("r9.jsonl", R"({"type":"node.ready","node_id":"a"})"
                                         "\n");
  auto point = resumePointOf(recordOf(log));
  ASSERT_TRUE(point) << point.error().message;
  EXPECT_EQ(point->chain_id, "r9");
  EXPECT_EQ(point->args, Json::object());
  ASSERT_EQ(point->notes.size(), 1U);
  EXPECT_NE(point->notes[0].find("does not start with run.started; resuming with no args"),
            std::string::npos);
  auto missing = resumePointOf(recordOf(dir / "gone.jsonl"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("cannot resume run gone"), std::string::npos);
}

TEST(DefinitionChanges, ComparesThePinWithTheExperienceAsItIsNow) {
  test::TempDir dir;
  const std::string before =
      "name: x\nversion: 0.1.0\nstate:\n  schema:\n    a: {type: string}\ngraph:\n  nodes:\n"
      "    - id: one\n      kind: tool\n      impl: ./t.sh\n      args: {n: 1}\n"
      "      writes: [a]\n  edges: []\n";
  auto old = spec::loadExperienceText(before, dir / "experience.yaml");
  ASSERT_TRUE(old.experience);
  NullLog log;
  plugins::PluginRegistry plugins(&log, plugins::Access::kExecute);
  const Json pin = run::definitionPin(*old.experience, &plugins);

  auto now = spec::loadExperienceText(
      before.substr(0, before.find("{n: 1}")) + "{n: 2}\n      writes: [a]\n  edges: []\n",
      dir / "experience.yaml");
  ASSERT_TRUE(now.experience);
  // No pin beside the log, nor in a store: a resume says so and replays what is unchanged.
  auto none = definitionChanges(*now.experience, "r1", std::nullopt, plugins);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("run r1 has no readable definition pin"), std::string::npos);
  // The store's pin stands in for a missing file.
  auto from_store = definitionChanges(*now.experience, "r1", pin, plugins);
  ASSERT_TRUE(from_store) << from_store.error().message;
  EXPECT_EQ((*from_store)["changed"], Json::array({"one"}));
  // The file beside the log wins over the store's.
  dir.write(".openexpertise/runs/r1.pin.json",
            run::definitionPin(*now.experience, &plugins).dump());
  auto from_file = definitionChanges(*now.experience, "r1", pin, plugins);
  ASSERT_TRUE(from_file);
  EXPECT_TRUE((*from_file)["changed"].empty());
}

}  // namespace
}  // namespace oe::launch

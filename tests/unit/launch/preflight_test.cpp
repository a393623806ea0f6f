// The checks before a run starts: each bad flag or setting is refused with a message naming the
// flag and what to pass, before anything is recorded.
#include "oe/launch/preflight.hpp"

#include <gtest/gtest.h>

#include "oe/spec/loader.hpp"
#include "support/temp_dir.hpp"

namespace oe::launch {
namespace {

std::string messageOf(const Result<void>& result) {
  return result ? std::string("ok") : result.error().message;
}

TEST(CheckExperiencePath, SaysWhatThePathIsInsteadOfAnExperience) {
  test::TempDir dir;
  dir.write("flow/experience.yaml", "name: flow\n");
  dir.write("other.yaml", "name: other\n");
  dir.write("notes.txt", "x");
  std::filesystem::create_directories(dir / "empty");
  EXPECT_TRUE(checkExperiencePath((dir / "flow").string()));
  EXPECT_TRUE(checkExperiencePath((dir / "other.yaml").string()));
  EXPECT_NE(messageOf(checkExperiencePath((dir / "empty").string()))
                .find("is not an experience: the folder has no experience.yaml"),
            std::string::npos);
  EXPECT_NE(messageOf(checkExperiencePath((dir / "notes.txt").string()))
                .find("is not an experience: pass a folder with an experience.yaml"),
            std::string::npos);
  EXPECT_NE(messageOf(checkExperiencePath((dir / "gone").string())).find("does not exist"),
            std::string::npos);
}

TEST(ParseBudget, TakesNonNegativeNumbersAndLeavesEmptyOnesUnset) {
  auto both = parseBudget("1000", "0.25");
  ASSERT_TRUE(both) << both.error().message;
  EXPECT_EQ(both->max_tokens, 1000);
  EXPECT_EQ(both->max_cost_usd, 0.25);
  auto none = parseBudget("", "");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->max_tokens);
  EXPECT_FALSE(none->max_cost_usd);
  for (const char* bad : {"-1", "12k", "x", "1.5"}) {
    auto parsed = parseBudget(bad, "");
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().message, "--max-tokens must be a non-negative integer");
  }
  for (const char* bad : {"-0.5", "1$", "nan"}) {
    auto parsed = parseBudget("", bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().message, "--max-cost-usd must be a non-negative number of US dollars");
  }
}

TEST(ParseConcurrency, TakesAPositiveIntegerOnly) {
  EXPECT_EQ(parseConcurrency("4").value(), 4);
  for (const char* bad : {"0", "-2", "2x", "", "many"}) {
    auto parsed = parseConcurrency(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().message, "--concurrency must be a positive integer");
  }
}

TEST(CheckLlmSettings, RefusesWhatWouldFailEveryLlmNodeLater) {
  test::TempDir dir;
  llm::Settings settings;
  EXPECT_TRUE(checkLlmSettings(settings));  // nothing asked: the run picks from the keys
  settings.provider_flag = "gpt";
  EXPECT_EQ(messageOf(checkLlmSettings(settings)),
            "unknown --llm value \"gpt\"; use anthropic or openai");
  settings.provider_flag = "anthropic";  // no key in this environment
  EXPECT_NE(messageOf(checkLlmSettings(settings)).find("or answer from a recording"),
            std::string::npos);
  settings.replay_file = dir / "missing.jsonl";
  EXPECT_NE(messageOf(checkLlmSettings(settings)).find("cannot read the recording"),
            std::string::npos);
  dir.write("recording.jsonl", "");
  settings.replay_file = dir / "recording.jsonl";  // answers every call: no key needed
  EXPECT_TRUE(checkLlmSettings(settings)) << messageOf(checkLlmSettings(settings));
  settings.replay_file.reset();
  settings.provider_flag.clear();
  settings.record_file = dir / "nowhere" / "out.jsonl";
  EXPECT_NE(messageOf(checkLlmSettings(settings)).find("the folder"), std::string::npos);
}

TEST(CheckSelection, FromAndOnlyMustNameNodes) {
  auto loaded = spec::loadExperienceText(
      "name: x\nversion: 0.1.0\nstate:\n  schema:\n    a: {type: string}\ngraph:\n  nodes:\n"
      "    - id: first\n      kind: tool\n      impl: ./t.sh\n      writes: [a]\n  edges: []\n",
      "/tmp/x/experience.yaml");
  ASSERT_TRUE(loaded.experience);
  EXPECT_TRUE(checkSelection(*loaded.experience, "first", ""));
  EXPECT_TRUE(checkSelection(*loaded.experience, "", ""));
  EXPECT_EQ(messageOf(checkSelection(*loaded.experience, "", "second")),
            "--only: no node \"second\" in /tmp/x/experience.yaml");
}

TEST(CheckStore, AStoreIsAPostgresqlUrlAndWorkersNeedOne) {
  EXPECT_TRUE(checkStore("", false));
  EXPECT_TRUE(checkStore("postgresql://u@h/db", true));
  EXPECT_NE(messageOf(checkStore("state.sqlite", false)).find("takes a PostgreSQL URL"),
            std::string::npos);
  EXPECT_NE(messageOf(checkStore("", true)).find("--workers: no store given"), std::string::npos);
}

}  // namespace
}  // namespace oe::launch

// What `oe ultra` sets up before its first phase: the provider checked unless a recording
// answers, the prompts read (a folder's replacements over the shipped ones), and upstream's
// summary of a draft in upstream's field order.
#include "oe/ultra/toolkit.hpp"

#include <gtest/gtest.h>

#include "support/temp_dir.hpp"

namespace oe::ultra {
namespace {

class QuietLog final : public plugins::LogSink {
 public:
  void write(oe_log_level, std::string_view, std::string_view) override {}
};

class UltraToolkit : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"analyzer.md", "synthesizer.md", "critic.md", "reviser.md"}) {
      tmp_.write(std::string("share/prompts/ultra/") + name, std::string("shipped ") + name);
    }
    tmp_.write("recording.jsonl", "");
  }

  // A config that needs no provider: the calls would be answered from an (empty) recording.
  ToolkitConfig replaying() const {
    ToolkitConfig config;
    config.llm.replay_file = tmp_ / "recording.jsonl";
    config.data_dir = tmp_ / "share";
    return config;
  }

  Result<Toolkit> toolkitQuietly(ToolkitConfig config) {
    return makeToolkit(std::move(config), log_,
                       [this](const std::string& w) { warnings_.push_back(w); });
  }

  QuietLog log_;
  std::vector<std::string> warnings_;
  test::TempDir tmp_;
};

TEST_F(UltraToolkit, WithoutAKeyOrARecordingNoPhaseStarts) {
  ToolkitConfig config = replaying();
  config.llm.replay_file.reset();
  config.llm.provider_flag = "anthropic";  // and no ANTHROPIC_API_KEY in its environment
  auto toolkit = toolkitQuietly(std::move(config));
  ASSERT_FALSE(toolkit);
  EXPECT_NE(toolkit.error().message.find("requires ANTHROPIC_API_KEY"), std::string::npos)
      << toolkit.error().message;
}

TEST_F(UltraToolkit, APromptsFolderReplacesOnlyTheFilesItHas) {
  tmp_.write("mine/critic.md", "my critic");
  ToolkitConfig config = replaying();
  config.prompts_dir = tmp_ / "mine";
  auto toolkit = toolkitQuietly(std::move(config));
  ASSERT_TRUE(toolkit) << toolkit.error().message;
  EXPECT_EQ(toolkit->prompts.critic, "my critic");
  EXPECT_EQ(toolkit->prompts.analyzer, "shipped analyzer.md");
  ASSERT_TRUE(toolkit->llm);
  ASSERT_TRUE(toolkit->registry);
}

TEST_F(UltraToolkit, AMissingPromptsFolderOrPromptSaysWhere) {
  ToolkitConfig config = replaying();
  config.prompts_dir = tmp_ / "nowhere";
  auto missing_dir = toolkitQuietly(std::move(config));
  ASSERT_FALSE(missing_dir);
  EXPECT_EQ(missing_dir.error().message,
            "the prompts folder " + (tmp_ / "nowhere").string() + " does not exist");
  std::filesystem::remove(tmp_ / "share/prompts/ultra/reviser.md");
  auto missing_file = toolkitQuietly(replaying());
  ASSERT_FALSE(missing_file);
  EXPECT_NE(missing_file.error().message.find("the ultra prompt reviser.md is missing"),
            std::string::npos)
      << missing_file.error().message;
}

TEST(DraftSummary, IsUpstreamsFieldsInUpstreamsOrder) {
  UltraResult r;
  r.slug = "triage";
  r.draft_dir = "/drafts/triage";
  r.analysis = {{"node_sketches", {{{"id", "read"}, {"kind", "tool"}}}},
                {"phases", {{{"id", "gather"}}}},
                {"open_questions", {"who?"}}};
  r.files_written = {"experience.yaml"};
  r.check.valid = true;
  const auto fields = draftSummary(r);
  EXPECT_EQ(fields.dump(),
            R"j({"slug":"triage","draftDir":"/drafts/triage","phases":["gather"],)j"
            R"j("nodes":["read(tool)"],"open_questions":["who?"],)j"
            R"j("files_written":["experience.yaml"],"valid":true,"validation_errors":[],)j"
            R"j("next_steps":[]})j");
  r.loop.rounds_run = 2;
  r.loop.final_score = 84;
  EXPECT_EQ(draftSummary(r)["final_score"], 84);
  EXPECT_EQ(draftSummary(r)["rounds_run"], 2);
}

}  // namespace
}  // namespace oe::ultra

// The ultra API without the CLI: its phase callback, its cancellation flag, and a phase whose
// answer fails its schema. The LLM service runs in its stand-in mode (no provider, no network):
// the analyzer's stand-in answer has an empty name, which the analysis schema refuses.
#include "oe/ultra/ultra.hpp"

#include <gtest/gtest.h>

#include "support/temp_dir.hpp"

namespace oe::ultra {
namespace {

class NullLog final : public plugins::LogSink {
 public:
  void write(oe_log_level, std::string_view, std::string_view) override {}
};

class UltraApi : public ::testing::Test {
 protected:
  UltraApi() : registry_(&log_, plugins::Access::kExecute) {
    llm::Settings settings;
    settings.stand_in = true;
    service_ = std::move(llm::LlmService::create(settings, registry_, {})).value();
    options_.on_phase = [this](const PhaseEvent& e) {
      events_.push_back(e.phase + ":" + e.status);
    };
  }
  Context context() { return {*service_, registry_, kinds_, prompts_, log_}; }

  NullLog log_;
  plugins::PluginRegistry registry_;
  spec::KindCatalog kinds_;
  Prompts prompts_{"SOP architect", "synthesizer", "SOP critic", "reviser"};
  std::unique_ptr<llm::LlmService> service_;
  Options options_;
  std::vector<std::string> events_;
  test::TempDir tmp_;
};

TEST_F(UltraApi, APhaseWhoseAnswerFailsItsSchemaIsAnErrorNamingThePhase) {
  auto result = author(context(), "task", tmp_.path(), "", false, options_);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("analyze: the answer does not match its schema"),
            std::string::npos)
      << result.error().message;
  EXPECT_NE(result.error().message.find("/name"), std::string::npos) << result.error().message;
  EXPECT_EQ(events_, (std::vector<std::string>{"analyze:start", "analyze:failed"}));
  EXPECT_EQ(service_->runUsage().calls, 1);
  EXPECT_TRUE(std::filesystem::is_empty(tmp_.path())) << "nothing is written";
}

TEST_F(UltraApi, ACancelledSessionMakesNoCall) {
  std::atomic<bool> cancel{true};
  options_.cancel = &cancel;
  auto result = author(context(), "task", tmp_.path(), "", false, options_);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("cancelled"), std::string::npos);
  EXPECT_EQ(service_->runUsage().calls, 0);
}

TEST_F(UltraApi, ReviseOfAFolderWithoutADraftSaysWhatToPass) {
  auto result = reviseDraft(context(), tmp_ / "nothing", "feedback", options_);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("pass the folder `oe ultra` wrote"), std::string::npos);
}

TEST_F(UltraApi, PromptsComeFromTheOverrideFolderFileByFile) {
  tmp_.write("shipped/analyzer.md", "A");
  tmp_.write("shipped/synthesizer.md", "S");
  tmp_.write("shipped/critic.md", "C");
  tmp_.write("shipped/reviser.md", "R");
  tmp_.write("mine/critic.md", "my critic");
  auto prompts = loadPrompts(tmp_ / "shipped", tmp_ / "mine");
  ASSERT_TRUE(prompts.ok()) << prompts.error().message;
  EXPECT_EQ(prompts->analyzer, "A");
  EXPECT_EQ(prompts->critic, "my critic");
  std::filesystem::remove(tmp_ / "shipped/reviser.md");
  auto missing = loadPrompts(tmp_ / "shipped", std::nullopt);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("reviser.md"), std::string::npos);
}

TEST(UltraShippedPrompts, EachPromptIsThereAndSaysWhoItIs) {
  auto prompts =
      loadPrompts(std::filesystem::path(OE_SOURCE_DIR) / "host/prompts/ultra", std::nullopt);
  ASSERT_TRUE(prompts.ok()) << prompts.error().message;
  // The phrases upstream's tests identify the analyzer and the critic by.
  EXPECT_NE(prompts->analyzer.find("SOP architect"), std::string::npos);
  EXPECT_NE(prompts->critic.find("SOP critic"), std::string::npos);
  for (const std::string* text : {&prompts->synthesizer, &prompts->reviser}) {
    for (const char* topic :
         {"for_each", "when", "on_error", "array_append", "set_once", "pipelines", "loops", "$."}) {
      EXPECT_NE(text->find(topic), std::string::npos) << topic;
    }
  }
}

}  // namespace
}  // namespace oe::ultra

// LlmService's side of oe.cli-replay/1-draft: a CLI run's usage is accounted as node.tokens and
// against runtime.budget when the plugin finishes it, recorded under --llm-record, and served
// back under --llm-replay; a run not in the recording, and one that would start with the budget
// spent, are refused with messages that say what to do.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "oe/llm/llm_service.hpp"
#include "oe/llm/recording.hpp"
#include "oe/llm/settings.hpp"
#include "oe/plugins/host_context.hpp"
#include "oe/plugins/registry.hpp"
#include "support/temp_dir.hpp"

namespace oe::llm {
namespace {

// Keeps what the service emits for the node.
struct CapturingCtx : oe_host_ctx {
  void log(oe_log_level /*level*/, std::string_view message) override {
    logged.emplace_back(message);
  }
  oe_status emitEvent(std::string_view type, std::string_view fields_json) override {
    events.emplace_back(type, Json::parse(fields_json));
    return OE_OK;
  }
  std::vector<std::string> logged;
  std::vector<std::pair<std::string, Json>> events;
};

const Json kRequest = {{"provider", "claude-code"},
                       {"argv", {"claude", "-p", "hi", "--output-format", "json"}},
                       {"workdir", "."},
                       {"env", Json::array()},
                       {"stdin", ""}};
const Json kOutcome = {
    {"exit_code", 0},
    {"stdout", "{}"},
    {"usage",
     {{"input_tokens", 120}, {"output_tokens", 7}, {"model", "claude-fake-4"}, {"cost_usd", 0.5}}}};

std::unique_ptr<LlmService> service(Settings settings, plugins::PluginRegistry& registry) {
  auto created = LlmService::create(std::move(settings), registry, Usage{});
  EXPECT_TRUE(created.ok()) << created.error().message;
  return created.ok() ? std::move(created).value() : nullptr;
}

TEST(LlmServiceCli, ALiveRunIsAccountedAndRecordedThenReplayed) {
  test::TempDir dir;
  const auto file = dir.path() / "rec.jsonl";
  plugins::PluginRegistry registry(nullptr, plugins::Access::kExecute);
  {
    Settings settings;
    settings.record_file = file;
    auto live = service(settings, registry);
    ASSERT_NE(live, nullptr);
    CapturingCtx ctx;
    CallUsage usage;
    const Site site{&ctx, "review", &usage};
    const Answer begun = live->beginCli(site, kRequest.dump());
    ASSERT_EQ(begun.status, OE_OK) << begun.body;
    EXPECT_TRUE(begun.body.empty()) << "not replaying: run the CLI";
    const Answer done = live->finishCli(site, kRequest.dump(), kOutcome.dump());
    ASSERT_EQ(done.status, OE_OK) << done.body;
    ASSERT_EQ(ctx.events.size(), 1U);
    EXPECT_EQ(ctx.events[0].first, "node.tokens");
    EXPECT_EQ(ctx.events[0].second, (Json{{"input_tokens", 120},
                                          {"output_tokens", 7},
                                          {"model", "claude-fake-4"},
                                          {"provider", "claude-code"},
                                          {"cost_usd", 0.5}}));
    EXPECT_EQ(usage.usage.tokens(), 127);
    EXPECT_EQ(live->runUsage().cost_usd, 0.5) << "the CLI's own cost";
    EXPECT_EQ(live->runUsage().calls, 1);
  }

  Settings settings;
  settings.replay_file = file;
  auto replay = service(settings, registry);
  ASSERT_NE(replay, nullptr);
  CapturingCtx ctx;
  const Site site{&ctx, "review", nullptr};
  const Answer begun = replay->beginCli(site, kRequest.dump());
  ASSERT_EQ(begun.status, OE_OK) << begun.body;
  EXPECT_EQ(Json::parse(begun.body), kOutcome);
  EXPECT_TRUE(ctx.events.empty()) << "accounted when the plugin finishes, as live";
  ASSERT_EQ(replay->finishCli(site, kRequest.dump(), begun.body).status, OE_OK);
  EXPECT_EQ(replay->runUsage().tokens(), 127);

  Json other = kRequest;
  other["argv"][2] = "hello";
  const Answer missing = replay->beginCli(site, other.dump());
  EXPECT_EQ(missing.status, OE_FAILED_PRECONDITION);
  for (const std::string& part :
       {std::string("node \"review\": no recorded claude-code run for this command"), file.string(),
        "re-record with `oe run <experience> --llm-record " + file.string()}) {
    EXPECT_NE(missing.body.find(part), std::string::npos) << part << "\n" << missing.body;
  }
}

TEST(LlmServiceCli, ACliMayNotStartOnceTheBudgetIsSpent) {
  plugins::PluginRegistry registry(nullptr, plugins::Access::kExecute);
  Settings settings;
  settings.budget.max_tokens = 100;
  auto run = service(settings, registry);
  ASSERT_NE(run, nullptr);
  CapturingCtx ctx;
  CallUsage first;
  const Site site{&ctx, "first", &first};
  ASSERT_EQ(run->beginCli(site, kRequest.dump()).status, OE_OK);
  ASSERT_EQ(run->finishCli(site, kRequest.dump(), kOutcome.dump()).status, OE_OK);
  EXPECT_FALSE(first.budget_refused) << "its usage is known only afterwards";

  CallUsage second;
  const Answer refused = run->beginCli(Site{&ctx, "second", &second}, kRequest.dump());
  EXPECT_EQ(refused.status, OE_RESOURCE_EXHAUSTED);
  EXPECT_TRUE(second.budget_refused) << "the run stops as for a refused LLM call";
  EXPECT_EQ(refused.body,
            "node \"second\": run budget exhausted: runtime.budget.max_tokens is 100 and 127 are "
            "spent; the claude-code CLI was not started");
}

TEST(LlmServiceCli, MalformedRequestsAreRefused) {
  plugins::PluginRegistry registry(nullptr, plugins::Access::kExecute);
  auto run = service(Settings{}, registry);
  ASSERT_NE(run, nullptr);
  CapturingCtx ctx;
  const Site site{&ctx, "n", nullptr};
  EXPECT_EQ(run->beginCli(site, R"({"argv":[]})").status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(run->finishCli(site, kRequest.dump(), "[1]").status, OE_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace oe::llm

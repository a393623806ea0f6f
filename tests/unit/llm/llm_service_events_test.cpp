// LlmService's events (issue 10, item 9): a node.tokens event the host refuses is a warning
// naming the node and the event, not a dropped status.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "oe/llm/llm_service.hpp"
#include "oe/llm/recording.hpp"
#include "oe/llm/settings.hpp"
#include "oe/plugins/host_context.hpp"
#include "oe/plugins/registry.hpp"
#include "support/temp_dir.hpp"

namespace oe::llm {
namespace {

// A context whose event sink refuses everything (as a log that rejects the fields would).
struct RefusingCtx : oe_host_ctx {
  void log(oe_log_level level, std::string_view message) override {
    logged.emplace_back(level, std::string(message));
  }
  oe_status emitEvent(std::string_view type, std::string_view /*fields_json*/) override {
    emitted.emplace_back(type);
    return status;
  }
  oe_status status = OE_INTERNAL;
  std::vector<std::pair<oe_log_level, std::string>> logged;
  std::vector<std::string> emitted;
};

TEST(LlmServiceEvents, ARefusedTokensEventIsAWarningNamingTheNode) {
  test::TempDir dir;
  const Json request = {{"model", "m"}, {"messages", Json::array({{{"role", "user"},
                                                                    {"content", "hi"}}})}};
  const Json response = {{"model", "m"},
                         {"usage", {{"input_tokens", 3}, {"output_tokens", 4}}},
                         {"content", "hello"}};
  const auto replay = dir / "replay.jsonl";
  std::ofstream(replay) << Json{{"key", requestKey(request)}, {"node_id", "ask"},
                                {"provider", "openai"}, {"model", "m"},
                                {"request", request}, {"response", response}}
                               .dump()
                        << "\n";
  Settings settings;
  settings.replay_file = replay;
  plugins::PluginRegistry registry(nullptr, plugins::Access::kExecute);
  auto service = LlmService::create(settings, registry, Usage{});
  ASSERT_TRUE(service.ok()) << service.error().message;

  RefusingCtx ctx;
  Site site{&ctx, "ask", nullptr};
  const Answer answer = (*service)->complete(site, request.dump());
  ASSERT_EQ(answer.status, OE_OK) << answer.body;  // the call itself is not failed
  ASSERT_EQ(ctx.emitted, std::vector<std::string>{"node.tokens"});
  ASSERT_EQ(ctx.logged.size(), 1u);
  EXPECT_EQ(ctx.logged[0].first, OE_LOG_WARN);
  EXPECT_NE(ctx.logged[0].second.find("node \"ask\""), std::string::npos) << ctx.logged[0].second;
  EXPECT_NE(ctx.logged[0].second.find("node.tokens"), std::string::npos) << ctx.logged[0].second;

  // Accepted: no warning.
  RefusingCtx accepting;
  accepting.status = OE_OK;
  Site ok_site{&accepting, "ask", nullptr};
  ASSERT_EQ((*service)->complete(ok_site, request.dump()).status, OE_OK);
  EXPECT_TRUE(accepting.logged.empty());
}

}  // namespace
}  // namespace oe::llm

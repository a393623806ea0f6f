// What goes wrong in real runs: Retry-After, 5xx, refused connections, stalled responses,
// malformed bodies, cancellation before, during and between attempts, bad configuration, and a
// fan-out against a server that rejects above a concurrency limit.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "llm_test_fixture.hpp"

namespace oe::llm::test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using ResilienceTest = LlmPluginTest;

TEST_F(ResilienceTest, RetryAfterSecondsIsHonouredAndReported) {
  server_.enqueue(FakeLlmServer::rateLimited("1"));
  server_.enqueue(FakeLlmServer::openAiText("ok"));
  auto ctx = host_.makeContext("summarise");
  const CallResult result = complete(config("openai"), userRequest("go"), ctx.get());
  EXPECT_EQ(responseOf(result)["text"], "ok");

  const auto seen = server_.requests();
  ASSERT_EQ(seen.size(), 2U);
  // The second request was sent after a wait of at least Retry-After, measured on the server.
  EXPECT_GE(seen[1].received - seen[0].received, milliseconds{1000});

  const std::string note_start =
      "openai model \"test-model\": HTTP 429 (attempt 1 of 4); retrying in 1";
  bool logged = false;
  for (const auto& line : host_.logs()) {
    if (line.node_id == "summarise" && line.level == OE_LOG_WARN &&
        line.message.starts_with(note_start) && line.message.ends_with("(Retry-After 1 s)")) {
      logged = true;
    }
  }
  EXPECT_TRUE(logged);
  bool activity = false;
  for (const auto& event : host_.events()) {
    if (event.node_id == "summarise" && event.type == "node.activity" &&
        event.fields["activity"].get<std::string>().starts_with(note_start)) {
      activity = true;
    }
  }
  EXPECT_TRUE(activity);
}

TEST_F(ResilienceTest, RetryAfterLongerThanMaxDelayEndsTheRetries) {
  server_.enqueue(FakeLlmServer::rateLimited("3600"));
  const auto start = Clock::now();
  const CallResult result = complete(config("openai", {{"max_delay_ms", 1000}}), userRequest("go"));
  EXPECT_LT(Clock::now() - start, milliseconds{30000});
  EXPECT_EQ(result.status, OE_RESOURCE_EXHAUSTED);
  EXPECT_EQ(server_.requestCount(), 1U);
  EXPECT_NE(result.error.find("answered HTTP 429 and asked to wait 3600 s (Retry-After), more "
                              "than max_delay_ms (1000)"),
            std::string::npos)
      << result.error;
}

TEST_F(ResilienceTest, ServerErrorIsRetried) {
  server_.enqueue(FakeLlmServer::serverError(500));
  server_.enqueue(FakeLlmServer::serverError(502, "bad gateway"));
  server_.enqueue(FakeLlmServer::openAiText("third time lucky"));
  EXPECT_EQ(responseOf(complete(config("openai"), userRequest("go")))["text"], "third time lucky");
  EXPECT_EQ(server_.requestCount(), 3U);
}

TEST_F(ResilienceTest, PersistentServerErrorsFailAfterTheLastAttempt) {
  server_.setHandler([](const RecordedRequest&) { return FakeLlmServer::serverError(503); });
  const CallResult result = complete(config("openai", {{"max_attempts", 2}}), userRequest("go"));
  EXPECT_EQ(result.status, OE_UNAVAILABLE);
  EXPECT_EQ(server_.requestCount(), 2U);
  EXPECT_NE(result.error.find("answered HTTP 503 after 2 attempts"), std::string::npos)
      << result.error;
  EXPECT_TRUE(result.error.ends_with("The provider kept failing after 2 attempts; retry later."))
      << result.error;
}

TEST_F(ResilienceTest, ConnectionRefusedIsRetriedThenReportedWithTheUrl) {
  std::string base;
  {
    FakeLlmServer gone;
    base = gone.baseUrl();
  }
  const CallResult result =
      complete(config("anthropic", {{"base_url", base}, {"max_attempts", 3}}), userRequest("go"));
  EXPECT_EQ(result.status, OE_UNAVAILABLE);
  EXPECT_TRUE(result.error.starts_with("anthropic model \"test-model\": POST " + base +
                                       "/v1/messages failed: could not connect"))
      << result.error;
  EXPECT_TRUE(
      result.error.ends_with("(after 3 attempts). Check the base URL (base_url or "
                             "ANTHROPIC_BASE_URL) and the network."))
      << result.error;
  int retries = 0;
  for (const auto& line : host_.logs()) {
    retries += line.message.find("retrying in") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(retries, 2);
}

TEST_F(ResilienceTest, StallTimeoutIsAnErrorAndIsNotRetried) {
  server_.enqueue(FakeLlmServer::stalled(FakeResponse::Stall::kAfterHeaders));
  const auto start = Clock::now();
  const CallResult result =
      complete(config("openai", {{"stall_timeout_ms", 200}}), userRequest("go"));
  EXPECT_LT(Clock::now() - start, milliseconds{30000});
  EXPECT_EQ(result.status, OE_DEADLINE_EXCEEDED);
  EXPECT_EQ(server_.requestCount(), 1U);
  EXPECT_EQ(result.error, "openai model \"test-model\": POST " + server_.baseUrl() +
                              "/v1/chat/completions failed: no data received for 200 ms "
                              "(stall_timeout_ms); the server stopped responding. Raise "
                              "stall_timeout_ms if the model needs longer to answer.");
}

TEST_F(ResilienceTest, TotalTimeoutIsAnError) {
  server_.enqueue(
      FakeLlmServer::delayed(FakeLlmServer::anthropicMessage("late"), milliseconds{60000}));
  const CallResult result = complete(config("anthropic", {{"timeout_ms", 300}}), userRequest("go"));
  EXPECT_EQ(result.status, OE_DEADLINE_EXCEEDED);
  EXPECT_TRUE(result.error.ends_with("Raise timeout_ms if the model needs longer to answer."))
      << result.error;
}

TEST_F(ResilienceTest, MalformedJsonIsAClearError) {
  server_.enqueue(FakeLlmServer::malformedJson());
  const CallResult result = complete(config("openai"), userRequest("go"));
  EXPECT_EQ(result.status, OE_UNKNOWN);
  EXPECT_EQ(server_.requestCount(), 1U);
  EXPECT_EQ(result.error, "openai model \"test-model\": POST " + server_.baseUrl() +
                              "/v1/chat/completions answered HTTP 200, but the response is not "
                              "valid JSON: {\"id\": \"chatcmpl-1\", \"choices\": [ this is not "
                              "json. Is the base URL an openai-compatible API?");
}

TEST_F(ResilienceTest, LongBodiesAreCutInMessages) {
  server_.enqueue(FakeLlmServer::json(400, {{"error", {{"message", std::string(5000, 'e')}}}}));
  const CallResult result = complete(config("openai"), userRequest("go"));
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_LT(result.error.size(), 700U);
  EXPECT_NE(result.error.find("eee..."), std::string::npos) << result.error;
}

TEST_F(ResilienceTest, CancelledCallMakesNoRequest) {
  auto ctx = host_.makeContext("n");
  ctx->cancelled = true;
  const CallResult result = complete(config("openai"), userRequest("go"), ctx.get());
  EXPECT_EQ(result.status, OE_CANCELLED);
  EXPECT_EQ(server_.requestCount(), 0U);
}

TEST_F(ResilienceTest, CancellationDuringTheBackoffStopsTheWait) {
  server_.enqueue(FakeLlmServer::rateLimited("30"));
  server_.enqueue(FakeLlmServer::openAiText("never asked for"));
  auto ctx = host_.makeContext("n");
  std::thread canceller([&] {
    // Cancel once the plugin reported its 30 s wait: it is then in the backoff.
    const auto limit = Clock::now() + std::chrono::seconds{30};
    while (Clock::now() < limit) {
      const auto logs = host_.logs();
      if (!logs.empty()) {
        break;
      }
      std::this_thread::sleep_for(milliseconds{5});
    }
    ctx->cancelled = true;
  });
  const auto start = Clock::now();
  const CallResult result = complete(config("openai"), userRequest("go"), ctx.get());
  canceller.join();
  EXPECT_LT(Clock::now() - start, milliseconds{20000});
  EXPECT_EQ(result.status, OE_CANCELLED);
  EXPECT_EQ(result.error, "openai model \"test-model\": POST " + server_.baseUrl() +
                              "/v1/chat/completions cancelled while waiting to retry");
  EXPECT_EQ(server_.requestCount(), 1U);
}

TEST_F(ResilienceTest, CancellationDuringTheRequestAbortsIt) {
  server_.enqueue(FakeLlmServer::stalled(FakeResponse::Stall::kBeforeHeaders));
  auto ctx = host_.makeContext("n");
  std::thread canceller([&] {
    EXPECT_TRUE(server_.waitForRequests(1));
    ctx->cancelled = true;
  });
  const auto start = Clock::now();
  const CallResult result = complete(config("openai"), userRequest("go"), ctx.get());
  canceller.join();
  EXPECT_LT(Clock::now() - start, milliseconds{20000});
  EXPECT_EQ(result.status, OE_CANCELLED);
  EXPECT_EQ(server_.requestCount(), 1U);
}

TEST_F(ResilienceTest, ConfigurationErrorsNameTheField) {
  CallResult result = complete(config("mistral"), userRequest("go"));
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(result.error,
            "unknown LLM provider \"mistral\": the openai-llm plugin serves \"openai\" and "
            "\"anthropic\"");
  result = complete(config("openai", {{"max_attempts", 0}}), userRequest("go"));
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(result.error, "LLM provider config: \"max_attempts\" must be an integer >= 1, got 0");
  result = complete(config("openai", {{"stall_timeout_ms", "10s"}}), userRequest("go"));
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(result.error,
            "LLM provider config: \"stall_timeout_ms\" must be an integer >= 1, got \"10s\"");
  result = complete(config("openai", {{"base_url", "api.example.com/v1"}}), userRequest("go"));
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(result.error,
            "openai base URL \"api.example.com/v1\" must start with http:// or https:// (set "
            "base_url or OPENAI_BASE_URL)");
  EXPECT_EQ(server_.requestCount(), 0U);
}

TEST_F(ResilienceTest, MalformedRequestsAreRejectedBeforeAnyCall) {
  CallResult result = complete(config("openai"), Json{{"model", "m"}});
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(result.error, "LLM request: \"messages\" must be a non-empty array");
  result = complete(config("openai"), userRequest("go", {{"max_tokens", -5}}));
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(result.error, "LLM request: \"max_tokens\" must be a positive integer");
  result = complete(config("openai"), userRequest("go", {{"tools", Json::array({{{"x", 1}}})}}));
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(result.error, "LLM request: every tool needs a string \"name\", got {\"x\":1}");
  EXPECT_EQ(server_.requestCount(), 0U);
}

TEST_F(ResilienceTest, HostWithoutHttpServiceIsAClearError) {
  host_.setExtension(OE_EXT_HTTP, nullptr);
  const CallResult result = complete(config("openai"), userRequest("go"));
  EXPECT_EQ(result.status, OE_FAILED_PRECONDITION);
  EXPECT_NE(result.error.find("needs the host's HTTP service (oe.http/1 with fetch)"),
            std::string::npos)
      << result.error;
}

TEST_F(ResilienceTest, FanOutAgainstAConcurrencyLimitedServerSucceedsByRetrying) {
  server_.rejectAbove(3, FakeLlmServer::rateLimited(""));
  // Every admitted answer is held until a 4th request has arrived: that request finds 3 in
  // flight and is rejected, so at least one caller must retry a 429 to succeed.
  server_.setHandler([](const RecordedRequest&) {
    return FakeLlmServer::heldUntil(FakeLlmServer::openAiText("fine"), 4);
  });
  // Many attempts with a small capped backoff: exhausting them would take ~40 consecutive
  // rejections of one caller, which the 3 free slots make practically impossible.
  const Json cfg = config("openai", {{"max_attempts", 40}, {"base_ms", 5}, {"max_delay_ms", 50}});
  constexpr int kCallers = 12;
  std::atomic<int> ok{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&, i] {
      auto ctx = host_.makeContext("fan" + std::to_string(i));
      const CallResult result = complete(cfg, userRequest("item " + std::to_string(i)), ctx.get());
      if (result.status == OE_OK) {
        ++ok;
      }
    });
  }
  for (auto& t : callers) {
    t.join();
  }
  EXPECT_EQ(ok.load(), kCallers);
  RecordProperty("rejected", static_cast<int>(server_.rejectedCount()));
  EXPECT_GE(server_.rejectedCount(), 1U);
  EXPECT_EQ(server_.requestCount(), kCallers + server_.rejectedCount());
}

}  // namespace
}  // namespace oe::llm::test

// The Anthropic Messages client (upstream anthropic-client test and reference section 7), with the
// same retry behaviour as the OpenAI client.
#include "llm_test_fixture.hpp"

namespace oe::llm::test {
namespace {

using AnthropicTest = LlmPluginTest;

TEST_F(AnthropicTest, ConcatenatesTextBlocksAndMapsUsageAndStopReason) {
  Json body = Json::parse(FakeLlmServer::anthropicMessage("Hello, ", 12, 7).body);
  body["content"].push_back({{"type", "text"}, {"text", "world"}});
  server_.enqueue(FakeLlmServer::json(200, body));
  const Json response = responseOf(complete(
      config("anthropic"), userRequest("hi", {{"system", "be brief"}, {"model", "claude-x"}})));

  EXPECT_EQ(response["text"], "Hello, world");
  EXPECT_EQ(response["usage"], Json({{"input_tokens", 12}, {"output_tokens", 7}}));
  EXPECT_EQ(response["stop_reason"], "end_turn");
  EXPECT_FALSE(response.contains("tool_calls"));
  EXPECT_EQ(response["model"], "claude-sonnet-4-6");

  const auto seen = server_.requests();
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].path, "/v1/messages");
  EXPECT_EQ(seen[0].header("x-api-key"), "test-key");
  EXPECT_EQ(seen[0].header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(seen[0].header("content-type"), "application/json");
  EXPECT_EQ(seen[0].header("authorization"), "");
  const Json sent = seen[0].json();
  EXPECT_EQ(sent["model"], "claude-x");
  EXPECT_EQ(sent["system"], "be brief");
  EXPECT_EQ(sent["max_tokens"], 4096);
  EXPECT_EQ(sent["messages"], Json::parse(R"([{"role":"user","content":"hi"}])"));
  EXPECT_FALSE(sent.contains("tools"));
}

TEST_F(AnthropicTest, SystemIsOmittedWhenNotGiven) {
  server_.enqueue(FakeLlmServer::anthropicMessage("ok"));
  responseOf(complete(config("anthropic"), userRequest("hi")));
  EXPECT_FALSE(onlyRequestBody().contains("system"));
}

TEST_F(AnthropicTest, ToolsAreSentAsTheyAreWithoutToolChoice) {
  server_.enqueue(FakeLlmServer::anthropicMessage("ok"));
  const Json schema = Json::parse(R"({"type":"object","properties":{"a":{"type":"string"}}})");
  responseOf(complete(config("anthropic"),
                      userRequest("go", {{"tools", Json::array({{{"name", "structured_output"},
                                                                 {"description", "d"},
                                                                 {"input_schema", schema}}})}})));
  const Json body = onlyRequestBody();
  EXPECT_EQ(body["tools"],
            Json::array(
                {{{"name", "structured_output"}, {"description", "d"}, {"input_schema", schema}}}));
  EXPECT_FALSE(body.contains("tool_choice"));
}

TEST_F(AnthropicTest, ToolUseBlocksBecomeToolCalls) {
  server_.enqueue(FakeLlmServer::anthropicMessage(
      "Here you go", 3, 4, "tool_use",
      {{"structured_output", Json{{"findings", {"x"}}}}, {"other", Json::object()}}));
  const Json response = responseOf(complete(config("anthropic"), userRequest("go")));
  EXPECT_EQ(response["text"], "Here you go");
  EXPECT_EQ(response["tool_calls"],
            Json::array({{{"name", "structured_output"}, {"input", {{"findings", {"x"}}}}},
                         {{"name", "other"}, {"input", Json::object()}}}));
  EXPECT_EQ(response["stop_reason"], "tool_use");
}

TEST_F(AnthropicTest, MissingKeyNamesAnthropicApiKey) {
  ScopedEnv no_key("ANTHROPIC_API_KEY", std::nullopt);
  ScopedEnv no_base("ANTHROPIC_BASE_URL", std::nullopt);
  // Without base_url the request would go to the real api.anthropic.com: should the key check
  // regress, it must fail here rather than reach it.
  OfflineHttp offline;
  host_.setExtension(OE_EXT_HTTP, offline.api());
  Json cfg = config("anthropic");
  cfg.erase("api_key");
  cfg.erase("base_url");
  const CallResult result = complete(cfg, userRequest("hi"));
  EXPECT_EQ(result.status, OE_FAILED_PRECONDITION);
  EXPECT_EQ(result.error,
            "anthropic provider requires ANTHROPIC_API_KEY: set it in the environment (or api_key "
            "in the provider configuration)");
  EXPECT_EQ(OfflineHttp::fetchCount(), 0);
}

TEST_F(AnthropicTest, KeyAndBaseUrlComeFromTheEnvironment) {
  ScopedEnv key("ANTHROPIC_API_KEY", "env-key");
  ScopedEnv base("ANTHROPIC_BASE_URL", server_.baseUrl() + "/proxy");
  server_.enqueue(FakeLlmServer::anthropicMessage("ok"));
  Json cfg = config("anthropic");
  cfg.erase("api_key");
  cfg.erase("base_url");
  responseOf(complete(cfg, userRequest("hi")));
  const auto seen = server_.requests();
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].path, "/proxy/v1/messages");
  EXPECT_EQ(seen[0].header("x-api-key"), "env-key");
}

TEST_F(AnthropicTest, MaxTokensIsPassedThrough) {
  server_.enqueue(FakeLlmServer::anthropicMessage("ok"));
  responseOf(complete(config("anthropic"), userRequest("go", {{"max_tokens", 100}})));
  EXPECT_EQ(onlyRequestBody()["max_tokens"], 100);
}

TEST_F(AnthropicTest, RequestWithoutModelUsesTheDefaultModel) {
  server_.enqueue(FakeLlmServer::anthropicMessage("ok"));
  Json request = userRequest("hi");
  request.erase("model");
  responseOf(complete(config("anthropic"), request));
  EXPECT_EQ(onlyRequestBody()["model"], "claude-sonnet-4-6");
}

TEST_F(AnthropicTest, RateLimitedThenOkMakesTwoCalls) {
  server_.enqueue(FakeLlmServer::rateLimited(""));
  server_.enqueue(FakeLlmServer::anthropicMessage("after retry"));
  EXPECT_EQ(responseOf(complete(config("anthropic"), userRequest("go")))["text"], "after retry");
  EXPECT_EQ(server_.requestCount(), 2U);
}

TEST_F(AnthropicTest, AlwaysRateLimitedWithMaxThreeMakesThreeCallsThenFails) {
  server_.setHandler([](const RecordedRequest&) { return FakeLlmServer::rateLimited(""); });
  const CallResult result = complete(config("anthropic", {{"max_attempts", 3}}), userRequest("go"));
  EXPECT_EQ(result.status, OE_RESOURCE_EXHAUSTED);
  EXPECT_EQ(server_.requestCount(), 3U);
  EXPECT_TRUE(result.error.starts_with("anthropic model \"test-model\": POST " + server_.baseUrl() +
                                       "/v1/messages answered HTTP 429 after 3 attempts"))
      << result.error;
}

TEST_F(AnthropicTest, BadRequestIsNotRetried) {
  server_.setHandler([](const RecordedRequest&) {
    return FakeLlmServer::json(
        400, {{"type", "error"},
              {"error", {{"type", "invalid_request_error"}, {"message", "max_tokens: too big"}}}});
  });
  const CallResult result = complete(config("anthropic"), userRequest("go"));
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(server_.requestCount(), 1U);
  EXPECT_NE(result.error.find("max_tokens: too big"), std::string::npos) << result.error;
}

TEST_F(AnthropicTest, OverloadedIsRetried) {
  server_.enqueue(FakeLlmServer::serverError(529, "Overloaded"));
  server_.enqueue(FakeLlmServer::anthropicMessage("recovered"));
  EXPECT_EQ(responseOf(complete(config("anthropic"), userRequest("go")))["text"], "recovered");
  EXPECT_EQ(server_.requestCount(), 2U);
}

TEST_F(AnthropicTest, UnauthorizedPointsAtTheKeyVariable) {
  server_.enqueue(FakeLlmServer::json(
      401, {{"type", "error"},
            {"error", {{"type", "authentication_error"}, {"message", "invalid x-api-key"}}}}));
  const CallResult result = complete(config("anthropic"), userRequest("go"));
  EXPECT_EQ(result.status, OE_UNAUTHENTICATED);
  EXPECT_TRUE(result.error.ends_with(
      "Check the API key in ANTHROPIC_API_KEY (or api_key in the provider configuration)."))
      << result.error;
}

TEST_F(AnthropicTest, ResponseWithoutContentBlocksIsAClearError) {
  server_.enqueue(FakeLlmServer::json(200, {{"id", "msg"}, {"type", "message"}}));
  const CallResult result = complete(config("anthropic"), userRequest("go"));
  EXPECT_EQ(result.status, OE_UNKNOWN);
  EXPECT_NE(result.error.find("answered HTTP 200, but the response has no content blocks"),
            std::string::npos)
      << result.error;
}

TEST_F(AnthropicTest, BlocksWithTheWrongTypesAreSkippedNotThrownOn) {
  server_.enqueue(FakeLlmServer::json(
      200, Json::parse(R"({"model": "m", "content": [{"type": ["text"], "text": "no"}, 3,
           {"type": "text", "text": "yes"}, {"type": "tool_use", "name": 5}]})")));
  const Json response = responseOf(complete(config("anthropic"), userRequest("go")));
  EXPECT_EQ(response["text"], "yes");
  EXPECT_FALSE(response.contains("tool_calls"));
}

}  // namespace
}  // namespace oe::llm::test

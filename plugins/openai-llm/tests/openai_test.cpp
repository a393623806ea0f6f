// The OpenAI-compatible client, ported from upstream llm-openai.test (reference section 7), run
// through the real ABI and the host's real HTTP stack against a local server.
#include "llm_test_fixture.hpp"

namespace oe::llm::test {
namespace {

using OpenAiTest = LlmPluginTest;

TEST_F(OpenAiTest, MapsSystemUserTextAndUsage) {
  server_.enqueue(FakeLlmServer::openAiText("Hello there", 7, 3));
  const Json response = responseOf(complete(
      config("openai"), userRequest("hi", {{"system", "be brief"}, {"model", "gpt-4o-mini"}})));

  EXPECT_EQ(response["text"], "Hello there");
  EXPECT_EQ(response["usage"], Json({{"input_tokens", 7}, {"output_tokens", 3}}));
  EXPECT_EQ(response["stop_reason"], "stop");
  EXPECT_FALSE(response.contains("tool_calls"));
  EXPECT_EQ(response["model"], "gpt-4o-2024-11-20");  // what the server says it used

  const auto seen = server_.requests();
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].path, "/v1/chat/completions");
  EXPECT_EQ(seen[0].header("authorization"), "Bearer test-key");
  EXPECT_EQ(seen[0].header("content-type"), "application/json");
  const Json body = seen[0].json();
  EXPECT_EQ(body["model"], "gpt-4o-mini");
  EXPECT_EQ(body["messages"], Json::parse(R"([{"role":"system","content":"be brief"},
                                              {"role":"user","content":"hi"}])"));
  EXPECT_EQ(body["max_tokens"], 4096);
  EXPECT_FALSE(body.contains("tools"));
  EXPECT_FALSE(body.contains("tool_choice"));
}

TEST_F(OpenAiTest, WithoutSystemTheUserMessageComesFirst) {
  server_.enqueue(FakeLlmServer::openAiText("ok"));
  responseOf(complete(config("openai"), userRequest("only user")));
  EXPECT_EQ(onlyRequestBody()["messages"],
            Json::parse(R"([{"role":"user","content":"only user"}])"));
}

TEST_F(OpenAiTest, MissingKeyNamesOpenAiApiKey) {
  ScopedEnv no_key("OPENAI_API_KEY", std::nullopt);
  ScopedEnv no_base("OPENAI_BASE_URL", std::nullopt);
  // The default base URL is the real api.openai.com: should the key check regress, the request
  // must fail here rather than reach it.
  OfflineHttp offline;
  host_.setExtension(OE_EXT_HTTP, offline.api());
  Json cfg = config("openai");
  cfg.erase("api_key");
  cfg.erase("base_url");  // the default api.openai.com needs a key; nothing is sent
  const CallResult result = complete(cfg, userRequest("hi"));
  EXPECT_EQ(result.status, OE_FAILED_PRECONDITION);
  EXPECT_EQ(result.error,
            "openai provider requires OPENAI_API_KEY: set it in the environment (or api_key in "
            "the provider configuration)");
  EXPECT_EQ(OfflineHttp::fetchCount(), 0);
}

TEST_F(OpenAiTest, KeyAndBaseUrlComeFromTheEnvironment) {
  ScopedEnv key("OPENAI_API_KEY", "env-key");
  ScopedEnv base("OPENAI_BASE_URL", server_.baseUrl() + "/compat/v1/");
  server_.enqueue(FakeLlmServer::openAiText("ok"));
  Json cfg = config("openai");
  cfg.erase("api_key");
  cfg.erase("base_url");
  responseOf(complete(cfg, userRequest("hi")));
  const auto seen = server_.requests();
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].path, "/compat/v1/chat/completions");
  EXPECT_EQ(seen[0].header("authorization"), "Bearer env-key");
}

TEST_F(OpenAiTest, CustomBaseUrlNeedsNoKey) {
  ScopedEnv no_key("OPENAI_API_KEY", std::nullopt);
  server_.enqueue(FakeLlmServer::openAiText("local"));
  Json cfg = config("openai");
  cfg.erase("api_key");
  EXPECT_EQ(responseOf(complete(cfg, userRequest("hi")))["text"], "local");
  EXPECT_EQ(server_.requests().at(0).header("authorization"), "");
}

TEST_F(OpenAiTest, SingleToolForcesToolChoice) {
  server_.enqueue(FakeLlmServer::openAiToolCalls({{"structured_output", R"({"a":1})"}}));
  const Json schema = Json::parse(R"({"type":"object","properties":{"a":{"type":"number"}}})");
  const Json response = responseOf(
      complete(config("openai"),
               userRequest("go", {{"tools", Json::array({{{"name", "structured_output"},
                                                          {"description", "Return the result"},
                                                          {"input_schema", schema}}})}})));
  const Json body = onlyRequestBody();
  EXPECT_EQ(body["tools"], Json::array({{{"type", "function"},
                                         {"function",
                                          {{"name", "structured_output"},
                                           {"description", "Return the result"},
                                           {"parameters", schema}}}}}));
  EXPECT_EQ(body["tool_choice"],
            Json({{"type", "function"}, {"function", {{"name", "structured_output"}}}}));
  EXPECT_EQ(response["tool_calls"],
            Json::array({{{"name", "structured_output"}, {"input", {{"a", 1}}}}}));
  EXPECT_EQ(response["stop_reason"], "tool_calls");
  EXPECT_EQ(response["text"], "");  // content null
}

TEST_F(OpenAiTest, SeveralToolsRequireSomeToolCall) {
  server_.enqueue(FakeLlmServer::openAiText("ok"));
  responseOf(
      complete(config("openai"),
               userRequest("go", {{"tools", Json::array({{{"name", "a"}}, {{"name", "b"}}})}})));
  const Json body = onlyRequestBody();
  EXPECT_EQ(body["tool_choice"], "required");
  ASSERT_EQ(body["tools"].size(), 2U);
  EXPECT_EQ(body["tools"][1]["function"]["name"], "b");
}

TEST_F(OpenAiTest, NoFunctionCallLeavesToolCallsOutAndStopIsStop) {
  server_.enqueue(FakeLlmServer::openAiText("just text"));
  const Json response = responseOf(
      complete(config("openai"),
               userRequest("go", {{"tools", Json::array({{{"name", "structured_output"}}})}})));
  EXPECT_FALSE(response.contains("tool_calls"));
  EXPECT_EQ(response["stop_reason"], "stop");
  EXPECT_EQ(response["text"], "just text");
}

TEST_F(OpenAiTest, InvalidArgumentsAreKeptRaw) {
  server_.enqueue(FakeLlmServer::openAiToolCalls({{"structured_output", "{not valid json"}}));
  const Json response = responseOf(complete(config("openai"), userRequest("go")));
  EXPECT_EQ(
      response["tool_calls"],
      Json::array({{{"name", "structured_output"}, {"input", {{"_raw", "{not valid json"}}}}}));
}

TEST_F(OpenAiTest, MaxTokensIsPassedThrough) {
  server_.enqueue(FakeLlmServer::openAiText("ok"));
  responseOf(complete(config("openai"), userRequest("go", {{"max_tokens", 100}})));
  EXPECT_EQ(onlyRequestBody()["max_tokens"], 100);
}

TEST_F(OpenAiTest, ThinkPrefixIsStrippedFromArguments) {
  server_.enqueue(FakeLlmServer::openAiToolCalls(
      {{"structured_output",
        "<think>\nLet me reason about it...\n</think>\n{\"findings\":[\"a\",\"b\"]}"}}));
  const Json response = responseOf(complete(config("openai"), userRequest("go")));
  EXPECT_EQ(response["tool_calls"][0]["input"], Json({{"findings", {"a", "b"}}}));
}

TEST_F(OpenAiTest, ArgumentsThatAreNotJsonAtAllAreKeptRaw) {
  server_.enqueue(FakeLlmServer::openAiToolCalls({{"structured_output", "not json at all"}}));
  const Json response = responseOf(complete(config("openai"), userRequest("go")));
  EXPECT_EQ(response["tool_calls"][0]["input"], Json({{"_raw", "not json at all"}}));
}

TEST_F(OpenAiTest, RawKeepsTheOriginalStringWhenThinkIsFollowedByGarbage) {
  const std::string raw = "<think>x</think> still not json";
  server_.enqueue(FakeLlmServer::openAiToolCalls({{"f", raw}}));
  const Json response = responseOf(complete(config("openai"), userRequest("go")));
  EXPECT_EQ(response["tool_calls"][0]["input"], Json({{"_raw", raw}}));
}

TEST_F(OpenAiTest, EmptyArgumentsAreAnEmptyObject) {
  server_.enqueue(FakeLlmServer::openAiToolCalls({{"ping", ""}}));
  const Json response = responseOf(complete(config("openai"), userRequest("go")));
  EXPECT_EQ(response["tool_calls"][0]["input"], Json::object());
}

TEST_F(OpenAiTest, FreeTextContentKeepsItsThinkBlock) {
  server_.enqueue(FakeLlmServer::openAiText("<think>hmm</think>The answer"));
  const Json response = responseOf(complete(config("openai"), userRequest("go")));
  EXPECT_EQ(response["text"], "<think>hmm</think>The answer");
}

TEST_F(OpenAiTest, CallsThatAreNotNamedFunctionsAreDropped) {
  Json body = Json::parse(FakeLlmServer::openAiText("").body);
  body["choices"][0]["message"]["tool_calls"] = Json::parse(R"([
      {"type": "function", "function": {"name": "", "arguments": "{}"}},
      {"type": "retrieval", "function": {"name": "r", "arguments": "{}"}},
      {"type": "function", "function": {"arguments": "{}"}},
      {"type": "function", "function": {"name": "kept", "arguments": "{\"k\":true}"}}])");
  server_.enqueue(FakeLlmServer::json(200, body));
  const Json response = responseOf(complete(config("openai"), userRequest("go")));
  EXPECT_EQ(response["tool_calls"], Json::array({{{"name", "kept"}, {"input", {{"k", true}}}}}));
}

TEST_F(OpenAiTest, MembersOfTheWrongTypeAreSkippedNotThrownOn) {
  Json body = Json::parse(FakeLlmServer::openAiText("").body);
  body["choices"][0]["message"]["content"] =
      Json::parse(R"([{"type": 7, "text": "no"}, {"type": "text", "text": "yes"}, "loose"])");
  body["choices"][0]["message"]["tool_calls"] = Json::parse(R"([
      {"type": ["function"], "function": {"name": "odd", "arguments": "{}"}},
      {"function": {"name": "untyped", "arguments": "{}"}}])");
  server_.enqueue(FakeLlmServer::json(200, body));
  Json not_an_object = Json::parse(FakeLlmServer::openAiText("").body);
  not_an_object["choices"] = Json::array({"a string choice"});
  server_.enqueue(FakeLlmServer::json(200, not_an_object));
  const Json response = responseOf(complete(config("openai"), userRequest("go")));
  EXPECT_EQ(response["text"], "yes");
  EXPECT_EQ(response["tool_calls"], Json::array({{{"name", "untyped"}, {"input", Json::object()}}}));
  const CallResult refused = complete(config("openai"), userRequest("again"));
  EXPECT_EQ(refused.status, OE_UNKNOWN);
  EXPECT_NE(refused.error.find("the response has no choices"), std::string::npos) << refused.error;
}

TEST_F(OpenAiTest, MissingUsageNumbersAreZeroAndMissingUsageIsOmitted) {
  Json partial = Json::parse(FakeLlmServer::openAiText("x").body);
  partial["usage"] = Json{{"prompt_tokens", 5}};
  Json none = Json::parse(FakeLlmServer::openAiText("y").body);
  none.erase("usage");
  server_.enqueue(FakeLlmServer::json(200, partial));
  server_.enqueue(FakeLlmServer::json(200, none));
  EXPECT_EQ(responseOf(complete(config("openai"), userRequest("a")))["usage"],
            Json({{"input_tokens", 5}, {"output_tokens", 0}}));
  EXPECT_FALSE(responseOf(complete(config("openai"), userRequest("b"))).contains("usage"));
}

TEST_F(OpenAiTest, RequestWithoutModelUsesTheDefaultModel) {
  server_.enqueue(FakeLlmServer::openAiText("ok"));
  Json request = userRequest("hi");
  request.erase("model");
  responseOf(complete(config("openai"), request));
  EXPECT_EQ(onlyRequestBody()["model"], "gpt-4o-2024-11-20");
}

TEST_F(OpenAiTest, RateLimitedThenOkMakesTwoCalls) {
  server_.enqueue(FakeLlmServer::rateLimited(""));
  server_.enqueue(FakeLlmServer::openAiText("after retry"));
  const Json response = responseOf(complete(config("openai"), userRequest("go")));
  EXPECT_EQ(response["text"], "after retry");
  EXPECT_EQ(server_.requestCount(), 2U);
}

TEST_F(OpenAiTest, AlwaysRateLimitedWithMaxThreeMakesThreeCallsThenFails) {
  server_.setHandler([](const RecordedRequest&) { return FakeLlmServer::rateLimited(""); });
  const CallResult result = complete(config("openai", {{"max_attempts", 3}}), userRequest("go"));
  EXPECT_EQ(result.status, OE_RESOURCE_EXHAUSTED);
  EXPECT_EQ(server_.requestCount(), 3U);
  EXPECT_TRUE(result.error.starts_with("openai model \"test-model\": POST " + server_.baseUrl() +
                                       "/v1/chat/completions answered HTTP 429 after 3 attempts: "
                                       "{\"error\""))
      << result.error;
  EXPECT_TRUE(result.error.ends_with(
      "Still rate limited after 3 attempts: lower runtime.limits for this provider or retry "
      "later."))
      << result.error;
}

TEST_F(OpenAiTest, BadRequestIsNotRetried) {
  server_.setHandler([](const RecordedRequest&) {
    return FakeLlmServer::json(400,
                               {{"error", {{"message", "Unsupported parameter: 'max_tokens'"}}}});
  });
  const CallResult result = complete(config("openai"), userRequest("go"));
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(server_.requestCount(), 1U);
  EXPECT_NE(result.error.find("answered HTTP 400: {\"error\":{\"message\":\"Unsupported parameter"),
            std::string::npos)
      << result.error;
}

TEST_F(OpenAiTest, UnauthorizedPointsAtTheKeyVariable) {
  server_.enqueue(
      FakeLlmServer::json(401, {{"error", {{"message", "Incorrect API key provided"}}}}));
  const CallResult result = complete(config("openai"), userRequest("go"));
  EXPECT_EQ(result.status, OE_UNAUTHENTICATED);
  EXPECT_EQ(server_.requestCount(), 1U);
  EXPECT_TRUE(result.error.ends_with(
      "Check the API key in OPENAI_API_KEY (or api_key in the provider configuration)."))
      << result.error;
}

TEST_F(OpenAiTest, NotFoundPointsAtModelAndBaseUrl) {
  server_.enqueue(FakeLlmServer::json(404, {{"error", {{"message", "model not found"}}}}));
  const CallResult result = complete(config("openai"), userRequest("go"));
  EXPECT_EQ(result.status, OE_NOT_FOUND);
  EXPECT_NE(
      result.error.find("Check the model name and the base URL (base_url or OPENAI_BASE_URL)"),
      std::string::npos)
      << result.error;
}

}  // namespace
}  // namespace oe::llm::test

// The fake LLM server's own contract (it stands in for providers in many suites): scripted
// order, handler fallback, recording, overload mode, and stopping with connections still open.
#include "support/fake_llm_server.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "oe/net/http_client.hpp"

namespace oe::test {
namespace {

using oe::net::HttpRequest;
using oe::net::request;

HttpRequest post(const FakeLlmServer& server, const std::string& path, std::string body = "{}") {
  HttpRequest req;
  req.method = "POST";
  req.url = server.baseUrl() + path;
  req.body = std::move(body);
  return req;
}

TEST(FakeLlmServerTest, ScriptIsConsumedInOrderThenTheHandlerAnswers) {
  FakeLlmServer server;
  server.enqueue(FakeLlmServer::openAiText("first"));
  server.enqueue(FakeLlmServer::anthropicMessage("second"));
  server.setHandler([](const RecordedRequest& r) {
    return FakeLlmServer::json(200, {{"echo", r.json()}});
  });
  auto a = request(post(server, "/v1/chat/completions"), {});
  auto b = request(post(server, "/v1/messages"), {});
  auto c = request(post(server, "/v1/messages", R"({"n":3})"), {});
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(nlohmann::json::parse(a->body)["choices"][0]["message"]["content"], "first");
  EXPECT_EQ(nlohmann::json::parse(b->body)["content"][0]["text"], "second");
  EXPECT_EQ(nlohmann::json::parse(c->body)["echo"]["n"], 3);
  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 3U);
  EXPECT_EQ(seen[0].path, "/v1/chat/completions");
  EXPECT_EQ(seen[1].path, "/v1/messages");
  EXPECT_LE(seen[0].received, seen[1].received);
}

TEST(FakeLlmServerTest, UnscriptedRequestGetsA500ThatSaysSo) {
  FakeLlmServer server;
  auto r = request(post(server, "/v1/messages"), {});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_NE(r->body.find("no scripted response for POST /v1/messages"), std::string::npos);
}

TEST(FakeLlmServerTest, BuildersProduceTheProviderShapes) {
  const auto tool = nlohmann::json::parse(
      FakeLlmServer::openAiToolCalls({{"structured_output", "{not valid json"}}).body);
  EXPECT_EQ(tool["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(tool["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            "{not valid json");
  const auto msg = nlohmann::json::parse(
      FakeLlmServer::anthropicMessage("hi", 1, 2, "tool_use", {{"t", {{"a", 1}}}}).body);
  EXPECT_EQ(msg["content"][1]["type"], "tool_use");
  EXPECT_EQ(msg["content"][1]["input"]["a"], 1);
  EXPECT_EQ(msg["usage"]["output_tokens"], 2);
  EXPECT_TRUE(
      nlohmann::json::parse(FakeLlmServer::malformedJson().body, nullptr, false).is_discarded());
}

TEST(FakeLlmServerTest, OverloadModeRejectsRequestsAboveTheLimit) {
  FakeLlmServer server;
  server.rejectAbove(2);
  // Two requests held in flight (the server never answers them) ...
  server.enqueue(FakeLlmServer::stalled(FakeResponse::Stall::kBeforeHeaders));
  server.enqueue(FakeLlmServer::stalled(FakeResponse::Stall::kBeforeHeaders));
  std::atomic<bool> release{false};
  auto hold = [&] {
    auto r = request(post(server, "/v1/messages"), [&] { return release.load(); });
    EXPECT_FALSE(r);
  };
  std::thread first(hold);
  ASSERT_TRUE(server.waitForRequests(1));
  std::thread second(hold);
  ASSERT_TRUE(server.waitForRequests(2));
  // ... so a third one is answered 429 at once.
  auto third = request(post(server, "/v1/messages"), {});
  release = true;
  first.join();
  second.join();
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ(third->status, 429);
  EXPECT_EQ(third->header("retry-after"), "1");
  EXPECT_EQ(server.peakInFlight(), 2U);
  EXPECT_EQ(server.rejectedCount(), 1U);
}

TEST(FakeLlmServerTest, StopsWhileAConnectionIsStalled) {
  auto server = std::make_unique<FakeLlmServer>();
  server->enqueue(FakeLlmServer::stalled(FakeResponse::Stall::kAfterHeaders));
  std::thread client([&] {
    auto r = request(post(*server, "/v1/chat/completions"), {});
    EXPECT_FALSE(r);  // the server went away mid-response
  });
  ASSERT_TRUE(server->waitForRequests(1));
  server->stop();
  client.join();
  server.reset();
}

}  // namespace
}  // namespace oe::test

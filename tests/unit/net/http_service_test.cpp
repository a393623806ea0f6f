// oe.http/1 as a plugin sees it: the C table called with JSON through a host table (the
// FakeHost's writers and cancellation), against a real local server.
#include "oe/net/http_service.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "support/fake_host.hpp"
#include "support/fake_llm_server.hpp"

namespace oe::net {
namespace {

using oe::test::FakeContext;
using oe::test::FakeHost;
using oe::test::FakeLlmServer;
using oe::test::FakeResponse;
using oe::test::FakeWriter;

struct Outcome {
  oe_status status = OE_UNKNOWN;
  std::string response;
  std::string error;
};

class HttpServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    initNet();
    setHostApi(host_.api());
  }

  Outcome call(const nlohmann::json& request, FakeContext* ctx = nullptr) {
    return callRaw(request.dump(), ctx);
  }
  Outcome callRaw(const std::string& text, FakeContext* ctx = nullptr) {
    oe_host_buf response{};
    oe_host_buf error{};
    Outcome out;
    out.status = httpApi()->fetch(ctx == nullptr ? host_.pluginContext() : FakeHost::context(*ctx),
                                  oe_str{text.data(), text.size()}, &response, &error);
    out.response = response.ptr == nullptr ? "" : std::string(response.ptr, response.len);
    out.error = error.ptr == nullptr ? "" : std::string(error.ptr, error.len);
    host_.api()->release(nullptr, &response);
    host_.api()->release(nullptr, &error);
    return out;
  }

  FakeHost host_;
  FakeLlmServer server_;
};

TEST_F(HttpServiceTest, TableDescribesItself) {
  ASSERT_NE(httpApi(), nullptr);
  EXPECT_EQ(httpApi()->struct_size, sizeof(oe_http_api));
  EXPECT_NE(httpApi()->fetch, nullptr);
}

TEST_F(HttpServiceTest, FetchHandsBackTheResponseInAHostBuffer) {
  server_.enqueue(FakeLlmServer::openAiText("hello"));
  const std::string req = nlohmann::json{
      {"method", "POST"},
      {"url", server_.baseUrl() + "/v1/chat/completions"},
      {"body", "{}"}}.dump();
  oe_host_buf response{};
  oe_host_buf error{};
  const oe_status status =
      httpApi()->fetch(host_.pluginContext(), oe_str{req.data(), req.size()}, &response, &error);
  ASSERT_EQ(status, OE_OK);
  EXPECT_EQ(error.ptr, nullptr);
  ASSERT_NE(response.ptr, nullptr);
  const auto doc = nlohmann::json::parse(std::string_view(response.ptr, response.len));
  EXPECT_EQ(doc["status"], 200);
  EXPECT_NE(doc["body"].get<std::string>().find("hello"), std::string::npos);
  host_.api()->release(nullptr, &response);
  EXPECT_EQ(response.ptr, nullptr);
  EXPECT_EQ(response.opaque, nullptr);
  // A released buffer is empty: releasing again is harmless.
  host_.api()->release(nullptr, &response);
  host_.api()->release(nullptr, nullptr);
}

TEST_F(HttpServiceTest, FetchHandsBackTheErrorInAHostBuffer) {
  const std::string req = R"({"url": ""})";
  oe_host_buf response{};
  oe_host_buf error{};
  const oe_status status =
      httpApi()->fetch(host_.pluginContext(), oe_str{req.data(), req.size()}, &response, &error);
  EXPECT_EQ(status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(response.ptr, nullptr);
  ASSERT_NE(error.ptr, nullptr);
  EXPECT_EQ(std::string_view(error.ptr, error.len),
            "oe.http/1 request: \"url\" must be a non-empty string");
  host_.api()->release(nullptr, &error);
}

TEST_F(HttpServiceTest, RequestAndResponseTravelAsJson) {
  FakeResponse answer = FakeLlmServer::rateLimited("3");
  answer.headers.emplace_back("X-Trace", "t1");
  server_.enqueue(answer);
  const Outcome out = call({{"method", "POST"},
                            {"url", server_.baseUrl() + "/v1/chat/completions"},
                            {"headers", {{"Content-Type", "application/json"}, {"X-Key", "k"}}},
                            {"body", R"({"model":"m"})"},
                            {"timeout_ms", 10000},
                            {"stall_timeout_ms", 5000}});
  ASSERT_EQ(out.status, OE_OK) << out.error;
  const auto doc = nlohmann::json::parse(out.response);
  EXPECT_EQ(doc["status"], 429);
  EXPECT_EQ(doc["headers"]["retry-after"], "3");
  EXPECT_EQ(doc["headers"]["x-trace"], "t1");
  EXPECT_EQ(nlohmann::json::parse(doc["body"].get<std::string>())["error"]["type"],
            "rate_limit_error");
  const auto seen = server_.requests();
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].body, R"({"model":"m"})");
  EXPECT_EQ(seen[0].header("x-key"), "k");
}

TEST_F(HttpServiceTest, MethodDefaultsToGet) {
  server_.enqueue(FakeLlmServer::json(200, {{"rows", 3}}));
  const Outcome out = call({{"url", server_.baseUrl() + "/data"}});
  ASSERT_EQ(out.status, OE_OK) << out.error;
  EXPECT_EQ(server_.requests().at(0).method, "GET");
}

TEST_F(HttpServiceTest, MalformedRequestsAreRejectedWithTheReason) {
  Outcome out = callRaw("{not json");
  EXPECT_EQ(out.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(out.error, "oe.http/1 request is not a JSON object");
  out = call({{"method", "GET"}});
  EXPECT_EQ(out.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(out.error, "oe.http/1 request: \"url\" must be a non-empty string");
  out = call({{"url", "http://127.0.0.1:1/"}, {"headers", {{"X", 1}}}});
  EXPECT_EQ(out.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(out.error, "oe.http/1 request: header \"X\" must be a string");
  out = call({{"url", "http://127.0.0.1:1/"}, {"body", {{"a", 1}}}});
  EXPECT_EQ(out.status, OE_INVALID_ARGUMENT);
  EXPECT_NE(out.error.find("\"body\" must be a string"), std::string::npos);
  out = call({{"url", "http://127.0.0.1:1/"}, {"stall_timeout_ms", 0}});
  EXPECT_EQ(out.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(out.error,
            "oe.http/1 request: \"stall_timeout_ms\" must be a positive integer (milliseconds), "
            "got 0");
  EXPECT_EQ(server_.requestCount(), 0U);
}

TEST_F(HttpServiceTest, ConnectionRefusedIsUnavailable) {
  std::string url;
  {
    FakeLlmServer gone;
    url = gone.baseUrl() + "/v1/messages";
  }
  const Outcome out = call({{"url", url}});
  EXPECT_EQ(out.status, OE_UNAVAILABLE);
  EXPECT_TRUE(out.error.starts_with("GET " + url + " failed: could not connect")) << out.error;
  EXPECT_TRUE(out.response.empty());
}

TEST_F(HttpServiceTest, StallTimeoutFromTheRequestJsonIsHonoured) {
  server_.enqueue(FakeLlmServer::stalled());
  const Outcome out = call({{"url", server_.baseUrl() + "/s"}, {"stall_timeout_ms", 100}});
  EXPECT_EQ(out.status, OE_DEADLINE_EXCEEDED);
  EXPECT_NE(out.error.find("no data received for 100 ms"), std::string::npos) << out.error;
}

TEST_F(HttpServiceTest, CancellingTheCallContextAbortsTheRequest) {
  server_.enqueue(FakeLlmServer::stalled(FakeResponse::Stall::kBeforeHeaders));
  auto ctx = host_.makeContext("agent1");
  std::thread canceller([&] {
    ASSERT_TRUE(server_.waitForRequests(1));
    ctx->cancelled = true;
  });
  const auto start = std::chrono::steady_clock::now();
  const Outcome out = call({{"url", server_.baseUrl() + "/hang"}}, ctx.get());
  canceller.join();
  EXPECT_EQ(out.status, OE_CANCELLED);
  EXPECT_NE(out.error.find("cancelled"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds{30});
}

TEST_F(HttpServiceTest, NonUtf8BodyIsReplacedNotFatal) {
  FakeResponse answer;
  answer.content_type = "application/octet-stream";
  answer.body = std::string("ok\xff\xfe", 4);
  server_.enqueue(answer);
  const Outcome out = call({{"url", server_.baseUrl() + "/bin"}});
  ASSERT_EQ(out.status, OE_OK) << out.error;
  EXPECT_EQ(nlohmann::json::parse(out.response)["body"], "ok\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_F(HttpServiceTest, WithoutARegisteredHostTheServiceRefuses) {
  setHostApi(nullptr);
  const Outcome out = call({{"url", server_.baseUrl() + "/x"}});
  EXPECT_EQ(out.status, OE_FAILED_PRECONDITION);
  const std::string req = nlohmann::json{{"url", server_.baseUrl() + "/x"}}.dump();
  oe_host_buf response{};
  oe_host_buf error{};
  EXPECT_EQ(httpApi()->fetch(nullptr, oe_str{req.data(), req.size()}, &response, &error),
            OE_FAILED_PRECONDITION);
  ASSERT_NE(error.ptr, nullptr);
  EXPECT_NE(std::string_view(error.ptr, error.len).find("setHostApi"), std::string::npos);
  host_.api()->release(nullptr, &error);
  setHostApi(host_.api());
  EXPECT_EQ(server_.requestCount(), 0U);
}

}  // namespace
}  // namespace oe::net

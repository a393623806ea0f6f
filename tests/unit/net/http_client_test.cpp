// oe::net::request against a real local HTTP server (support/fake_llm_server.hpp): methods,
// headers, bodies, status passthrough, keep-alive, the stall and total timeouts, cancellation and
// connection failures.
#include "oe/net/http_client.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "support/fake_llm_server.hpp"

namespace oe::net {
namespace {

using oe::test::FakeLlmServer;
using oe::test::FakeResponse;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class HttpClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { initNet(); }

  HttpRequest get(const std::string& path) const {
    HttpRequest req;
    req.url = server_.baseUrl() + path;
    return req;
  }

  FakeLlmServer server_;
};

TEST_F(HttpClientTest, GetReturnsStatusHeadersAndBody) {
  FakeResponse answer = FakeLlmServer::json(200, {{"data", {"m1", "m2"}}});
  answer.headers.emplace_back("X-Request-Id", "req-42");
  server_.enqueue(answer);
  HttpRequest req = get("/v1/models?limit=2");
  req.headers.emplace_back("X-Test", "yes");
  req.headers.emplace_back("Authorization", "Bearer k");

  auto result = request(req, {});
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(nlohmann::json::parse(result->body), nlohmann::json({{"data", {"m1", "m2"}}}));
  EXPECT_EQ(result->header("x-request-id"), "req-42");
  EXPECT_EQ(result->header("content-type"), "application/json");
  EXPECT_EQ(result->header("X-Request-Id"), "");  // lookups take the lower-cased name

  const auto seen = server_.requests();
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].method, "GET");
  EXPECT_EQ(seen[0].path, "/v1/models?limit=2");
  EXPECT_EQ(seen[0].header("x-test"), "yes");
  EXPECT_EQ(seen[0].header("authorization"), "Bearer k");
  EXPECT_EQ(seen[0].header("expect"), "");
  EXPECT_TRUE(seen[0].body.empty());
}

TEST_F(HttpClientTest, PostSendsALargeBodyWithoutWaitingForContinue) {
  server_.enqueue(FakeLlmServer::openAiText("ok"));
  HttpRequest req = get("/v1/chat/completions");
  req.method = "POST";
  req.headers.emplace_back("Content-Type", "application/json");
  const std::string big(200000, 'x');
  req.body = nlohmann::json{{"prompt", big}}.dump();

  auto result = request(req, {});
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->status, 200);
  const auto seen = server_.requests();
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].body, req.body);
  EXPECT_EQ(seen[0].header("content-type"), "application/json");
  EXPECT_EQ(seen[0].header("content-length"), std::to_string(req.body.size()));
}

TEST_F(HttpClientTest, OtherMethodsAreSentAsGiven) {
  server_.enqueue(FakeLlmServer::json(200, {{"ok", true}}));
  server_.enqueue(FakeLlmServer::json(204, nullptr));
  HttpRequest put = get("/items/1");
  put.method = "PUT";
  put.body = R"({"v":1})";
  ASSERT_TRUE(request(put, {}));
  HttpRequest del = get("/items/1");
  del.method = "DELETE";
  auto deleted = request(del, {});
  ASSERT_TRUE(deleted) << deleted.error().message;
  EXPECT_EQ(deleted->status, 204);
  const auto seen = server_.requests();
  ASSERT_EQ(seen.size(), 2U);
  EXPECT_EQ(seen[0].method, "PUT");
  EXPECT_EQ(seen[0].body, R"({"v":1})");
  EXPECT_EQ(seen[1].method, "DELETE");
  EXPECT_TRUE(seen[1].body.empty());
}

TEST_F(HttpClientTest, ErrorStatusesAreResponsesNotFailures) {
  server_.enqueue(FakeLlmServer::rateLimited("7"));
  server_.enqueue(FakeLlmServer::serverError(503, "overloaded"));
  auto limited = request(get("/a"), {});
  ASSERT_TRUE(limited) << limited.error().message;
  EXPECT_EQ(limited->status, 429);
  EXPECT_EQ(limited->header("retry-after"), "7");
  auto down = request(get("/b"), {});
  ASSERT_TRUE(down) << down.error().message;
  EXPECT_EQ(down->status, 503);
  EXPECT_NE(down->body.find("overloaded"), std::string::npos);
}

TEST_F(HttpClientTest, RepeatedResponseHeadersAreJoined) {
  FakeResponse answer = FakeLlmServer::json(200, nullptr);
  answer.headers.emplace_back("X-Multi", "a");
  answer.headers.emplace_back("x-multi", "b");
  server_.enqueue(answer);
  auto result = request(get("/"), {});
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->header("x-multi"), "a, b");
}

TEST_F(HttpClientTest, ConsecutiveRequestsOnAThreadReuseTheConnection) {
  for (int i = 0; i < 3; ++i) {
    server_.enqueue(FakeLlmServer::openAiText("r" + std::to_string(i)));
  }
  for (int i = 0; i < 3; ++i) {
    auto result = request(get("/v1/x"), {});
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_NE(result->body.find("r" + std::to_string(i)), std::string::npos);
  }
  EXPECT_EQ(server_.requestCount(), 3U);
  EXPECT_EQ(server_.connectionCount(), 1U);
}

TEST_F(HttpClientTest, ResponseStalledAfterHeadersHitsTheStallTimeout) {
  server_.enqueue(FakeLlmServer::stalled(FakeResponse::Stall::kAfterHeaders));
  HttpRequest req = get("/v1/chat/completions");
  req.stall_timeout = milliseconds{200};
  oe_status status = OE_OK;
  const auto start = Clock::now();
  auto result = request(req, {}, &status);
  ASSERT_FALSE(result);
  EXPECT_EQ(status, OE_DEADLINE_EXCEEDED);
  EXPECT_LT(Clock::now() - start, milliseconds{30000});
  EXPECT_EQ(result.error().message, "GET " + server_.baseUrl() +
                                        "/v1/chat/completions failed: no data received for 200 "
                                        "ms (stall_timeout_ms); the server stopped responding");
}

TEST_F(HttpClientTest, ServerSilentFromTheStartHitsTheStallTimeout) {
  server_.enqueue(FakeLlmServer::stalled(FakeResponse::Stall::kBeforeHeaders));
  HttpRequest req = get("/silent");
  req.stall_timeout = milliseconds{150};
  oe_status status = OE_OK;
  auto result = request(req, {}, &status);
  ASSERT_FALSE(result);
  EXPECT_EQ(status, OE_DEADLINE_EXCEEDED);
  EXPECT_NE(result.error().message.find("stall_timeout_ms"), std::string::npos);
}

TEST_F(HttpClientTest, SlowResponseHitsTheTotalTimeout) {
  server_.enqueue(FakeLlmServer::delayed(FakeLlmServer::openAiText("late"), milliseconds{60000}));
  HttpRequest req = get("/slow");
  req.timeout = milliseconds{300};
  oe_status status = OE_OK;
  auto result = request(req, {}, &status);
  ASSERT_FALSE(result);
  EXPECT_EQ(status, OE_DEADLINE_EXCEEDED);
  EXPECT_NE(result.error().message.find("no complete response within 300 ms (timeout_ms)"),
            std::string::npos)
      << result.error().message;
}

TEST_F(HttpClientTest, CancellationAbortsARequestInFlightQuickly) {
  server_.enqueue(FakeLlmServer::stalled(FakeResponse::Stall::kBeforeHeaders));
  std::atomic<bool> cancel{false};
  Clock::time_point cancelled_at;
  std::thread canceller([&] {
    ASSERT_TRUE(server_.waitForRequests(1));
    cancelled_at = Clock::now();
    cancel = true;
  });
  oe_status status = OE_OK;
  auto result = request(
      get("/hang"), [&] { return cancel.load(); }, &status);
  const auto returned_at = Clock::now();
  canceller.join();
  ASSERT_FALSE(result);
  EXPECT_EQ(status, OE_CANCELLED);
  EXPECT_EQ(result.error().message, "GET " + server_.baseUrl() + "/hang failed: cancelled");
  // The loop polls every 50 ms; 2 s leaves room for a loaded machine.
  EXPECT_LT(returned_at - cancelled_at, milliseconds{2000});
}

TEST_F(HttpClientTest, ConnectionStillWorksAfterAnAbortedRequest) {
  server_.enqueue(FakeLlmServer::stalled(FakeResponse::Stall::kAfterHeaders));
  server_.enqueue(FakeLlmServer::openAiText("fine"));
  HttpRequest stalled = get("/stall");
  stalled.stall_timeout = milliseconds{100};
  ASSERT_FALSE(request(stalled, {}));
  auto next = request(get("/next"), {});
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_EQ(next->status, 200);
  EXPECT_EQ(server_.connectionCount(), 2U);  // the aborted connection was not reused
}

TEST_F(HttpClientTest, ConnectionRefusedIsUnavailableAndNamesTheUrl) {
  std::string url;
  {
    FakeLlmServer gone;
    url = gone.baseUrl() + "/v1/messages";
  }  // stopped: nothing listens on that port any more
  HttpRequest req;
  req.method = "POST";
  req.url = url;
  oe_status status = OE_OK;
  auto result = request(req, {}, &status);
  ASSERT_FALSE(result);
  EXPECT_EQ(status, OE_UNAVAILABLE);
  EXPECT_TRUE(result.error().message.starts_with("POST " + url + " failed: could not connect ("))
      << result.error().message;
  EXPECT_NE(result.error().message.find("is the server running and the URL right?"),
            std::string::npos);
}

TEST_F(HttpClientTest, SecretsInTheUrlStayOutOfMessages) {
  std::string base;
  {
    FakeLlmServer gone;
    base = gone.baseUrl();
  }
  HttpRequest req;
  req.url = "http://user:hunter2@" + base.substr(7) + "/v1/models?key=sk-secret";
  auto result = request(req, {});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message.find("sk-secret"), std::string::npos) << result.error().message;
  EXPECT_EQ(result.error().message.find("hunter2"), std::string::npos) << result.error().message;
  EXPECT_TRUE(result.error().message.starts_with("GET " + base + "/v1/models?... failed"))
      << result.error().message;
}

TEST_F(HttpClientTest, MalformedRequestsAreInvalidArguments) {
  oe_status status = OE_OK;
  HttpRequest ftp;
  ftp.url = "ftp://127.0.0.1/file";
  auto r1 = request(ftp, {}, &status);
  ASSERT_FALSE(r1);
  EXPECT_EQ(status, OE_INVALID_ARGUMENT);
  EXPECT_NE(r1.error().message.find("not a valid http(s) URL"), std::string::npos)
      << r1.error().message;

  HttpRequest bad_method = get("/");
  bad_method.method = "GE T";
  auto r2 = request(bad_method, {}, &status);
  ASSERT_FALSE(r2);
  EXPECT_EQ(status, OE_INVALID_ARGUMENT);

  HttpRequest bad_header = get("/");
  bad_header.headers.emplace_back("X-Evil", "a\r\nInjected: 1");
  auto r3 = request(bad_header, {}, &status);
  ASSERT_FALSE(r3);
  EXPECT_EQ(status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(server_.requestCount(), 0U);
}

TEST_F(HttpClientTest, ResponseOverTheSizeLimitIsRefused) {
  server_.enqueue(FakeLlmServer::openAiText(std::string(5000, 'y')));
  HttpRequest req = get("/big");
  req.max_response_bytes = 1000;
  oe_status status = OE_OK;
  auto result = request(req, {}, &status);
  ASSERT_FALSE(result);
  EXPECT_EQ(status, OE_RESOURCE_EXHAUSTED);
  EXPECT_NE(result.error().message.find("exceeds 1000 bytes"), std::string::npos);
}

TEST_F(HttpClientTest, ThreadsRequestConcurrently) {
  server_.setHandler([](const oe::test::RecordedRequest& r) {
    return FakeLlmServer::json(200, {{"path", r.path}});
  });
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int j = 0; j < 5; ++j) {
        const std::string path = "/t" + std::to_string(i) + "/" + std::to_string(j);
        auto result = request(get(path), {});
        if (result && nlohmann::json::parse(result->body)["path"] == path) {
          ++ok;
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(ok.load(), kThreads * 5);
  EXPECT_LE(server_.connectionCount(), static_cast<size_t>(kThreads));  // one per thread
}

}  // namespace
}  // namespace oe::net

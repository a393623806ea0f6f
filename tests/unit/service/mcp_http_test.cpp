#include "oe/service/mcp_http.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>

namespace oe::service {
namespace {

// Collects an SSE response's frames, as the HTTP server's sink would.
class CollectingSink final : public httpd::EventSink {
 public:
  bool push(std::string frame) override {
    std::lock_guard lock(mutex_);
    text_ += frame;
    return true;
  }
  [[nodiscard]] bool open() const override {
    std::lock_guard lock(mutex_);
    return !finished_;
  }
  void finish() override {
    std::lock_guard lock(mutex_);
    finished_ = true;
    done_.notify_all();
  }
  std::string wait() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return finished_; });
    return text_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable done_;
  std::string text_;
  bool finished_ = false;
};

class McpHttpTest : public ::testing::Test {
 protected:
  void build(size_t max_sessions, std::chrono::seconds idle) {
    McpHttpOptions options;
    options.info.version = "test";
    options.tools = [release = release_] {
      mcp::Tool block;
      block.name = "block";
      block.description = "waits until the test releases it";
      block.input_schema = {{"type", "object"}};
      block.handler = [release](mcp::ToolCall&) -> Result<Json> {
        release.wait();
        return Json{{"released", true}};
      };
      mcp::Tool echo;
      echo.name = "echo";
      echo.description = "echo";
      echo.input_schema = {{"type", "object"}};
      echo.handler = [](mcp::ToolCall& call) -> Result<Json> {
        return Json{{"echo", call.args()}};
      };
      mcp::Tool start = echo;
      start.name = "start_run";
      return std::vector<mcp::Tool>{echo, start, block};
    };
    options.admin_tools = {"start_run"};
    options.max_sessions = max_sessions;
    options.session_idle = idle;
    addMcpRoutes(router_, std::move(options));
  }

  httpd::Response send(const std::string& method, const Json& body, const std::string& session,
                       const std::string& token = "", httpd::Scope granted = httpd::Scope::kAdmin) {
    const auto match = router_.match(method, "/mcp");
    EXPECT_NE(match.route, nullptr);
    httpd::Request request;
    request.method = method;
    request.path = "/mcp";
    request.body = body.is_null() ? "" : body.dump();
    if (!session.empty()) {
      request.headers.emplace_back("mcp-session-id", session);
    }
    request.token_name = token;
    request.granted = granted;
    return match.route->handler(request);
  }

  // The JSON-RPC answer on a response's stream.
  static Json answer(httpd::Response& response) {
    if (!response.events) {
      return Json{{"http_status", response.status}};
    }
    auto sink = std::make_shared<CollectingSink>();
    response.events->start(sink);
    const std::string text = sink->wait();
    const size_t data = text.rfind("data: ");
    EXPECT_NE(data, std::string::npos) << text;
    EXPECT_EQ(text.rfind("event: message\n", 0), 0U) << text;
    return Json::parse(text.substr(data + 6), nullptr, false);
  }

  // initialize; the session id.
  std::string initialize(const std::string& token = "") {
    auto response = send("POST",
                         request(1, "initialize",
                                 {{"protocolVersion", "2025-06-18"},
                                  {"capabilities", Json::object()},
                                  {"clientInfo", {{"name", "t"}, {"version", "1"}}}}),
                         "", token);
    std::string session;
    for (const auto& [name, value] : response.headers) {
      if (name == "Mcp-Session-Id") {
        session = value;
      }
    }
    const Json result = answer(response);
    EXPECT_EQ(result["result"]["serverInfo"]["name"], "oe") << result.dump();
    return session;
  }

  static Json request(int id, const std::string& method, Json params = Json::object()) {
    return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
  }

  std::promise<void> released_;
  std::shared_future<void> release_ = released_.get_future().share();
  httpd::Router router_;
};

TEST_F(McpHttpTest, ASessionAnswersEachRequestOnItsStream) {
  build(8, std::chrono::seconds(600));
  const std::string session = initialize();
  ASSERT_EQ(session.size(), 32U);
  auto initialized =
      send("POST", {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, session);
  EXPECT_EQ(initialized.status, 202);
  EXPECT_EQ(initialized.events, nullptr);
  auto listed = send("POST", request(2, "tools/list"), session);
  const Json tools = answer(listed);
  ASSERT_EQ(tools["id"], 2) << tools.dump();
  EXPECT_EQ(tools["result"]["tools"].size(), 3U);
  auto called = send(
      "POST", request(3, "tools/call", {{"name", "echo"}, {"arguments", {{"x", 1}}}}), session);
  EXPECT_EQ(answer(called)["result"]["structuredContent"]["echo"]["x"], 1);
  // Without a session, with an unknown one, garbage, GET, DELETE.
  EXPECT_EQ(send("POST", request(4, "tools/list"), "").status, 400);
  EXPECT_EQ(send("POST", request(4, "tools/list"), std::string(32, '0')).status, 404);
  EXPECT_EQ(send("POST", Json::array({request(4, "tools/list")}), session).status, 400);
  EXPECT_EQ(send("GET", nullptr, session).status, 405);
  EXPECT_EQ(send("DELETE", nullptr, session).status, 204);
  EXPECT_EQ(send("POST", request(5, "tools/list"), session).status, 404);
}

TEST_F(McpHttpTest, SessionsBelongToTheirTokenAndAdminToolsNeedAdmin) {
  build(8, std::chrono::seconds(600));
  const std::string session = initialize("ci");
  EXPECT_EQ(send("POST", request(2, "tools/list"), session, "ops").status, 404);
  auto listed = send("POST", request(2, "tools/list"), session, "ci", httpd::Scope::kRead);
  EXPECT_EQ(answer(listed)["id"], 2);
  EXPECT_EQ(send("POST", request(3, "tools/call", {{"name", "start_run"}}), session, "ci",
                 httpd::Scope::kRead)
                .status,
            403);
  auto allowed = send("POST", request(4, "tools/call", {{"name", "start_run"}}), session, "ci",
                      httpd::Scope::kAdmin);
  EXPECT_EQ(answer(allowed)["id"], 4);
}

TEST_F(McpHttpTest, AtTheCapAnIdleSessionMakesRoom) {
  build(1, std::chrono::seconds(0));
  const std::string first = initialize();
  const std::string second = initialize();  // the first was idle long enough: ended
  EXPECT_NE(first, second);
  EXPECT_EQ(send("POST", request(2, "tools/list"), first).status, 404);
  auto listed = send("POST", request(2, "tools/list"), second);
  EXPECT_EQ(answer(listed)["id"], 2);
}

TEST_F(McpHttpTest, ASessionWithARequestInFlightIsNotEnded) {
  build(1, std::chrono::seconds(0));
  const std::string first = initialize();
  auto blocked = send("POST", request(2, "tools/call", {{"name", "block"}}), first);
  ASSERT_NE(blocked.events, nullptr);
  auto refused = send("POST",
                      request(1, "initialize",
                              {{"protocolVersion", "2025-06-18"},
                               {"capabilities", Json::object()},
                               {"clientInfo", {{"name", "t"}, {"version", "1"}}}}),
                      "");
  EXPECT_EQ(refused.status, 503);
  released_.set_value();
  EXPECT_EQ(answer(blocked)["result"]["structuredContent"]["released"], true);
  // Answered, so idle again: the next initialize takes its place.
  const std::string second = initialize();
  EXPECT_EQ(send("POST", request(3, "tools/list"), first).status, 404);
  EXPECT_NE(second, first);
}

TEST_F(McpHttpTest, AtTheCapWithNoIdleSessionInitializeIs503) {
  build(1, std::chrono::seconds(3600));
  const std::string first = initialize();
  auto refused = send("POST",
                      request(1, "initialize",
                              {{"protocolVersion", "2025-06-18"},
                               {"capabilities", Json::object()},
                               {"clientInfo", {{"name", "t"}, {"version", "1"}}}}),
                      "");
  EXPECT_EQ(refused.status, 503);
  auto listed = send("POST", request(2, "tools/list"), first);
  EXPECT_EQ(answer(listed)["id"], 2);
}

}  // namespace
}  // namespace oe::service

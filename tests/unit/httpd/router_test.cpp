#include "oe/httpd/router.hpp"

#include <gtest/gtest.h>

namespace oe::httpd {
namespace {

Handler named(std::string name) {
  return [name](const Request&) {
    Response response;
    response.body = name;
    return response;
  };
}

std::string call(const Router& router, std::string_view method, std::string_view path) {
  const auto match = router.match(method, path);
  if (match.route == nullptr) {
    return "none";
  }
  Request request;
  request.params = match.params;
  return match.route->handler(request).body;
}

TEST(RouterTest, LiteralSegmentsBeatParameters) {
  Router router;
  router.add("GET", "/api/runs/{id}", Scope::kRead, named("run"));
  router.add("GET", "/api/runs/stream", Scope::kRead, named("stream"));
  router.add("GET", "/api/runs", Scope::kRead, named("list"));
  EXPECT_EQ(call(router, "GET", "/api/runs/stream"), "stream");
  EXPECT_EQ(call(router, "GET", "/api/runs/r-1"), "run");
  EXPECT_EQ(call(router, "GET", "/api/runs"), "list");
  EXPECT_EQ(call(router, "GET", "/api/runs/"), "none");
  EXPECT_EQ(call(router, "GET", "/api/runs/r-1/x"), "none");
}

TEST(RouterTest, ParametersAreCaptured) {
  Router router;
  router.add("GET", "/api/runs/{id}/state/{field}", Scope::kRead, Handler());
  const auto match = router.match("GET", "/api/runs/abc/state/notes");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.params.at("id"), "abc");
  EXPECT_EQ(match.params.at("field"), "notes");
}

TEST(RouterTest, CapturedSegmentsAreDecodedOnceAfterSplitting) {
  Router router;
  router.add("GET", "/api/experiences/{name}", Scope::kRead, Handler());
  router.add("GET", "/assets/{path*}", Scope::kPublic, Handler());
  auto match = router.match("GET", "/api/experiences/team%2Freview");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.params.at("name"), "team/review");
  match = router.match("GET", "/api/experiences/a%2541");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.params.at("name"), "a%41");  // once, not twice
  EXPECT_EQ(router.match("GET", "/api/experiences/bad%G1").route, nullptr);
  EXPECT_EQ(router.match("GET", "/api/experiences/nul%00").route, nullptr);
  // A rest parameter never takes an encoded slash: its segments are the path's own.
  EXPECT_EQ(router.match("GET", "/assets/js%2F..%2F..%2Fx").route, nullptr);
  match = router.match("GET", "/assets/css/a%20b.css");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.params.at("path"), "css/a b.css");
}

TEST(RouterTest, ARestParameterTakesTheRestOfThePath) {
  Router router;
  router.add("GET", "/assets/{path*}", Scope::kPublic, Handler());
  const auto match = router.match("GET", "/assets/js/app.js");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.params.at("path"), "js/app.js");
  EXPECT_EQ(router.match("GET", "/assets").route, nullptr);
  EXPECT_EQ(router.match("GET", "/assets/").route, nullptr);
}

TEST(RouterTest, AnotherMethodIsReportedForA405) {
  Router router;
  router.add("GET", "/api/runs", Scope::kRead, Handler());
  router.add("POST", "/api/runs", Scope::kAdmin, Handler());
  const auto match = router.match("DELETE", "/api/runs");
  EXPECT_EQ(match.route, nullptr);
  EXPECT_EQ(match.allowed_methods, (std::vector<std::string>{"GET", "POST"}));
  EXPECT_TRUE(router.match("DELETE", "/nowhere").allowed_methods.empty());
}

TEST(RouterTest, ARouteAddedTwiceIsAProgrammerError) {
  Router router;
  router.add("GET", "/healthz", Scope::kPublic, Handler());
  EXPECT_THROW(router.add("GET", "/healthz", Scope::kPublic, Handler()), std::logic_error);
}

TEST(HttpTest, SseFramesSplitLinesAndEndWithABlankLine) {
  EXPECT_EQ(sseFrame("7", "", "{\"a\":1}"), "id: 7\ndata: {\"a\":1}\n\n");
  EXPECT_EQ(sseFrame("", "ping", "a\nb\r\nc\rd"), "event: ping\ndata: a\ndata: b\ndata: c\ndata: d\n\n");
}

TEST(HttpTest, ProblemsAreProblemJson) {
  const auto response = problem(404, "run-not-found", "No such run", "Run `x` is not in this store.");
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(response.content_type, "application/problem+json");
  const Json body = Json::parse(response.body);
  EXPECT_EQ(body["type"], "https://oe.dev/problems/run-not-found");
  EXPECT_EQ(body["status"], 404);
  EXPECT_EQ(body["detail"], "Run `x` is not in this store.");
}

}  // namespace
}  // namespace oe::httpd

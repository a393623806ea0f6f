// source.type http against a real local HTTP server on an ephemeral port, through the host's real
// HTTP client served as oe.http/1: GET, POST with a JSON body, headers, status and body errors.
#include "dataset_test_fixture.hpp"
#include "support/fake_llm_server.hpp"

namespace oe::dataset::test {
namespace {

using oe::test::FakeLlmServer;
using oe::test::FakeResponse;

class HttpSourceTest : public DatasetPluginTest {
 protected:
  Outcome fetch(const std::string& path, const Json& extra = Json::object()) {
    Json source{{"type", "http"}, {"url", server_.baseUrl() + path}};
    source.update(extra);
    return run(node(source));
  }

  FakeLlmServer server_;
};

TEST_F(HttpSourceTest, GetReturnsTheArray) {
  server_.enqueue(FakeLlmServer::json(200, Json::parse(R"([{"id":1},{"id":2}])")));
  const Outcome out = fetch("/rows?x=1");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::parse(R"([{"id":1},{"id":2}])"));
  const auto seen = server_.requests();
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].method, "GET");
  EXPECT_EQ(seen[0].path, "/rows?x=1");
  EXPECT_TRUE(seen[0].body.empty());
  EXPECT_EQ(seen[0].header("content-type"), "");
}

TEST_F(HttpSourceTest, PostSendsTheBodyAsJson) {
  server_.enqueue(FakeLlmServer::json(200, Json::parse("[]")));
  const Outcome out =
      fetch("/search", {{"method", "POST"}, {"body", {{"q", "ünïcode"}, {"limit", 3}}}});
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::array());
  const auto seen = server_.requests();
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].header("content-type"), "application/json");
  EXPECT_EQ(seen[0].json(), nlohmann::json::parse(R"({"q":"ünïcode","limit":3})"));
}

TEST_F(HttpSourceTest, GetIgnoresABodyAsUpstreamDoes) {
  server_.enqueue(FakeLlmServer::json(200, Json::parse("[1]")));
  ASSERT_TRUE(fetch("/g", {{"body", {{"ignored", true}}}}).ok());
  EXPECT_TRUE(server_.requests().at(0).body.empty());
  EXPECT_EQ(server_.requests().at(0).method, "GET");
}

TEST_F(HttpSourceTest, HeadersAreSent) {
  server_.enqueue(FakeLlmServer::json(200, Json::parse("[1]")));
  const Outcome out = fetch(
      "/h",
      {{"method", "post"},
       {"body", Json::array({1})},
       {"headers", {{"Authorization", "Bearer t0k"}, {"Content-Type", "application/vnd.x+json"}}}});
  ASSERT_TRUE(out.ok()) << out.error;
  const auto req = server_.requests().at(0);
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.header("authorization"), "Bearer t0k");
  EXPECT_EQ(req.header("content-type"), "application/vnd.x+json");  // the node's header wins
  EXPECT_EQ(req.body, "[1]");
}

TEST_F(HttpSourceTest, NotFoundGivesTheUpstreamMessage) {
  server_.enqueue(FakeLlmServer::json(404, {{"error", "no"}}));
  const Outcome out = fetch("/missing");
  EXPECT_EQ(out.status, OE_NOT_FOUND);
  EXPECT_EQ(out.error,
            "Dataset http source " + server_.baseUrl() + "/missing returned 404 Not Found");
  server_.enqueue(FakeLlmServer::serverError(503));
  EXPECT_EQ(fetch("/busy").error,
            "Dataset http source " + server_.baseUrl() + "/busy returned 503 Service Unavailable");
}

TEST_F(HttpSourceTest, ANonArrayBodyIsRejected) {
  server_.enqueue(FakeLlmServer::json(200, {{"rows", Json::array()}}));
  const Outcome out = fetch("/obj");
  EXPECT_EQ(out.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(out.error, "Dataset http source " + server_.baseUrl() +
                           "/obj must return a top-level JSON array; got object");
  FakeResponse text;
  text.body = "not json";
  text.content_type = "text/plain";
  server_.enqueue(text);
  const Outcome bad = fetch("/text");
  EXPECT_EQ(bad.error.rfind("Dataset http source " + server_.baseUrl() +
                                "/text returned a body that is not valid JSON: line 1, column 2",
                            0),
            0U)
      << bad.error;
}

TEST_F(HttpSourceTest, AnUnreachableServerIsReportedWithTheUrl) {
  const std::string url = server_.baseUrl() + "/gone";
  server_.stop();
  const Outcome out = run(node({{"type", "http"}, {"url", url}, {"timeout_ms", 10000}}));
  EXPECT_EQ(out.status, OE_UNAVAILABLE);
  EXPECT_EQ(out.error.rfind("Dataset \"load\": ", 0), 0U) << out.error;
  EXPECT_NE(out.error.find(url), std::string::npos) << out.error;
}

TEST_F(HttpSourceTest, TimeoutMsLimitsTheRequest) {
  server_.enqueue(FakeLlmServer::stalled(FakeResponse::Stall::kBeforeHeaders));
  const Outcome out = fetch("/slow", {{"timeout_ms", 200}});
  EXPECT_EQ(out.status, OE_DEADLINE_EXCEEDED) << out.error;
}

TEST_F(HttpSourceTest, BadOptionsAreNamedAtCreate) {
  EXPECT_EQ(fetch("/x", {{"method", "PUT"}}).error,
            "Dataset \"load\": source.method must be GET or POST");
  EXPECT_EQ(fetch("/x", {{"headers", {{"X-N", 1}}}}).error,
            "Dataset \"load\": source.headers.X-N must be a string, got number");
  EXPECT_EQ(fetch("/x", {{"timeout_ms", 0}}).error,
            "Dataset \"load\": source.timeout_ms must be a positive integer (milliseconds)");
  EXPECT_EQ(server_.requestCount(), 0U);
}

TEST_F(HttpSourceTest, WithoutTheHostHttpServiceTheNodeSaysWhy) {
  host_.setExtension(OE_EXT_HTTP, nullptr);
  const Outcome out = fetch("/x");
  EXPECT_EQ(out.status, OE_FAILED_PRECONDITION);
  EXPECT_NE(out.error.find("oe.http/1"), std::string::npos) << out.error;
}

}  // namespace
}  // namespace oe::dataset::test

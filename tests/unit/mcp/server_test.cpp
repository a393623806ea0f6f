// The MCP server's dispatcher: negotiation (legacy and 2026-07-28), unknown methods and bad
// params answered, tool results in upstream's shape, progress that only grows, cancellation
// with no response, and cheap requests answered while a tool call is blocked.
#include "oe/mcp/server.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <stdexcept>

namespace oe::mcp {
namespace {

// A tool that blocks until released or cancelled; the test waits for it to start.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool started = false;
  bool released = false;
  bool cancelled = false;

  Result<Json> run(ToolCall& call) {
    call.cancel().setWaker([this] {
      std::lock_guard lock(mutex);
      cancelled = true;
      changed.notify_all();
    });
    std::unique_lock lock(mutex);
    started = true;
    changed.notify_all();
    changed.wait(lock, [this] { return released || cancelled; });
    lock.unlock();
    call.cancel().clearWaker();
    return Json{{"released", released}};
  }
  void waitStarted() {
    std::unique_lock lock(mutex);
    changed.wait(lock, [this] { return started; });
  }
  void release() {
    std::lock_guard lock(mutex);
    released = true;
    changed.notify_all();
  }
};

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::pipe(fds_), 0);
    writer_ = std::make_unique<LineWriter>(fds_[1]);
    reader_ = std::make_unique<LineReader>(fds_[0]);
    std::vector<Tool> tools;
    tools.push_back(Tool{"echo", "Echo", "Returns its arguments", Json{{"type", "object"}}, nullptr,
                         [](ToolCall& call) -> Result<Json> { return call.args(); }});
    tools.push_back(Tool{"fail", "", "Fails", Json{{"type", "object"}}, nullptr,
                         [](ToolCall&) -> Result<Json> { return makeError("it broke"); }});
    tools.push_back(Tool{"throw", "", "Throws", Json{{"type", "object"}}, nullptr,
                         [](ToolCall&) -> Result<Json> { throw std::runtime_error("boom"); }});
    tools.push_back(Tool{"steps", "", "Reports progress", Json{{"type", "object"}}, nullptr,
                         [](ToolCall& call) -> Result<Json> {
                           call.progress(1, 3, "node a finished (1/3)");
                           call.progress(1, 3, "again");  // not growing: dropped
                           call.progress(2, 3, "node b finished (2/3)");
                           call.progress(3, 3, "node c finished (3/3)");
                           return Json{{"done", true}};
                         }});
    tools.push_back(Tool{"gate", "", "Blocks", Json{{"type", "object"}}, nullptr,
                         [this](ToolCall& call) { return gate_.run(call); }});
    ServerInfo info;
    info.version = "9.9.9";
    info.progress_interval = std::chrono::milliseconds(0);
    server_ = std::make_unique<Server>(info, std::move(tools), Resources{}, *writer_);
  }
  void TearDown() override {
    server_.reset();
    ::close(fds_[1]);
    ::close(fds_[0]);
  }

  void send(const Json& message) { server_->handleLine(message.dump()); }
  void request(const Json& id, std::string_view method, Json params = Json::object()) {
    send(Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
  }
  Json next() {
    bool overlong = false;
    auto line = reader_->next(overlong);
    if (!line) {
      ADD_FAILURE() << "no line";
      return nullptr;
    }
    return Json::parse(*line);
  }
  Json call(const Json& id, std::string_view tool, Json args = Json::object()) {
    request(id, "tools/call", Json{{"name", tool}, {"arguments", args}});
    return next();
  }

  int fds_[2] = {-1, -1};
  Gate gate_;
  std::unique_ptr<LineWriter> writer_;
  std::unique_ptr<LineReader> reader_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerTest, InitializeAgreesOnASupportedVersionOrOffersTheLatest) {
  request(1, "initialize", Json{{"protocolVersion", "2025-06-18"}});
  Json reply = next();
  EXPECT_EQ(reply["id"], 1);
  EXPECT_EQ(reply["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(reply["result"]["serverInfo"]["name"], "oe");
  EXPECT_EQ(reply["result"]["serverInfo"]["version"], "9.9.9");
  EXPECT_EQ(reply["result"]["capabilities"]["tools"]["listChanged"], false);
  EXPECT_FALSE(reply["result"].contains("resultType"));

  request("x", "initialize", Json{{"protocolVersion", "2099-01-01"}});
  EXPECT_EQ(next()["result"]["protocolVersion"], "2025-11-25");
  request(2, "initialize", Json{{"protocolVersion", "2024-11-05"}});
  EXPECT_EQ(next()["result"]["protocolVersion"], "2024-11-05");
}

TEST_F(ServerTest, UnknownMethodsAndGarbageAreAnsweredAndTheSessionGoesOn) {
  request(1, "no/such/method");
  Json reply = next();
  EXPECT_EQ(reply["error"]["code"], kMethodNotFound);
  EXPECT_EQ(reply["id"], 1);
  server_->handleLine("{{{ not json");
  EXPECT_EQ(next()["error"]["code"], kParseError);
  send(Json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});  // no reply
  send(Json{{"jsonrpc", "2.0"}, {"id", 5}, {"result", Json::object()}});    // no reply
  request(2, "ping");
  reply = next();
  EXPECT_EQ(reply["id"], 2);
  EXPECT_EQ(reply["result"], Json::object());
}

TEST_F(ServerTest, DiscoverOffersTheStatelessRevision) {
  request("server-discover-probe-1", "server/discover");
  Json result = next()["result"];
  EXPECT_EQ(result["supportedVersions"], Json::array({"2026-07-28"}));
  EXPECT_EQ(result["resultType"], "complete");
  EXPECT_EQ(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "oe");
  EXPECT_TRUE(result["capabilities"].contains("tools"));
  EXPECT_TRUE(result["ttlMs"].is_number_integer());
}

TEST_F(ServerTest, ModernRequestsGetResultTypeAndCacheHints) {
  const Json meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                     {"io.modelcontextprotocol/clientCapabilities", Json::object()}};
  request(1, "tools/list", Json{{"_meta", meta}});
  Json result = next()["result"];
  EXPECT_EQ(result["resultType"], "complete");
  EXPECT_TRUE(result["ttlMs"].is_number_integer());
  EXPECT_EQ(result["cacheScope"], "private");
  EXPECT_EQ(result["tools"].size(), 5U);

  request(2, "tools/call", Json{{"name", "echo"}, {"arguments", {{"a", 1}}}, {"_meta", meta}});
  result = next()["result"];
  EXPECT_EQ(result["resultType"], "complete");
  EXPECT_EQ(result["structuredContent"]["a"], 1);

  request(3, "tools/list", Json{{"_meta", {{"io.modelcontextprotocol/protocolVersion", "1999"}}}});
  Json reply = next();
  EXPECT_EQ(reply["error"]["code"], kUnsupportedProtocolVersion);
  EXPECT_TRUE(reply["error"]["data"]["supported"].is_array());

  request(4, "tools/list");  // a legacy request: no extra fields
  EXPECT_FALSE(next()["result"].contains("resultType"));
}

TEST_F(ServerTest, ToolResultsHaveUpstreamsShape) {
  Json result = call(1, "echo", Json{{"name", "World"}})["result"];
  EXPECT_EQ(result["structuredContent"], (Json{{"name", "World"}}));
  EXPECT_EQ(result["content"][0]["type"], "text");
  EXPECT_EQ(result["content"][0]["text"], Json({{"name", "World"}}).dump(2));
  EXPECT_FALSE(result.contains("isError"));

  result = call(2, "fail")["result"];
  EXPECT_EQ(result["isError"], true);
  EXPECT_EQ(result["content"][0]["text"], "error in fail: it broke");

  result = call(3, "throw")["result"];
  EXPECT_EQ(result["isError"], true);
  EXPECT_NE(result["content"][0]["text"].get<std::string>().find("boom"), std::string::npos);

  result = call(4, "nope")["result"];
  EXPECT_EQ(result["isError"], true);
  EXPECT_EQ(result["content"][0]["text"], "unknown tool: nope");
}

TEST_F(ServerTest, BadCallParamsAreInvalidParams) {
  request(1, "tools/call", Json{{"arguments", Json::object()}});
  EXPECT_EQ(next()["error"]["code"], kInvalidParams);
  request(2, "tools/call", Json{{"name", "echo"}, {"arguments", "x"}});
  EXPECT_EQ(next()["error"]["code"], kInvalidParams);
  request(3, "resources/read", Json::object());
  EXPECT_EQ(next()["error"]["code"], kInvalidParams);
}

TEST_F(ServerTest, ProgressGrowsAndComesBeforeTheResult) {
  request(1, "tools/call", Json{{"name", "steps"}, {"_meta", {{"progressToken", "tok"}}}});
  std::vector<double> seen;
  Json message = next();
  while (message.value("method", "") == "notifications/progress") {
    EXPECT_EQ(message["params"]["progressToken"], "tok");
    EXPECT_EQ(message["params"]["total"], 3);
    seen.push_back(message["params"]["progress"].get<double>());
    message = next();
  }
  EXPECT_EQ(seen, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(message["id"], 1);
  EXPECT_EQ(message["result"]["structuredContent"]["done"], true);

  request(2, "tools/call", Json{{"name", "steps"}});  // no token: no notification
  EXPECT_EQ(next()["id"], 2);
}

TEST_F(ServerTest, CheapRequestsAreAnsweredWhileACallIsBlocked) {
  request(1, "tools/call", Json{{"name", "gate"}});
  gate_.waitStarted();
  request(2, "tools/list");
  EXPECT_EQ(next()["id"], 2);
  EXPECT_EQ(server_->callsInFlight(), 1U);
  gate_.release();
  Json reply = next();
  EXPECT_EQ(reply["id"], 1);
  EXPECT_EQ(reply["result"]["structuredContent"]["released"], true);
}

TEST_F(ServerTest, ACancelledCallGetsNoResponse) {
  request(7, "tools/call", Json{{"name", "gate"}});
  gate_.waitStarted();
  request(8, "tools/call", Json{{"name", "echo"}});  // a request id in use is refused
  request(7, "tools/call", Json{{"name", "echo"}});
  // The echo's reply comes from its thread, the refusal inline: in either order.
  const Json first = next();
  const Json second = next();
  const Json& refusal = first.contains("error") ? first : second;
  EXPECT_EQ((first.contains("error") ? second : first)["id"], 8);
  EXPECT_EQ(refusal["error"]["code"], kInvalidRequest);
  EXPECT_EQ(refusal["id"], 7);
  send(Json{{"jsonrpc", "2.0"},
            {"method", "notifications/cancelled"},
            {"params", {{"requestId", 7}, {"reason", "user"}}}});
  send(Json{{"jsonrpc", "2.0"},  // an unknown id is ignored
            {"method", "notifications/cancelled"},
            {"params", {{"requestId", 99}}}});
  server_->shutdown();  // waits for the cancelled call to end: a response would be written now
  EXPECT_TRUE(gate_.cancelled);
  EXPECT_FALSE(gate_.released);
  request(9, "ping");
  EXPECT_EQ(next()["id"], 9);
}

TEST_F(ServerTest, ShutdownCancelsCallsInFlight) {
  request(1, "tools/call", Json{{"name", "gate"}});
  gate_.waitStarted();
  server_->shutdown();
  EXPECT_TRUE(gate_.cancelled);
  EXPECT_EQ(server_->callsInFlight(), 0U);
  request(2, "tools/call", Json{{"name", "echo"}});
  EXPECT_EQ(next()["error"]["code"], kInternalError);  // no call starts after shutdown
}

TEST_F(ServerTest, EndOfInputEndsTheSessionAndCancelsCallsInFlight) {
  int in[2];
  ASSERT_EQ(::pipe(in), 0);
  const std::string lines =
      R"({"jsonrpc":"2.0","id":1,"method":"ping"})"
      "\n"
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gate"}})"
      "\n";
  ASSERT_EQ(::write(in[1], lines.data(), lines.size()), static_cast<ssize_t>(lines.size()));
  ::close(in[1]);
  LineReader reader(in[0]);
  EXPECT_EQ(server_->serve(reader), 0);  // returns once the gate's call has ended
  ::close(in[0]);
  EXPECT_TRUE(gate_.cancelled);
  EXPECT_EQ(next()["id"], 1);
  writer_->write(notificationMessage("sentinel", Json::object()));
  EXPECT_EQ(next()["method"], "sentinel");  // nothing for the cancelled call came before it
}

}  // namespace
}  // namespace oe::mcp

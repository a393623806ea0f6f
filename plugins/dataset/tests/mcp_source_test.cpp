// source.type mcp-resource against a real MCP server built with the official TypeScript SDK
// (tests/mcp/resource_server.mjs, run by the node on PATH): the normalisation of each content
// shape, what a server says back (notifications, stray lines, its own requests), mcp.json's
// errors, and the ends a server can come to (exits at start, never answers, ignores SIGTERM,
// the call is cancelled) with no process left behind.
#include <sys/types.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "dataset_test_fixture.hpp"

#ifndef OE_MCP_RESOURCE_SERVER
#error "OE_MCP_RESOURCE_SERVER must name tests/mcp/resource_server.mjs"
#endif

namespace oe::dataset::test {
namespace {

// True while `pid` is a process that has not exited (a zombie has).
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

class McpSourceTest : public DatasetPluginTest {
 protected:
  void SetUp() override {
    DatasetPluginTest::SetUp();
    writeConfig(
        Json{{"servers",
              {{"res", {{"command", "node"}, {"args", {OE_MCP_RESOURCE_SERVER}}}},
               {"greeter",
                {{"command", "node"},
                 {"args", {OE_MCP_RESOURCE_SERVER}},
                 {"env", {{"OE_TEST_GREETING", "hi from mcp.json"}}}}},
               {"dies", {{"command", "node"}, {"args", {OE_MCP_RESOURCE_SERVER, "exit-at-start"}}}},
               {"stubborn",
                {{"command", "node"},
                 {"args", {OE_MCP_RESOURCE_SERVER, "stubborn"}},
                 {"env", {{"OE_TEST_PID_FILE", abs("pids")}}}}},
               {"missing", {{"command", "oe-no-such-mcp-server"}}}}}}
            .dump());
  }

  void writeConfig(const std::string& text) { dir_.write("mcp.json", text); }
  std::string configPath() const { return abs("mcp.json"); }

  static Json source(const std::string& server, const std::string& uri,
                     const Json& extra = Json::object()) {
    Json out{{"type", "mcp-resource"}, {"server", server}, {"uri", uri}};
    out.update(extra);
    return out;
  }

  Outcome read(const std::string& server, const std::string& uri,
               const Json& extra = Json::object()) {
    return run(node(source(server, uri, extra)));
  }

  // The pids the stubborn server wrote: itself and the `sleep` it keeps in its group.
  std::vector<pid_t> stubbornPids() const {
    std::istringstream in(oe::test::readFile(dir_.path() / "pids"));
    std::vector<pid_t> pids;
    for (pid_t pid = 0; in >> pid;) {
      pids.push_back(pid);
    }
    return pids;
  }
};

TEST_F(McpSourceTest, AJsonArrayTextIsSpreadIntoRows) {
  const Outcome out = read("res", "test://rows");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows().dump(), R"([{"id":1,"name":"ada"},{"id":2,"name":"grace"}])");
}

TEST_F(McpSourceTest, AJsonObjectTextIsOneRow) {
  const Outcome out = read("res", "test://object");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows().dump(), R"([{"total":3,"unit":"kg"}])");
}

TEST_F(McpSourceTest, PlainTextKeepsItsMimeType) {
  const Outcome out = read("res", "test://text");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::parse(R"([{"text":"hello, plain text\n","mimeType":"text/plain"}])"));
}

TEST_F(McpSourceTest, ABlobKeepsItsBase64AndMimeType) {
  const Outcome out = read("res", "test://blob");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(),
            Json::parse(R"([{"blob":"AAFiaW5hcnk=","mimeType":"application/octet-stream"}])"));
}

TEST_F(McpSourceTest, SeveralContentsAreNormalisedOneByOne) {
  const Outcome out = read("res", "test://mixed");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::parse(R"([1,2,{"text":"[not json"},{"blob":"AAE="}])"));
}

TEST_F(McpSourceTest, TheServerGetsTheHostEnvPlusItsOwnAndRunsInTheExperienceDir) {
  const Outcome out = read("greeter", "test://env");
  ASSERT_TRUE(out.ok()) << out.error;
  ASSERT_EQ(out.rows().size(), 1U) << out.rows();
  EXPECT_EQ(out.rows()[0]["greeting"], "hi from mcp.json");
  EXPECT_EQ(out.rows()[0]["path_set"], true);
  EXPECT_EQ(out.rows()[0]["cwd"], std::filesystem::canonical(dir_.path()).string());
}

TEST_F(McpSourceTest, NotificationsStrayLinesAndServerRequestsAreHandled) {
  // The server logs, prints a non-JSON line, pings the client and asks it an unknown method
  // before answering; the row says what the client answered.
  const Outcome out = read("res", "test://probe");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::parse(R"([{"ping":"ok","unknown_code":-32601}])"));
}

TEST_F(McpSourceTest, AnUnknownUriSurfacesTheServersError) {
  const Outcome out = read("res", "test://nope");
  EXPECT_EQ(out.status, OE_FAILED_PRECONDITION);
  EXPECT_EQ(out.error,
            "MCP server \"res\" failed to read resource \"test://nope\": MCP error "
            "-32602: Resource test://nope not found. Check the URI is correct and the "
            "server has access (declared in " +
                configPath() + ").");
}

TEST_F(McpSourceTest, AFailingResourceCallbackSurfacesItsMessage) {
  const Outcome out = read("res", "test://broken");
  EXPECT_EQ(out.status, OE_FAILED_PRECONDITION);
  EXPECT_NE(out.error.find("failed to read resource \"test://broken\": MCP error -32603: the "
                           "catalogue database is locked"),
            std::string::npos)
      << out.error;
}

TEST_F(McpSourceTest, AnUnknownServerListsTheDeclaredOnes) {
  const Outcome out = read("nope", "test://rows");
  EXPECT_EQ(out.status, OE_NOT_FOUND);
  EXPECT_EQ(out.error, "MCP server \"nope\" referenced by node \"load\" is not declared in " +
                           configPath() +
                           ". Available servers: res, greeter, dies, stubborn, missing. Add it "
                           "under the `servers` object.");
}

TEST_F(McpSourceTest, AMissingMcpJsonSaysWhereAndWhatToWrite) {
  std::filesystem::remove(configPath());
  const Outcome out = read("res", "test://rows");
  EXPECT_EQ(out.status, OE_NOT_FOUND);
  EXPECT_EQ(out.error.rfind("mcp-resource source on node \"load\" requires `mcp.json` at " +
                                configPath() +
                                " to map server names to spawn commands. Create "
                                "it with shape { \"servers\":",
                            0),
            0U)
      << out.error;
}

TEST_F(McpSourceTest, ABadMcpJsonIsNamed) {
  writeConfig("{\"servers\": {");
  Outcome out = read("res", "test://rows");
  EXPECT_EQ(out.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(out.error.rfind("Could not parse " + configPath() + ": line 1, column 14", 0), 0U)
      << out.error;

  writeConfig(R"({"mcpServers": {}})");
  out = read("res", "test://rows");
  EXPECT_EQ(out.error, configPath() + " is missing a `servers` object at the top level.");

  writeConfig(R"({"servers": {"res": {"args": ["x"]}}})");
  out = read("res", "test://rows");
  EXPECT_EQ(out.error, configPath() +
                           ": servers.res needs a \"command\" string (the program "
                           "that serves MCP over stdio)");

  writeConfig(R"({"servers": {"res": {"command": "node", "env": {"N": 1}}}})");
  out = read("res", "test://rows");
  EXPECT_EQ(out.error, configPath() +
                           ": servers.res.env.N must be a string (and its name must "
                           "have no '=')");
}

TEST_F(McpSourceTest, AServerThatExitsAtStartShowsItsStatusAndStderr) {
  const Outcome out = read("dies", "test://rows");
  EXPECT_EQ(out.status, OE_UNAVAILABLE);
  EXPECT_EQ(out.error, std::string("MCP server \"dies\" failed to start: it exited with exit code "
                                   "3 before answering initialize; its stderr ends with: "
                                   "resource_server: cannot open the catalogue (exit-at-start "
                                   "mode). Check that `node ") +
                           OE_MCP_RESOURCE_SERVER +
                           " exit-at-start` runs standalone (declared in " + configPath() + ").");
}

TEST_F(McpSourceTest, ACommandNotOnPathFailsToStart) {
  const Outcome out = read("missing", "test://rows");
  EXPECT_EQ(out.status, OE_NOT_FOUND);
  EXPECT_EQ(out.error.rfind("MCP server \"missing\" failed to start: the command "
                            "\"oe-no-such-mcp-server\" was not found on PATH. Check that "
                            "`oe-no-such-mcp-server` runs standalone",
                            0),
            0U)
      << out.error;
}

TEST_F(McpSourceTest, AServerThatNeverAnswersHitsTheDeadline) {
  // Long enough for node to start and answer initialize on a busy machine; the read never ends.
  const Outcome out = read("res", "test://hang", {{"timeout_ms", 8000}});
  EXPECT_EQ(out.status, OE_DEADLINE_EXCEEDED);
  EXPECT_NE(out.error.find("MCP server \"res\" failed to read resource \"test://hang\": no answer "
                           "to resources/read within 8000 ms (source.timeout_ms)"),
            std::string::npos)
      << out.error;
}

TEST_F(McpSourceTest, AServerThatIgnoresEofAndSigtermIsKilledWithItsGroup) {
  // The read succeeds; stopping the server then takes the whole ladder (EOF, SIGTERM, SIGKILL)
  // and must take the `sleep` it started too.
  const Outcome out = read("stubborn", "test://object");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows().dump(), R"([{"total":3,"unit":"kg"}])");
  const std::vector<pid_t> pids = stubbornPids();
  ASSERT_EQ(pids.size(), 2U);
  for (const pid_t pid : pids) {
    EXPECT_FALSE(running(pid)) << "process " << pid << " outlived the node";
  }
}

TEST_F(McpSourceTest, CancellingTheCallStopsTheServer) {
  const Json spec = node(source("stubborn", "test://hang"));
  const CreateResult created = create(spec);
  ASSERT_EQ(created.status, OE_OK) << created.error;
  auto ctx = host_.makeContext("load");
  CallResult called;
  std::thread call([&] { called = invoke(created.node, spec, ctx.get()); });
  // The server writes its pids once it runs; cancel then (the read would wait 60 s otherwise).
  for (int i = 0; i < 3000 && stubbornPids().size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ctx->cancelled = true;
  call.join();
  EXPECT_EQ(called.status, OE_CANCELLED) << called.error;
  for (const pid_t pid : stubbornPids()) {
    EXPECT_FALSE(running(pid)) << "process " << pid << " outlived the cancelled call";
  }
}

TEST_F(McpSourceTest, TheSpecNeedsServerAndUriAndAPositiveTimeout) {
  EXPECT_EQ(run(node({{"type", "mcp-resource"}, {"uri", "test://rows"}})).error,
            "Dataset \"load\": source.server is required for a mcp-resource source (a server "
            "name from mcp.json)");
  EXPECT_EQ(run(node({{"type", "mcp-resource"}, {"server", "res"}})).error,
            "Dataset \"load\": source.uri is required for a mcp-resource source (the URI of the "
            "resource to read)");
  EXPECT_EQ(read("res", "test://rows", {{"timeout_ms", 0}}).error,
            "Dataset \"load\": source.timeout_ms must be a positive integer (milliseconds)");
}

}  // namespace
}  // namespace oe::dataset::test

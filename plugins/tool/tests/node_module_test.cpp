// .mjs/.js tools: the upstream call signature, the shared persistent worker, and every error a
// module can cause (reference §6.1 messages).
#include <thread>

#include "tool_test_fixture.hpp"

namespace oe::tool::test {
namespace {

using NodeModuleTest = ToolPluginTest;

int64_t workerPid(NodeModuleTest& test, oe_node* node, const std::string& id) {
  const CallResult result = test.call(node, id);
  if (result.status != OE_OK) {
    ADD_FAILURE() << result.error;
    return -1;
  }
  return Json::parse(result.response)["state_delta"]["pid"].get<int64_t>();
}

TEST_F(NodeModuleTest, HelloToolGreetsWorld) {
  const std::string example = std::string(OE_TOOL_EXAMPLES_DIR) + "/hello-tool";
  oe_node* node = create("greet", "./tools/greet.mjs", Json{{"name", "World"}}, example);
  ASSERT_NE(node, nullptr);
  const Json response = responseOf(call(node, "greet", Json{{"name", "World"}}));
  EXPECT_EQ(response, Json::parse(R"({"state_delta":{"greeting":"hello, World"}})"));
}

TEST_F(NodeModuleTest, ReceivesArgsThenEdgeInputsThenState) {
  writeFile("tools/echo.mjs",
            "export default (args) => ({\n"
            "  state_delta: { seen: args, keys: Object.keys(args) },\n"
            "  edge_output: { from: 'echo' },\n"
            "  metrics: { tokens_in: 3 },\n"
            "});\n");
  oe_node* node = create("echo", "./tools/echo.mjs");
  const Json args{{"zeta", 1}, {"alpha", Json{{"nested", true}}}, {"$item", "x"}};
  const Json state{{"rows", Json::array({1, 2})}};
  const Json edges{{"load", Json{{"count", 2}}}};
  const Json response = responseOf(call(node, "echo", args, state, edges));
  Json expected_seen = args;
  expected_seen["_edge_inputs"] = edges;
  expected_seen["_state"] = state;
  EXPECT_EQ(response["state_delta"]["seen"], expected_seen);
  EXPECT_EQ(response["state_delta"]["keys"],
            Json::array({"zeta", "alpha", "$item", "_edge_inputs", "_state"}));
  EXPECT_EQ(response["edge_output"], (Json{{"from", "echo"}}));
  EXPECT_EQ(response["metrics"], (Json{{"tokens_in", 3}}));
}

TEST_F(NodeModuleTest, ArgsCannotHideEdgeInputsOrState) {
  writeFile("tools/t.mjs",
            "export default (a) => ({ state_delta: { e: a._edge_inputs, s: a._state } });");
  oe_node* node = create("t", "./tools/t.mjs");
  const Json response =
      responseOf(call(node, "t", Json{{"_state", "spoofed"}}, Json{{"x", 1}}, Json{{"p", 2}}));
  EXPECT_EQ(response["state_delta"]["s"], (Json{{"x", 1}}));
  EXPECT_EQ(response["state_delta"]["e"], (Json{{"p", 2}}));
}

TEST_F(NodeModuleTest, KeepsNullEdgeOutputAndDropsFalsyMetrics) {
  writeFile("tools/t.mjs",
            "export default async () => ({ state_delta: {}, edge_output: null, metrics: 0 });");
  oe_node* node = create("t", "./tools/t.mjs");
  const CallResult result = call(node, "t");
  ASSERT_EQ(result.status, OE_OK) << result.error;
  EXPECT_EQ(Json::parse(result.response), Json::parse(R"({"state_delta":{},"edge_output":null})"));
}

TEST_F(NodeModuleTest, OmitsEdgeOutputWhenUndefined) {
  writeFile("tools/t.mjs",
            "export default () => ({ state_delta: { a: 1 }, edge_output: undefined });");
  oe_node* node = create("t", "./tools/t.mjs");
  EXPECT_EQ(responseOf(call(node, "t")), Json::parse(R"({"state_delta":{"a":1}})"));
}

TEST_F(NodeModuleTest, RunsConcurrentCallsOfSeveralNodesOnOneWorker) {
  // A barrier inside the worker: every call waits until all have arrived. It can only be
  // passed if the calls are in flight at the same time on the same worker (one module state).
  writeFile("tools/barrier.mjs",
            "let arrived = 0;\n"
            "const waiting = [];\n"
            "export default async (args) => {\n"
            "  arrived += 1;\n"
            "  let reached = true;\n"
            "  if (arrived >= args.expected) { waiting.splice(0).forEach((wake) => wake(true)); }\n"
            "  else { reached = await new Promise((resolve) => { waiting.push(resolve);\n"
            "    setTimeout(() => resolve(false), 30000); }); }\n"
            "  return { state_delta: { i: args.i, pid: process.pid, reached } };\n"
            "};\n");
  oe_node* first = create("first", "./tools/barrier.mjs");
  oe_node* second = create("second", "./tools/barrier.mjs");
  constexpr int kCalls = 8;
  std::vector<CallResult> results(kCalls);
  std::vector<std::thread> threads;
  for (int i = 0; i < kCalls; ++i) {
    threads.emplace_back([&, i] {
      const std::string id = i % 2 == 0 ? "first" : "second";
      results[i] = call(i % 2 == 0 ? first : second, id, Json{{"i", i}, {"expected", kCalls}});
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  std::optional<int64_t> pid;
  for (int i = 0; i < kCalls; ++i) {
    const Json response = responseOf(results[i]);
    EXPECT_EQ(response["state_delta"]["i"], i);
    EXPECT_EQ(response["state_delta"]["reached"], true) << "call " << i << " waited alone";
    const auto this_pid = response["state_delta"]["pid"].get<int64_t>();
    if (pid) {
      EXPECT_EQ(this_pid, *pid) << "every call must run on the same worker";
    }
    pid = this_pid;
  }
}

TEST_F(NodeModuleTest, ConsoleOutputGoesToTheLogNotIntoReplies) {
  writeFile("tools/noisy.mjs",
            "export default () => {\n"
            "  console.log('noise-from-console-log');\n"
            "  process.stdout.write('{\"id\":1} noise-on-stdout\\n');\n"
            "  console.error('noise-on-stderr');\n"
            "  return { state_delta: { ok: true } };\n"
            "};\n");
  oe_node* node = create("noisy", "./tools/noisy.mjs");
  EXPECT_EQ(responseOf(call(node, "noisy")), Json::parse(R"({"state_delta":{"ok":true}})"));
  unloadPlugin();  // joins the worker's reader thread: every line it read is logged
  std::string all;
  for (const auto& line : host_.logs()) {
    all += line.message + "\n";
  }
  EXPECT_NE(all.find("noise-from-console-log"), std::string::npos) << all;
  EXPECT_NE(all.find("noise-on-stdout"), std::string::npos) << all;
  EXPECT_NE(all.find("noise-on-stderr"), std::string::npos) << all;
}

TEST_F(NodeModuleTest, ModuleWithoutDefaultExportFails) {
  writeFile("tools/nodefault.mjs", "export const run = () => ({ state_delta: {} });\n");
  oe_node* node = create("nd", "./tools/nodefault.mjs");
  const CallResult result = call(node, "nd");
  EXPECT_NE(result.status, OE_OK);
  EXPECT_EQ(result.error, "Tool \"nd\" module has no default export (or it is not a function)");
}

TEST_F(NodeModuleTest, DefaultExportThatIsNotAFunctionFails) {
  writeFile("tools/obj.mjs", "export default { state_delta: {} };\n");
  oe_node* node = create("obj", "./tools/obj.mjs");
  EXPECT_EQ(call(node, "obj").error,
            "Tool \"obj\" module has no default export (or it is not a function)");
}

TEST_F(NodeModuleTest, NonObjectResultFails) {
  writeFile("tools/num.mjs", "export default () => 42;\n");
  writeFile("tools/undef.mjs", "export default async () => {};\n");
  oe_node* num = create("num", "./tools/num.mjs");
  oe_node* undef = create("undef", "./tools/undef.mjs");
  const CallResult result = call(num, "num");
  EXPECT_NE(result.status, OE_OK);
  EXPECT_EQ(result.error,
            "Tool \"num\" default export must return an object with at least { state_delta }");
  EXPECT_EQ(call(undef, "undef").error,
            "Tool \"undef\" default export must return an object with at least { state_delta }");
}

TEST_F(NodeModuleTest, ResultWithoutStateDeltaFails) {
  writeFile("tools/nodelta.mjs", "export default () => ({ edge_output: 1 });\n");
  oe_node* node = create("nodelta", "./tools/nodelta.mjs");
  const CallResult result = call(node, "nodelta");
  EXPECT_NE(result.status, OE_OK);
  EXPECT_EQ(result.error,
            "Tool \"nodelta\" returned no state_delta; return { state_delta: {} } when the tool "
            "writes nothing");
}

TEST_F(NodeModuleTest, ThrownErrorGivesMessageAndStack) {
  writeFile("tools/thrower.mjs",
            "function inner() { throw new TypeError('boom: bad input'); }\n"
            "export default () => inner();\n");
  oe_node* node = create("thrower", "./tools/thrower.mjs");
  const CallResult result = call(node, "thrower");
  EXPECT_NE(result.status, OE_OK);
  EXPECT_EQ(result.error.rfind("Tool \"thrower\" threw TypeError: boom: bad input", 0), 0U)
      << result.error;
  EXPECT_NE(result.error.find("thrower.mjs:1"), std::string::npos) << result.error;
  EXPECT_EQ(result.error.find("node:internal"), std::string::npos) << result.error;
}

TEST_F(NodeModuleTest, RejectedPromiseWithNonErrorValueFails) {
  writeFile("tools/reject.mjs", "export default async () => { throw 'plain string'; };\n");
  oe_node* node = create("reject", "./tools/reject.mjs");
  EXPECT_EQ(call(node, "reject").error, "Tool \"reject\" threw plain string");
}

TEST_F(NodeModuleTest, SyntaxErrorNamesTheModuleAndLine) {
  const auto path = writeFile("tools/broken.mjs",
                              "export default function (a) {\n  return { state_delta: {\n}\n");
  oe_node* node = create("broken", "./tools/broken.mjs");
  const CallResult result = call(node, "broken");
  EXPECT_NE(result.status, OE_OK);
  EXPECT_EQ(
      result.error.rfind(
          "Tool \"broken\" module " + path.string() + " could not be loaded: SyntaxError: ", 0),
      0U)
      << result.error;
  EXPECT_NE(result.error.find("(at " + path.string() + ":"), std::string::npos) << result.error;
}

TEST_F(NodeModuleTest, TopLevelThrowInModuleIsAnImportFailure) {
  writeFile("tools/toplevel.mjs", "throw new Error('cannot start');\nexport default () => ({});\n");
  oe_node* node = create("top", "./tools/toplevel.mjs");
  const CallResult result = call(node, "top");
  EXPECT_NE(result.error.find("could not be loaded: Error: cannot start"), std::string::npos)
      << result.error;
  EXPECT_NE(result.error.find("toplevel.mjs:1"), std::string::npos) << result.error;
}

TEST_F(NodeModuleTest, ResultThatCannotBecomeJsonFails) {
  writeFile("tools/big.mjs", "export default () => ({ state_delta: { n: 10n } });\n");
  oe_node* node = create("big", "./tools/big.mjs");
  const CallResult result = call(node, "big");
  EXPECT_NE(result.status, OE_OK);
  EXPECT_NE(result.error.find("Tool \"big\" returned a value that cannot be converted to JSON"),
            std::string::npos)
      << result.error;
}

TEST_F(NodeModuleTest, CommonJsAndJsModulesLoadToo) {
  writeFile("tools/c.cjs", "module.exports = () => ({ state_delta: { kind: 'cjs' } });\n");
  writeFile("tools/m.js", "module.exports = () => ({ state_delta: { kind: 'js' } });\n");
  oe_node* cjs = create("c", "./tools/c.cjs");
  oe_node* js = create("m", "./tools/m.js");
  EXPECT_EQ(responseOf(call(cjs, "c"))["state_delta"]["kind"], "cjs");
  EXPECT_EQ(responseOf(call(js, "m"))["state_delta"]["kind"], "js");
}

TEST_F(NodeModuleTest, WorkerCrashFailsTheCallAndTheNextCallGetsAFreshWorker) {
  writeFile("tools/pid.mjs", kPidModule);
  writeFile("tools/crash.mjs",
            "export default () => { console.error('about to exit'); process.exit(3); };\n");
  oe_node* pid_node = create("pid", "./tools/pid.mjs");
  oe_node* crash = create("crash", "./tools/crash.mjs");
  const int64_t before = workerPid(*this, pid_node, "pid");
  const CallResult result = call(crash, "crash");
  EXPECT_EQ(result.status, OE_UNAVAILABLE);
  EXPECT_EQ(result.error.rfind("Tool worker (node) exited unexpectedly with exit code 3", 0), 0U)
      << result.error;
  EXPECT_NE(result.error.find("\"crash\""), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("about to exit"), std::string::npos) << result.error;
  const int64_t after = workerPid(*this, pid_node, "pid");
  EXPECT_GT(after, 0);
  EXPECT_NE(after, before);
}

TEST_F(NodeModuleTest, MissingNodeBinaryIsReportedAtCreate) {
  writeFile("tools/t.mjs", kPidModule);
  {
    ScopedEnv no_override("OE_NODE", std::nullopt);
    ScopedEnv empty_path("PATH", dir_.path().string());
    const CreateResult created = tryCreate("t", "./tools/t.mjs");
    EXPECT_EQ(created.status, OE_FAILED_PRECONDITION);
    EXPECT_EQ(created.error,
              "Tool \"t\" needs Node.js to run ./tools/t.mjs, but \"node\" was not found on PATH; "
              "install nodejs (apt-get install nodejs) or set OE_NODE");
  }
  {
    ScopedEnv bad_override("OE_NODE", "/nonexistent/node");
    const CreateResult created = tryCreate("t", "./tools/t.mjs");
    EXPECT_EQ(created.status, OE_FAILED_PRECONDITION);
    EXPECT_NE(created.error.find("OE_NODE=/nonexistent/node is not an executable file"),
              std::string::npos)
        << created.error;
  }
}

TEST_F(NodeModuleTest, OeNodeSelectsTheBinary) {
  // A wrapper that records it was used, then runs the real node.
  const auto marker = dir_ / "wrapper-used";
  const auto wrapper = writeFile(
      "bin/my-node", "#!/bin/sh\ntouch '" + marker.string() + "'\nexec node \"$@\"\n", true);
  writeFile("tools/t.mjs", kPidModule);
  ScopedEnv use_wrapper("OE_NODE", wrapper.string());
  oe_node* node = create("t", "./tools/t.mjs");
  EXPECT_GT(workerPid(*this, node, "t"), 0);
  EXPECT_TRUE(std::filesystem::exists(marker));
}

}  // namespace
}  // namespace oe::tool::test

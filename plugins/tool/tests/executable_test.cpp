// Executable tools: JSON on stdin, JSON on stdout, stderr for messages, one process per call.
#include <set>
#include <thread>

#include "support/process.hpp"
#include "tool_test_fixture.hpp"

namespace oe::tool::test {
namespace {

using ExecutableTest = ToolPluginTest;

TEST_F(ExecutableTest, PythonToolReadsStdinAndPrintsItsResult) {
  writeFile("tools/count.py",
            "#!/usr/bin/env python3\n"
            "import json, sys\n"
            "args = json.load(sys.stdin)\n"
            "print(json.dumps({'state_delta': {'words': len(args['text'].split()),\n"
            "                                  'state': args['_state']},\n"
            "                  'edge_output': args['_edge_inputs'],\n"
            "                  'metrics': {}}))\n",
            true);
  oe_node* node = create("count", "./tools/count.py");
  const Json response = responseOf(
      call(node, "count", Json{{"text", "one two three"}}, Json{{"seen", 1}}, Json{{"up", "x"}}));
  EXPECT_EQ(response["state_delta"]["words"], 3);
  EXPECT_EQ(response["state_delta"]["state"], (Json{{"seen", 1}}));
  EXPECT_EQ(response["edge_output"], (Json{{"up", "x"}}));
  EXPECT_TRUE(response.contains("metrics")) << "an empty object is truthy";
}

TEST_F(ExecutableTest, RunsInTheExperienceDirectory) {
  writeFile(
      "tools/where.sh",
      "#!/bin/sh\ncat >/dev/null\nprintf '{\"state_delta\":{\"cwd\":\"%s\"}}' \"$(pwd -P)\"\n",
      true);
  oe_node* node = create("where", "./tools/where.sh");
  const Json response = responseOf(call(node, "where"));
  EXPECT_EQ(response["state_delta"]["cwd"], std::filesystem::canonical(dir_.path()).string());
}

TEST_F(ExecutableTest, NonZeroExitReportsCodeAndStderr) {
  writeFile("tools/fail.sh",
            "#!/bin/sh\ncat >/dev/null\necho 'some progress' \necho 'bad input: missing text' >&2\n"
            "exit 3\n",
            true);
  oe_node* node = create("fail", "./tools/fail.sh");
  const CallResult result = call(node, "fail");
  EXPECT_NE(result.status, OE_OK);
  EXPECT_EQ(result.error,
            "Tool \"fail\" (./tools/fail.sh) exited with code 3: bad input: missing text");
}

TEST_F(ExecutableTest, StderrTailIsBounded) {
  writeFile("tools/loud.py",
            "#!/usr/bin/env python3\n"
            "import sys\n"
            "for i in range(5000): print('line %d of noise' % i, file=sys.stderr)\n"
            "print('the last word', file=sys.stderr)\n"
            "sys.exit(1)\n",
            true);
  oe_node* node = create("loud", "./tools/loud.py");
  const CallResult result = call(node, "loud");
  EXPECT_LT(result.error.size(), 2300U);
  EXPECT_NE(result.error.find("the last word"), std::string::npos);
  EXPECT_EQ(result.error.find("line 0 of noise"), std::string::npos);
}

TEST_F(ExecutableTest, OutputThatIsNotJsonIsReported) {
  writeFile("tools/garbage.sh", "#!/bin/sh\necho 'hello there, not json'\n", true);
  oe_node* node = create("garbage", "./tools/garbage.sh");
  const CallResult result = call(node, "garbage");
  EXPECT_NE(result.status, OE_OK);
  EXPECT_EQ(result.error.rfind("Tool \"garbage\" (./tools/garbage.sh) printed output that is not "
                               "JSON (parse error at line 1, column 1",
                               0),
            0U)
      << result.error;
  EXPECT_NE(result.error.find("): hello there, not json"), std::string::npos) << result.error;
}

TEST_F(ExecutableTest, EmptyOutputIsReported) {
  writeFile("tools/silent.sh", "#!/bin/sh\nexit 0\n", true);
  oe_node* node = create("silent", "./tools/silent.sh");
  EXPECT_EQ(
      call(node, "silent")
          .error.rfind("Tool \"silent\" (./tools/silent.sh) printed output that is not JSON", 0),
      0U);
}

TEST_F(ExecutableTest, JsonWithoutStateDeltaIsReported) {
  writeFile("tools/nodelta.sh", "#!/bin/sh\necho '{\"edge_output\": 1}'\n", true);
  writeFile("tools/array.sh", "#!/bin/sh\necho '[1, 2]'\n", true);
  oe_node* nodelta = create("nodelta", "./tools/nodelta.sh");
  oe_node* array = create("array", "./tools/array.sh");
  EXPECT_EQ(call(nodelta, "nodelta").error,
            "Tool \"nodelta\" returned no state_delta; return { state_delta: {} } when the tool "
            "writes nothing");
  EXPECT_EQ(call(array, "array").error,
            "Tool \"array\" (./tools/array.sh) must print a JSON object with at least "
            "{ state_delta } on stdout, got array");
}

TEST_F(ExecutableTest, KilledBySignalIsReported) {
  writeFile("tools/die.sh", "#!/bin/sh\necho 'dying now' >&2\nkill -9 $$\n", true);
  oe_node* node = create("die", "./tools/die.sh");
  const CallResult result = call(node, "die");
  EXPECT_NE(result.status, OE_OK);
  EXPECT_EQ(result.error, "Tool \"die\" (./tools/die.sh) was killed by signal SIGKILL: dying now");
}

TEST_F(ExecutableTest, ScriptWithoutShebangSaysWhatToAdd) {
  writeFile("tools/noshebang.sh", "echo '{}'\n", true);
  oe_node* node = create("ns", "./tools/noshebang.sh");
  const CallResult result = call(node, "ns");
  EXPECT_NE(result.status, OE_OK);
  EXPECT_NE(result.error.find("Tool \"ns\" (./tools/noshebang.sh) could not be started"),
            std::string::npos)
      << result.error;
  EXPECT_NE(result.error.find("#!"), std::string::npos) << result.error;
}

TEST_F(ExecutableTest, LargeInputAndOutputDoNotDeadlock) {
  // `cat` echoes stdin to stdout while the plugin is still writing stdin: with both pipes far
  // bigger than a pipe buffer, this hangs unless both directions are served together.
  writeFile("tools/echo.sh", "#!/bin/sh\nprintf '{\"state_delta\":{\"echo\":'\ncat\nprintf '}}'\n",
            true);
  oe_node* node = create("echo", "./tools/echo.sh");
  const std::string big(512 << 10, 'x');  // 8x a pipe buffer
  const Json response = responseOf(call(node, "echo", Json{{"blob", big}}));
  EXPECT_EQ(response["state_delta"]["echo"]["blob"].get<std::string>().size(), big.size());
}

TEST_F(ExecutableTest, ToolThatLeavesABackgroundProcessStillReturns) {
  // The background sleep inherits stdout and lasts 10 minutes (past ctest's limit): the call
  // must end when the tool itself exits, with the sleep still running.
  writeFile("tools/bg.sh",
            "#!/bin/sh\ncat >/dev/null\nsleep 600 &\necho $! > bg.pid\n"
            "echo '{\"state_delta\":{\"done\":true}}'\n",
            true);
  oe_node* node = create("bg", "./tools/bg.sh");
  EXPECT_EQ(responseOf(call(node, "bg"))["state_delta"]["done"], true);
  const pid_t pid = oe::test::pidIn(dir_ / "bg.pid");
  ASSERT_GT(pid, 0);
  EXPECT_FALSE(oe::test::processGone(pid)) << "the call waited for the background process";
  ::kill(pid, SIGKILL);
}

TEST_F(ExecutableTest, ConcurrentCallsEachGetTheirOwnProcess) {
  writeFile("tools/id.py",
            "#!/usr/bin/env python3\n"
            "import json, os, sys\n"
            "args = json.load(sys.stdin)\n"
            "print(json.dumps({'state_delta': {'i': args['i'], 'pid': os.getpid()}}))\n",
            true);
  oe_node* node = create("id", "./tools/id.py");
  constexpr int kThreads = 4;
  constexpr int kCallsEach = 3;
  std::vector<CallResult> results(kThreads * kCallsEach);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int c = 0; c < kCallsEach; ++c) {
        const int i = t * kCallsEach + c;
        results[i] = call(node, "id", Json{{"i", i}});
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  std::set<int64_t> pids;
  for (int i = 0; i < kThreads * kCallsEach; ++i) {
    const Json response = responseOf(results[i]);
    EXPECT_EQ(response["state_delta"]["i"], i);
    pids.insert(response["state_delta"]["pid"].get<int64_t>());
  }
  EXPECT_EQ(pids.size(), static_cast<size_t>(kThreads * kCallsEach));
}

TEST_F(ExecutableTest, StderrOfASuccessfulToolIsLogged) {
  writeFile("tools/chatty.sh",
            "#!/bin/sh\ncat >/dev/null\necho 'working on it' >&2\necho '{\"state_delta\":{}}'\n",
            true);
  oe_node* node = create("chatty", "./tools/chatty.sh");
  ASSERT_EQ(call(node, "chatty").status, OE_OK);
  bool found = false;
  for (const auto& line : host_.logs()) {
    found = found ||
            (line.node_id == "chatty" && line.message.find("working on it") != std::string::npos);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace oe::tool::test

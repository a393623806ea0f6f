// Cancellation: kind.cancel from another thread and the host's is_cancelled flag, for
// executables (SIGTERM, then SIGKILL after 2 s) and Node.js modules (the call is abandoned; the
// shared worker is killed only when it does not answer).
#include <future>
#include <thread>

#include "support/process.hpp"
#include "tool_test_fixture.hpp"

namespace oe::tool::test {
namespace {

using CancelTest = ToolPluginTest;

// Starts an invocation on its own thread with its own call context.
struct RunningCall {
  std::unique_ptr<FakeContext> ctx;
  std::future<CallResult> result;
};

RunningCall startCall(ToolPluginTest& test, FakeHost& host, oe_node* node, const std::string& id,
                      const Json& args) {
  RunningCall running{host.makeContext(id), {}};
  FakeContext* ctx = running.ctx.get();
  running.result = std::async(std::launch::async, [&test, node, id, args, ctx] {
    return test.callWith(node, id, args, ctx);
  });
  return running;
}

TEST_F(CancelTest, CancelStopsASleepingExecutable) {
  StartSignal started(dir_ / "started.fifo");
  writeFile("tools/sleepy.sh",
            "#!/bin/sh\ncat >/dev/null\necho $$ > tool.pid\necho started > started.fifo\n"
            "sleep 600\necho '{\"state_delta\":{}}'\n",
            true);
  oe_node* node = create("sleepy", "./tools/sleepy.sh");
  RunningCall running = startCall(*this, host_, node, "sleepy", Json::object());
  ASSERT_TRUE(started.wait());
  kind_->cancel(node, FakeHost::context(*running.ctx));
  // Without the kill, the call would last the tool's 10 minutes (past ctest's limit).
  const CallResult result = running.result.get();
  EXPECT_EQ(result.status, OE_CANCELLED);
  EXPECT_EQ(result.error, "cancelled");
  const pid_t pid = oe::test::pidIn(dir_ / "tool.pid");
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(oe::test::processGone(pid));
}

TEST_F(CancelTest, HostCancelFlagStopsAnExecutable) {
  StartSignal started(dir_ / "started.fifo");
  writeFile("tools/sleepy.py",
            "#!/usr/bin/env python3\n"
            "import os, sys, time\n"
            "sys.stdin.read()\n"
            "open('tool.pid', 'w').write(str(os.getpid()))\n"
            "open('started.fifo', 'w').write('started\\n')\n"
            "time.sleep(600)\n",
            true);
  oe_node* node = create("sleepy", "./tools/sleepy.py");
  RunningCall running = startCall(*this, host_, node, "sleepy", Json::object());
  ASSERT_TRUE(started.wait());
  running.ctx->cancelled = true;  // no kind.cancel: the plugin polls is_cancelled
  const CallResult result = running.result.get();
  EXPECT_EQ(result.status, OE_CANCELLED);
  EXPECT_EQ(result.error, "cancelled");
  const pid_t pid = oe::test::pidIn(dir_ / "tool.pid");
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(oe::test::processGone(pid));
}

TEST_F(CancelTest, ExecutableIgnoringSigtermIsKilled) {
  StartSignal started(dir_ / "started.fifo");
  writeFile("tools/stubborn.sh",
            "#!/bin/sh\ntrap '' TERM\ncat >/dev/null\necho $$ > tool.pid\n"
            "echo started > started.fifo\nsleep 600\nsleep 600\n",
            true);
  oe_node* node = create("stubborn", "./tools/stubborn.sh");
  RunningCall running = startCall(*this, host_, node, "stubborn", Json::object());
  ASSERT_TRUE(started.wait());
  kind_->cancel(node, FakeHost::context(*running.ctx));
  const CallResult result = running.result.get();
  EXPECT_EQ(result.status, OE_CANCELLED);
  const pid_t pid = oe::test::pidIn(dir_ / "tool.pid");
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(oe::test::processGone(pid)) << "SIGKILL must follow the ignored SIGTERM";
}

TEST_F(CancelTest, CallCancelledBeforeItStartsRunsNothing) {
  writeFile("tools/touch.sh", "#!/bin/sh\ntouch ran\necho '{\"state_delta\":{}}'\n", true);
  oe_node* node = create("touch", "./tools/touch.sh");
  auto ctx = host_.makeContext("touch");
  ctx->cancelled = true;
  const CallResult result = callWith(node, "touch", Json::object(), ctx.get());
  EXPECT_EQ(result.status, OE_CANCELLED);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "ran"));
}

TEST_F(CancelTest, CancelOfAnUnknownCallIsHarmless) {
  writeFile("tools/t.sh", "#!/bin/sh\necho '{\"state_delta\":{}}'\n", true);
  oe_node* node = create("t", "./tools/t.sh");
  auto stranger = host_.makeContext("t");
  kind_->cancel(node, FakeHost::context(*stranger));
  EXPECT_EQ(call(node, "t").status, OE_OK);
}

TEST_F(CancelTest, CancelOfAWaitingModuleKeepsTheWorkerForOtherCalls) {
  StartSignal started(dir_ / "started.fifo");
  writeFile("tools/pid.mjs", kPidModule);
  writeFile("tools/wait.mjs",
            "import { writeFileSync } from 'node:fs';\n"
            "export default async (args) => {\n"
            "  writeFileSync(args.fifo, 'started\\n');\n"
            "  await new Promise((resolve) => setTimeout(resolve, 60000));\n"
            "  return { state_delta: {} };\n"
            "};\n");
  oe_node* pid_node = create("pid", "./tools/pid.mjs");
  oe_node* wait_node = create("wait", "./tools/wait.mjs");
  const int64_t before = responseOf(call(pid_node, "pid"))["state_delta"]["pid"].get<int64_t>();
  RunningCall running =
      startCall(*this, host_, wait_node, "wait", Json{{"fifo", started.path().string()}});
  ASSERT_TRUE(started.wait());
  kind_->cancel(wait_node, FakeHost::context(*running.ctx));
  const CallResult result = running.result.get();
  EXPECT_EQ(result.status, OE_CANCELLED);
  EXPECT_EQ(result.error, "cancelled");
  const int64_t after = responseOf(call(pid_node, "pid"))["state_delta"]["pid"].get<int64_t>();
  EXPECT_EQ(after, before) << "a responsive worker must survive the cancel of one call";
}

TEST_F(CancelTest, CancelOfAModuleBlockingTheEventLoopRestartsTheWorker) {
  StartSignal started(dir_ / "started.fifo");
  writeFile("tools/pid.mjs", kPidModule);
  writeFile("tools/spin.mjs",
            "import { writeFileSync } from 'node:fs';\n"
            "export default (args) => {\n"
            "  writeFileSync(args.fifo, 'started\\n');\n"
            "  for (;;) {}\n"
            "};\n");
  oe_node* pid_node = create("pid", "./tools/pid.mjs");
  oe_node* spin_node = create("spin", "./tools/spin.mjs");
  const int64_t before = responseOf(call(pid_node, "pid"))["state_delta"]["pid"].get<int64_t>();
  RunningCall running =
      startCall(*this, host_, spin_node, "spin", Json{{"fifo", started.path().string()}});
  ASSERT_TRUE(started.wait());
  kind_->cancel(spin_node, FakeHost::context(*running.ctx));
  const CallResult result = running.result.get();
  EXPECT_EQ(result.status, OE_CANCELLED);
  const int64_t after = responseOf(call(pid_node, "pid"))["state_delta"]["pid"].get<int64_t>();
  EXPECT_NE(after, before) << "a worker stuck in a tool must be replaced";
}

TEST_F(CancelTest, OtherCallsOnAKilledWorkerFailClearly) {
  StartSignal slow_started(dir_ / "slow.fifo");
  StartSignal started(dir_ / "started.fifo");
  writeFile("tools/slow.mjs",
            "import { writeFileSync } from 'node:fs';\n"
            "export default async (args) => {\n"
            "  writeFileSync(args.fifo, 'started\\n');\n"
            "  await new Promise((resolve) => setTimeout(resolve, 60000));\n"
            "  return { state_delta: {} };\n"
            "};\n");
  writeFile("tools/spin.mjs",
            "import { writeFileSync } from 'node:fs';\n"
            "export default (args) => { writeFileSync(args.fifo, 'started\\n'); for (;;) {} };\n");
  oe_node* slow_node = create("slow", "./tools/slow.mjs");
  oe_node* spin_node = create("spin", "./tools/spin.mjs");
  // The slow call is running in the worker when the spin blocks it.
  RunningCall slow =
      startCall(*this, host_, slow_node, "slow", Json{{"fifo", slow_started.path().string()}});
  ASSERT_TRUE(slow_started.wait());
  RunningCall spin =
      startCall(*this, host_, spin_node, "spin", Json{{"fifo", started.path().string()}});
  ASSERT_TRUE(started.wait());
  kind_->cancel(spin_node, FakeHost::context(*spin.ctx));
  EXPECT_EQ(spin.result.get().status, OE_CANCELLED);
  const CallResult other = slow.result.get();
  EXPECT_EQ(other.status, OE_UNAVAILABLE);
  EXPECT_EQ(other.error,
            "Tool \"slow\" was interrupted: the shared Node.js tool worker was stopped to cancel "
            "tool \"spin\", which kept it busy; run the node again");
}

}  // namespace
}  // namespace oe::tool::test

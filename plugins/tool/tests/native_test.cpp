// Native tools: a shared library exporting oe_tool_invoke_v2, called in-process with the
// invocation's call context (log, emit_event, is_cancelled reach the host as the node's).
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "tool_test_fixture.hpp"

namespace oe::tool::test {
namespace {

using NativeToolTest = ToolPluginTest;

TEST_F(NativeToolTest, CallsTheEntryPointWithTheUpstreamInput) {
  oe_node* node = create("native", OE_TOOL_NATIVE_ECHO);
  const Json args{{"b", 1}, {"a", "two"}};
  const Json response = responseOf(call(node, "native", args, Json{{"s", true}}, Json{{"up", 1}}));
  Json expected = args;
  expected["_edge_inputs"] = Json{{"up", 1}};
  expected["_state"] = Json{{"s", true}};
  EXPECT_EQ(response["state_delta"]["echo"], expected);
  EXPECT_EQ(response["edge_output"], "native");
  EXPECT_EQ(response["metrics"], (Json{{"tokens_in", 0}}));
}

TEST_F(NativeToolTest, RelativeImplResolvesAgainstTheExperienceDirectory) {
  const std::filesystem::path library(OE_TOOL_NATIVE_ECHO);
  oe_node* node = create("native", "./" + library.filename().string(), Json::object(),
                         library.parent_path().string());
  EXPECT_EQ(call(node, "native").status, OE_OK);
}

TEST_F(NativeToolTest, FailureKeepsTheToolsStatusAndMessage) {
  oe_node* node = create("native", OE_TOOL_NATIVE_ECHO);
  const CallResult result = call(node, "native", Json{{"mode", "fail"}});
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(result.error, "Tool \"native\" (" + std::string(OE_TOOL_NATIVE_ECHO) +
                              ") failed: native failure requested");
}

TEST_F(NativeToolTest, OutputIsCheckedLikeEveryOtherFlavour) {
  oe_node* node = create("native", OE_TOOL_NATIVE_ECHO);
  EXPECT_EQ(call(node, "native", Json{{"mode", "nodelta"}}).error,
            "Tool \"native\" returned no state_delta; return { state_delta: {} } when the tool "
            "writes nothing");
  const CallResult garbage = call(node, "native", Json{{"mode", "garbage"}});
  EXPECT_NE(garbage.status, OE_OK);
  EXPECT_EQ(garbage.error.rfind("Tool \"native\" (" + std::string(OE_TOOL_NATIVE_ECHO) +
                                    ") wrote output that is not JSON (",
                                0),
            0U)
      << garbage.error;
}

TEST_F(NativeToolTest, LibraryWithoutTheEntryPointIsRejectedAtCreate) {
  const CreateResult created = tryCreate("bad", OE_TOOL_NATIVE_NO_ENTRY);
  EXPECT_EQ(created.status, OE_FAILED_PRECONDITION);
  EXPECT_EQ(created.error, "Tool \"bad\": " + std::string(OE_TOOL_NATIVE_NO_ENTRY) +
                               " does not export oe_tool_invoke_v2; build it with OE_DECLARE_TOOL "
                               "from <oe/kinds/tool.h>");
}

TEST_F(NativeToolTest, LibraryBuiltForTheOldAbiIsRefusedWithARebuildMessage) {
  const CreateResult created = tryCreate("old", OE_TOOL_NATIVE_V1);
  EXPECT_EQ(created.status, OE_FAILED_PRECONDITION);
  EXPECT_EQ(created.error, "Tool \"old\": " + std::string(OE_TOOL_NATIVE_V1) +
                               " was built against plugin ABI 0.1 (it exports oe_tool_invoke_v1, "
                               "without a call context); rebuild it against the SDK installed "
                               "with this oe");
}

TEST_F(NativeToolTest, LogAndEventsThroughTheCallContextNameTheNode) {
  oe_node* node = create("native", OE_TOOL_NATIVE_ECHO);
  EXPECT_EQ(responseOf(call(node, "native", Json{{"mode", "log"}}))["edge_output"], "native");
  std::vector<oe::test::RecordedLog> from_tool;
  for (const auto& line : host_.logs()) {
    if (line.message.starts_with("native tool ")) {
      from_tool.push_back(line);
    }
  }
  ASSERT_EQ(from_tool.size(), 2U);
  EXPECT_EQ(from_tool[0].node_id, "native");
  EXPECT_EQ(from_tool[0].level, OE_LOG_INFO);
  EXPECT_EQ(from_tool[0].message, "native tool says hello");
  EXPECT_EQ(from_tool[1].node_id, "native");
  EXPECT_EQ(from_tool[1].level, OE_LOG_WARN);
  const auto events = host_.events();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].node_id, "native");
  EXPECT_EQ(events[0].type, "node.activity");
  EXPECT_EQ(events[0].fields, (nlohmann::json{{"activity", "echoing"}}));
}

TEST_F(NativeToolTest, ToolPollingIsCancelledStopsWhenTheHostCancels) {
  StartSignal started(dir_ / "started.fifo");
  oe_node* node = create("spin", OE_TOOL_NATIVE_ECHO);
  auto ctx = host_.makeContext("spin");
  FakeContext* raw = ctx.get();
  auto result = std::async(std::launch::async, [this, node, raw, &started] {
    return callWith(node, "spin", Json{{"mode", "spin"}, {"fifo", started.path().string()}}, raw);
  });
  const bool running = started.wait();
  // What the host does on timeout_ms, fail_run or Ctrl-C: is_cancelled turns true, then the
  // kind's cancel. The tool, spinning in-process, sees only the first.
  ctx->cancelled = true;
  kind_->cancel(node, FakeHost::context(*ctx));
  ASSERT_TRUE(running) << "the tool never signalled that it runs";
  // Without the tool's poll, the call would never return (past ctest's limit).
  const CallResult stopped = result.get();
  EXPECT_EQ(stopped.status, OE_CANCELLED);
  EXPECT_EQ(stopped.error, "cancelled");
}

TEST_F(NativeToolTest, ConcurrentCallsAreIndependent) {
  oe_node* node = create("native", OE_TOOL_NATIVE_ECHO);
  constexpr int kThreads = 8;
  std::vector<CallResult> results(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] { results[i] = call(node, "native", Json{{"i", i}}); });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(responseOf(results[i])["state_delta"]["echo"]["i"], i);
  }
}

TEST_F(NativeToolTest, CancelledBeforeTheCallDoesNotRun) {
  oe_node* node = create("native", OE_TOOL_NATIVE_ECHO);
  auto ctx = host_.makeContext("native");
  ctx->cancelled = true;
  const CallResult result =
      call(node, "native", Json::object(), Json::object(), Json::object(), ctx.get());
  EXPECT_EQ(result.status, OE_CANCELLED);
  EXPECT_EQ(result.error, "cancelled");
}

}  // namespace
}  // namespace oe::tool::test

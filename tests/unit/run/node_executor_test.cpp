// Node execution's decisions alone: retries and their backoff, the D1 args, the invocation
// request, the message of a failed invocation, and the host's LLM metrics.
#include "oe/run/node_executor.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "engine_fixture.hpp"

namespace oe::run::engine {
namespace {

spec::OnError retry(int attempts, spec::Backoff backoff, int64_t base_ms) {
  spec::OnError policy;
  policy.policy = spec::ErrorPolicy::kRetry;
  policy.attempts = attempts;
  policy.backoff = backoff;
  policy.base_ms = base_ms;
  return policy;
}

TEST(WriteKey, NamesTheNodeAndTheItemTheControlFlowInjected) {
  EXPECT_EQ(writeKey("plain", Json::object()), "plain");
  EXPECT_EQ(writeKey("each", Json{{"$item", "x"}, {"$index", 3}}), "each#3");
  EXPECT_EQ(writeKey("stage", Json{{"$item", 1}, {"$index", 2}, {"$pipeline", "p"}}),
            "stage@p#2");
  EXPECT_EQ(writeKey("body", Json{{"$iter", 4}, {"$loop", "l"}}), "body@l#4");
  // Two items of one node, or one item of two pipelines, never share a key.
  EXPECT_NE(writeKey("each", Json{{"$index", 1}}), writeKey("each", Json{{"$index", 11}}));
  EXPECT_NE(writeKey("s", Json{{"$index", 0}, {"$pipeline", "a"}}),
            writeKey("s", Json{{"$index", 0}, {"$pipeline", "b"}}));
}

TEST(Retry, LinearBackoffGrowsByTheBaseEachAttempt) {
  const auto policy = retry(5, spec::Backoff::kLinear, 100);
  std::vector<int64_t> delays;
  for (int attempt = 1; attempt <= 4; ++attempt) {
    delays.push_back(retryDelayMs(policy, attempt));
  }
  EXPECT_EQ(delays, (std::vector<int64_t>{100, 200, 300, 400}));
}

TEST(Retry, ExponentialBackoffDoublesEachAttempt) {
  const auto policy = retry(5, spec::Backoff::kExponential, 100);
  std::vector<int64_t> delays;
  for (int attempt = 1; attempt <= 4; ++attempt) {
    delays.push_back(retryDelayMs(policy, attempt));
  }
  EXPECT_EQ(delays, (std::vector<int64_t>{100, 200, 400, 800}));
  // The shift is capped, so a long retry chain does not overflow into a negative delay.
  EXPECT_EQ(retryDelayMs(retry(100, spec::Backoff::kExponential, 1), 80), int64_t{1} << 30);
}

TEST(Retry, AttemptsCountsEveryAttemptAndOnlyRetryRetries) {
  const auto policy = retry(3, spec::Backoff::kLinear, 10);
  EXPECT_TRUE(retriesAfter(policy, 1));
  EXPECT_TRUE(retriesAfter(policy, 2));
  EXPECT_FALSE(retriesAfter(policy, 3));
  spec::OnError skip;
  skip.attempts = 3;
  EXPECT_FALSE(retriesAfter(skip, 1));
  spec::OnError fail_run = skip;
  fail_run.policy = spec::ErrorPolicy::kFailRun;
  EXPECT_FALSE(retriesAfter(fail_run, 1));
}

TEST(Bundle, LaterArgsWinPerKey) {
  const Json run_args = {{"a", "run"}, {"b", "run"}, {"c", "run"}};
  const Json node_args = {{"b", "node"}, {"c", "node"}};
  const Json extra = {{"c", "injected"}, {"$index", 2}};
  EXPECT_EQ(bundleArgs(run_args, node_args, extra),
            (Json{{"a", "run"}, {"b", "node"}, {"c", "injected"}, {"$index", 2}}));
  // Node args that are not an object add nothing.
  EXPECT_EQ(bundleArgs(run_args, Json::array({1}), Json::object()), run_args);
  EXPECT_EQ(bundleArgs(Json::object(), Json(), Json::object()), Json::object());
}

TEST(Bundle, TheRequestCarriesTheBundleAndTheContext) {
  Call call;
  call.args_json = R"({"x":1})";
  call.state_json = R"({"s":"v"})";
  call.edges_json = R"({"up":[1,2]})";
  call.attempt = 3;
  const std::string request = invokeRequest(R"({"id":"n","kind":"tool"})", call, "run-\"1\"",
                                            "n", R"("/tmp/exp")");
  const Json parsed = Json::parse(request);
  EXPECT_EQ(parsed["node"], (Json{{"id", "n"}, {"kind", "tool"}}));
  EXPECT_EQ(parsed["args"], (Json{{"x", 1}}));
  EXPECT_EQ(parsed["state_view"], (Json{{"s", "v"}}));
  EXPECT_EQ(parsed["edge_inputs"], (Json{{"up", {1, 2}}}));
  EXPECT_EQ(parsed["context"], (Json{{"run_id", "run-\"1\""},
                                     {"node_id", "n"},
                                     {"experience_dir", "/tmp/exp"},
                                     {"attempt", 3}}));
}

TEST(Invocation, ThePluginsMessageWinsElseTheStatusIsNamed) {
  EXPECT_EQ(invocationError(OE_INTERNAL, "disk full", "tool"), "disk full");
  EXPECT_EQ(invocationError(OE_CANCELLED, "", "tool"), "cancelled");
  const std::string message = invocationError(OE_INTERNAL, "", "agent");
  EXPECT_NE(message.find("the agent plugin failed with status " + std::to_string(OE_INTERNAL)),
            std::string::npos)
      << message;
}

TEST(Invocation, HostLlmMetricsFillOnlyWhatThePluginDidNotReport) {
  llm::Usage used;
  used.input_tokens = 10;
  used.output_tokens = 20;
  used.cost_usd = 0.5;
  used.calls = 1;
  Json output = {{"state_delta", Json::object()}, {"metrics", {{"tokens_in", 99}}}};
  addLlmMetrics(output, used);
  EXPECT_EQ(output["metrics"], (Json{{"tokens_in", 99}, {"tokens_out", 20}, {"cost_usd", 0.5}}));
  Json bare = {{"state_delta", Json::object()}, {"metrics", "n/a"}};
  addLlmMetrics(bare, used);
  EXPECT_EQ(bare["metrics"], (Json{{"tokens_in", 10}, {"tokens_out", 20}, {"cost_usd", 0.5}}));
}

TEST(EventType, PluginsEmitTheSharedTypesOrTheirOwnNamespace) {
  for (const char* type :
       {"node.activity", "node.tokens", "dev.oe.tool.progress", "dev.oe.tool.a_B-9.deeper"}) {
    EXPECT_TRUE(pluginEventTypeAllowed(type, "dev.oe.tool")) << type;
  }
  for (const char* type :
       {"run.finished", "run.started", "node.finished", "node.failed", "node.log",
        "state.write",                                      // the host's own events
        "other.plugin.thing", "dev.oe.agent.progress",      // another plugin's namespace
        "dev.oe.toolbox.x", "dev.oe.tool", "dev.oe.tool.",  // not "<id>.<name>"
        "dev.oe.tool.a b", "dev.oe.tool.x/y", "dev.oe.tool.caf\xc3\xa9", "dev.oe.tool.\n", "",
        "node.activity.more", "Node.activity"}) {
    EXPECT_FALSE(pluginEventTypeAllowed(type, "dev.oe.tool")) << type;
  }
}

TEST(EventType, APluginIdCannotOpenTheHostsNamespaces) {
  // Reverse-DNS ids are a convention the loader does not enforce; the host's types stay its own.
  EXPECT_FALSE(pluginEventTypeAllowed("node.finished", "node"));
  EXPECT_FALSE(pluginEventTypeAllowed("run.finished", "run"));
  EXPECT_FALSE(pluginEventTypeAllowed("state.write", "state"));
  EXPECT_FALSE(pluginEventTypeAllowed("run.x.mine", "run.x"));
  EXPECT_TRUE(pluginEventTypeAllowed("runner.mine", "runner")) << "only the namespaces, by prefix";
}

TEST(EventType, AKindWithoutAPluginHasOnlyTheSharedTypes) {
  EXPECT_TRUE(pluginEventTypeAllowed("node.activity", ""));
  EXPECT_TRUE(pluginEventTypeAllowed("node.tokens", ""));
  EXPECT_FALSE(pluginEventTypeAllowed(".custom", ""));
  EXPECT_FALSE(pluginEventTypeAllowed("custom", ""));
}

// Call::invoke and Call::requestCancel through a kind whose oe_node is the probe below: the
// kind's cancel reaches the plugin only while its invoke runs, at most once per call, and a call
// cancelled before it starts is never invoked (node.h).
struct PhaseProbe {
  std::atomic<int> invokes{0};
  std::atomic<int> cancels{0};
  std::atomic<bool> in_invoke{false};
  std::atomic<int> cancels_outside_invoke{0};
  std::atomic<int> cancels_before_is_cancelled{0};
  Call* call = nullptr;                     // the call under test (its handle is what invoke gets)
  std::function<void(Call&)> during_invoke;  // what the plugin's invoke does before it returns
  std::function<void()> during_cancel;
  oe_status returns = OE_OK;
};

oe_status probeInvoke(oe_node* node, const oe_invocation* invocation) {
  auto& probe = *reinterpret_cast<PhaseProbe*>(node);
  ++probe.invokes;
  probe.in_invoke = true;
  if (probe.during_invoke) {
    EXPECT_EQ(invocation->call, probe.call->handle()) << "the plugin gets the call's handle";
    probe.during_invoke(*probe.call);
  }
  probe.in_invoke = false;
  return probe.returns;
}

void probeCancel(oe_node* node, oe_host_ctx* call) {
  auto& probe = *reinterpret_cast<PhaseProbe*>(node);
  ++probe.cancels;
  if (!probe.in_invoke) {
    ++probe.cancels_outside_invoke;
  }
  if (!plugins::hostApi()->is_cancelled(call)) {
    ++probe.cancels_before_is_cancelled;
  }
  if (probe.during_cancel) {
    probe.during_cancel();
  }
}

// Only what Call uses: invoke and cancel (create and destroy are the Run's business).
oe_node_kind probeKind() {
  oe_node_kind kind{};
  kind.struct_size = sizeof(oe_node_kind);
  kind.kind = "phase-probe";
  kind.invoke = probeInvoke;
  kind.cancel = probeCancel;
  return kind;
}

class CallPhases : public ::testing::Test {
 protected:
  CallPhases() {
    loaded_.kind = &kind_;
    node_.kind = &loaded_;
    call_.node = &node_;
    call_.instance = reinterpret_cast<oe_node*>(&probe_);
    probe_.call = &call_;
  }

  oe_node_kind kind_ = probeKind();
  plugins::LoadedKind loaded_;
  NodeRuntime node_;
  PhaseProbe probe_;
  Call call_;
};

TEST_F(CallPhases, ACallCancelledWhileQueuedIsNeverInvoked) {
  EXPECT_TRUE(call_.requestCancel()) << "the first request, and the call has not returned";
  EXPECT_TRUE(call_.isCancelled());
  EXPECT_EQ(probe_.cancels, 0) << "no invoke runs, so the plugin hears nothing";
  call_.invoke("{}");
  EXPECT_EQ(probe_.invokes, 0);
  EXPECT_EQ(call_.status, OE_CANCELLED);
  EXPECT_EQ(call_.phase, Call::Phase::kReturned);
  EXPECT_FALSE(call_.requestCancel());
  EXPECT_EQ(probe_.cancels, 0);
}

TEST_F(CallPhases, ACancelDuringInvokeReachesThePluginOnceFromAnotherThread) {
  probe_.returns = OE_CANCELLED;
  bool first = false;
  bool second = true;
  probe_.during_invoke = [&](Call& call) {
    EXPECT_EQ(call.phase, Call::Phase::kInvoking);
    std::thread canceller([&] {
      first = call.requestCancel();
      second = call.requestCancel();
    });
    canceller.join();
  };
  call_.invoke("{}");
  EXPECT_TRUE(first);
  EXPECT_FALSE(second) << "a second request is not passed on";
  EXPECT_EQ(probe_.invokes, 1);
  EXPECT_EQ(probe_.cancels, 1);
  EXPECT_EQ(probe_.cancels_outside_invoke, 0);
  EXPECT_EQ(probe_.cancels_before_is_cancelled, 0);
  EXPECT_EQ(call_.status, OE_CANCELLED) << "the plugin's own answer";
  EXPECT_EQ(call_.phase, Call::Phase::kReturned);
}

TEST_F(CallPhases, ACancelAfterTheReturnDoesNotReachThePlugin) {
  call_.invoke("{}");
  EXPECT_EQ(call_.status, OE_OK);
  EXPECT_FALSE(call_.requestCancel()) << "the call had returned";
  EXPECT_TRUE(call_.isCancelled());
  EXPECT_EQ(probe_.cancels, 0);
}

TEST_F(CallPhases, AKindWithoutCancelIsOnlyMarkedCancelled) {
  kind_.cancel = nullptr;
  bool requested = false;
  probe_.during_invoke = [&](Call& call) {
    requested = call.requestCancel();
    EXPECT_TRUE(call.isCancelled()) << "such a kind polls is_cancelled";
  };
  call_.invoke("{}");
  EXPECT_TRUE(requested);
  EXPECT_EQ(probe_.invokes, 1);
}

// A cancel that starts while invoke runs and is still running when the plugin returns finishes
// before Call::invoke returns, so the host never reuses or destroys the oe_node under it.
TEST_F(CallPhases, ACancelRacingTheReturnFinishesBeforeInvokeReturns) {
  std::atomic<bool> in_cancel{false};
  std::atomic<bool> plugin_returned{false};
  std::atomic<bool> host_returned{false};
  std::atomic<bool> host_returned_during_cancel{false};
  probe_.during_invoke = [&](Call&) {
    while (!in_cancel) {
      std::this_thread::yield();
    }
    plugin_returned = true;  // the plugin returns while its cancel still runs
  };
  probe_.during_cancel = [&] {
    in_cancel = true;
    while (!plugin_returned) {
      std::this_thread::yield();
    }
    // Give Call::invoke every chance to return early: it must wait for this cancel.
    for (int i = 0; i < 10000 && !host_returned; ++i) {
      std::this_thread::yield();
    }
    host_returned_during_cancel = host_returned.load();
  };
  std::thread canceller([&] {
    while (!probe_.in_invoke) {
      std::this_thread::yield();
    }
    call_.requestCancel();
  });
  call_.invoke("{}");
  host_returned = true;
  canceller.join();
  EXPECT_EQ(probe_.cancels, 1);
  EXPECT_FALSE(host_returned_during_cancel);
}

}  // namespace
}  // namespace oe::run::engine

// Node execution's Run members (node_executor.cpp) through the in-process engine.

namespace oe::run::engine::testing {
namespace {

using NodeExecution = EngineTest;

TEST_F(NodeExecution, ARetrySucceedsAfterFailedAttemptsWithLinearBackoff) {
  const RunSummary summary = run(R"(name: retry
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - { id: flaky, kind: fake, args: { fail_until: 2 },
        on_error: { policy: retry, attempts: 3, base_ms: 1 } }
  edges: []
)");
  EXPECT_EQ(summary.status, RunStatus::kSuccess);
  EXPECT_EQ(summary.ran, 1u);
  const auto calls = callsOf("flaky");
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[2]["attempt"], 3);
  // Each retry is in the log (oe inspect --html draws them), between started and finished.
  std::vector<Json> retries;
  for (const Json& event : events_) {
    if (event.value("type", "") == "node.retry") {
      retries.push_back(event);
    }
  }
  ASSERT_EQ(retries.size(), 2u);
  EXPECT_EQ(retries[0]["node_id"], "flaky");
  EXPECT_EQ(retries[0]["delay_ms"], 1);
  EXPECT_EQ(retries[1]["delay_ms"], 2);
  EXPECT_EQ(retries[1]["error"], "fake failure on attempt 2");
}

TEST_F(NodeExecution, ExhaustedRetriesFailTheNodeWithTheLastError) {
  const RunSummary summary = run(R"(name: retry
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - { id: flaky, kind: fake, args: { fail_until: 9 },
        on_error: { policy: retry, attempts: 2, base_ms: 0 } }
  edges: []
)");
  EXPECT_EQ(summary.status, RunStatus::kFailed);
  EXPECT_EQ(callsOf("flaky").size(), 2u);
  const auto failed = eventsOf("node.failed", "flaky");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0]["error"], "fake failure on attempt 2");
}

TEST_F(NodeExecution, TheSecondRunReplaysFromTheCacheWithoutCallingThePlugin) {
  constexpr std::string_view kYaml = R"(name: cached
version: 0.1.0
state: { schema: { n: { type: number } } }
graph:
  nodes:
    - { id: a, kind: fake, args: { delta: { n: 7 }, edge: 5 } }
    - { id: b, kind: fake }
  edges: [ { from: a, to: b } ]
)";
  RunSummary summary = run(kYaml);
  EXPECT_EQ(summary.ran, 2u);
  EXPECT_EQ(summary.cached, 0u);
  summary = run(kYaml);
  EXPECT_EQ(summary.status, RunStatus::kSuccess);
  EXPECT_EQ(summary.ran, 0u);
  EXPECT_EQ(summary.cached, 2u);
  EXPECT_EQ(recorder_.calls.size(), 2u);  // none in the second run
  EXPECT_EQ(summary.final_state["n"], 7);

  RunOptions no_cache;
  no_cache.use_cache = false;
  summary = run(kYaml, no_cache);
  EXPECT_EQ(summary.ran, 2u);
  const auto b = callsOf("b");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1]["edge_inputs"], (Json{{"a", 5}}));
}

TEST_F(NodeExecution, TheBundleCarriesRunArgsNodeArgsAndReads) {
  RunOptions options;
  options.args = {{"from_run", 1}, {"both", "run"}};
  const RunSummary summary = run(R"(name: bundle
version: 0.1.0
state: { schema: { n: { type: number } } }
graph:
  nodes:
    - { id: w, kind: fake, args: { delta: { n: 3 } } }
    - { id: r, kind: fake, reads: [n], args: { both: node, copy: $.n } }
  edges: [ { from: w, to: r } ]
)", options);
  EXPECT_EQ(summary.status, RunStatus::kSuccess);
  const auto calls = callsOf("r");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["args"], (Json{{"from_run", 1}, {"both", "node"}, {"copy", 3}}));
  EXPECT_EQ(calls[0]["state_view"], (Json{{"n", 3}}));
}

// Issue 10's promise for last_wins: a resume replays a and b without applying their writes
// again, so b's later value of x stays (before, only writes with an array_append or set_once
// field were marked, and a's replay put x back to "from A").
TEST_F(NodeExecution, AResumeDoesNotRollALastWinsFieldBackToAnEarlierNodesValue) {
  const std::string yaml = R"(name: resume
version: 0.1.0
state: { schema: { x: { type: string }, log: { type: array, merge: array_append } } }
graph:
  nodes:
    - { id: a, kind: fake, args: { delta: { x: from A } } }
    - { id: b, kind: fake, args: { delta: { x: from B, log: [b] } } }
    - { id: c, kind: fake, args: { fail_unless_file: ")" +
                           (dir_ / "go").string() + R"(" } }
  edges: [ { from: a, to: b }, { from: b, to: c } ]
)";
  RunSummary summary = run(yaml);
  ASSERT_EQ(summary.status, RunStatus::kPartial);
  EXPECT_EQ(summary.final_state["x"], "from B");

  dir_.write("go", "");
  RunOptions resume;
  resume.chain_id = "run-1";
  summary = run(yaml, resume);
  EXPECT_EQ(summary.status, RunStatus::kSuccess);
  EXPECT_EQ(summary.cached, 2u);
  EXPECT_EQ(summary.ran, 1u);
  EXPECT_EQ(summary.final_state["x"], "from B");
  EXPECT_EQ(summary.final_state["log"], Json::array({"b"}));
  EXPECT_TRUE(eventsOf("state.write", "a").empty());  // replayed, not applied again
}

// Issue: editing a node before `oe resume`, even only its timeout, changed every item's cache
// key, so the items that had landed were applied again and the list held them twice. A call
// whose write landed in the chain is done: the edited node's finished items replay what they
// landed from, and only the failed one runs, with the new definition.
TEST_F(NodeExecution, ANodeEditedBeforeAResumeDoesNotApplyItsLandedItemsAgain) {
  auto yaml = [this](int timeout_ms) {
    return R"(name: edited
version: 0.1.0
state: { schema: { xs: { type: array }, seen: { type: array, merge: array_append } } }
graph:
  nodes:
    - { id: seed, kind: fake, args: { delta: { xs: [0, 1, 2, 3, 4] } } }
    - id: each
      kind: fake
      for_each: { source: $.xs }
      timeout_ms: )" +
           std::to_string(timeout_ms) + R"(
      args: { append_item: seen, edge_item: true, fail_item: 2, fail_unless_file: ")" +
           (dir_ / "go").string() + R"(" }
    - { id: after, kind: fake }
  edges: [ { from: seed, to: each }, { from: each, to: after } ]
)";
  };
  RunSummary summary = run(yaml(5000));
  ASSERT_EQ(summary.status, RunStatus::kPartial);
  EXPECT_EQ(summary.final_state["seen"], Json::array({0, 1, 3, 4}));

  dir_.write("go", "");
  RunOptions resume;
  resume.chain_id = "run-1";
  summary = run(yaml(6000), resume);
  EXPECT_EQ(summary.status, RunStatus::kSuccess);
  EXPECT_EQ(summary.final_state["seen"], Json::array({0, 1, 3, 4, 2}));
  EXPECT_EQ(summary.ran, 2u);     // item 2, then `after`
  EXPECT_EQ(summary.cached, 5u);  // seed and the four items that had landed
  const auto each = callsOf("each");
  ASSERT_EQ(each.size(), 6u);  // five in the first run, item 2 again
  EXPECT_EQ(each[5]["args"]["$index"], 2);
  // The items that landed hand on what they had handed on (the last item's wins, §3.3).
  const auto after = callsOf("after");
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0]["edge_inputs"], (Json{{"each", {{"item", 4}}}}));
}

// `writes:` was not enforced: a node listing writes: [a] also set another field (here a set_once
// one other nodes own), silently. Upstream applies such a write, so oe does too, but says so,
// once per node and field; a node that declares no writes is not checked.
constexpr std::string_view kOutsideWrites = R"(name: writes
version: 0.1.0
state:
  schema:
    a: { type: string }
    owner: { type: string, merge: set_once }
    xs: { type: array }
graph:
  nodes:
    - { id: seed, kind: fake, writes: [xs], args: { delta: { xs: [1, 2, 3] } } }
    - id: n
      kind: fake
      writes: [a]
      for_each: { source: $.xs }
      args: { delta: { a: x, owner: n } }
    - { id: free, kind: fake, args: { delta: { owner: n } } }
  edges: [ { from: seed, to: n }, { from: n, to: free } ]
)";

// `--no-cache` runs every call rather than reuse a cached output, but stores what it computes:
// a resume replays the landed call from its entry. Before, --no-cache wrote no entry, so the
// resume ran the landed call again, and with the state moved on, it handed its successor
// something else than the run it continues had (crash harness seed 300075).
TEST_F(NodeExecution, ANoCacheRunStillLetsItsResumeReplayWhatLanded) {
  const std::string yaml = R"(name: nocache
version: 0.1.0
state: { schema: { seen: { type: array, merge: array_append } } }
graph:
  nodes:
    - { id: a, kind: fake, reads: [seen], args: { delta: { seen: [a] }, edge: from-a } }
    - { id: b, kind: fake, args: { fail_unless_file: ")" +
                           (dir_ / "go").string() + R"(" } }
  edges: [ { from: a, to: b } ]
)";
  RunOptions no_cache;
  no_cache.reuse_cache = false;
  RunSummary summary = run(yaml, no_cache);  // run-1
  ASSERT_EQ(summary.status, RunStatus::kPartial);
  summary = run(yaml, no_cache);  // run-2, a chain of its own: nothing reused
  ASSERT_EQ(summary.status, RunStatus::kPartial);
  EXPECT_EQ(summary.cached, 0u);
  ASSERT_EQ(callsOf("a").size(), 2u);
  EXPECT_EQ(summary.final_state["seen"], Json::array({"a", "a"}));

  dir_.write("go", "");
  RunOptions resume = no_cache;
  resume.chain_id = "run-2";
  summary = run(yaml, resume);
  EXPECT_EQ(summary.status, RunStatus::kSuccess);
  EXPECT_EQ(summary.cached, 1u);              // a: the entry run-2 landed from
  EXPECT_EQ(callsOf("a").size(), 2u);         // not run a third time
  const auto b = callsOf("b");
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[2]["edge_inputs"], (Json{{"a", "from-a"}}));
  EXPECT_EQ(summary.final_state["seen"], Json::array({"a", "a"}));
}

TEST_F(NodeExecution, AWriteOutsideTheNodesWritesIsAppliedWithAWarning) {
  const RunSummary summary = run(kOutsideWrites);
  EXPECT_EQ(summary.status, RunStatus::kSuccess);
  EXPECT_EQ(summary.final_state["owner"], "n");
  ASSERT_EQ(summary.warnings.size(), 1u) << Json(summary.warnings).dump();
  EXPECT_EQ(summary.warnings[0],
            "node \"n\" wrote field \"owner\", which is not in its writes (a); it was applied. "
            "Add \"owner\" to the node's writes, or set runtime.strict_writes: true to refuse "
            "such writes");
  EXPECT_EQ(eventsOf("run.warning", "n").size(), 1u);
}

// runtime.strict_writes (oe): the write is refused before anything of it lands; the node fails
// with a message that names it, the field and what to do.
TEST_F(NodeExecution, UnderStrictWritesAWriteOutsideTheNodesWritesFailsTheNode) {
  std::string yaml(kOutsideWrites);
  yaml.insert(yaml.find("state:"), "runtime: { strict_writes: true }\n");
  const RunSummary summary = run(yaml);
  EXPECT_EQ(summary.status, RunStatus::kPartial);
  EXPECT_FALSE(summary.final_state.contains("a"));
  EXPECT_FALSE(summary.final_state.contains("owner"));
  ASSERT_EQ(summary.failures.size(), 3u);  // each item
  EXPECT_EQ(summary.failures[0].error,
            "Node \"n\" wrote field \"owner\", which is not in its writes (a); "
            "runtime.strict_writes refuses it, so nothing of the node's output was applied. Add "
            "\"owner\" to the node's writes, or stop the node writing it");
  EXPECT_TRUE(eventsOf("state.write", "n").empty());
  EXPECT_TRUE(summary.warnings.empty());
}

}  // namespace
}  // namespace oe::run::engine::testing

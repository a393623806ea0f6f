// Control flow alone: for_each item dispatch and completion, the D16 item order, the lists
// for_each and pipelines iterate, and when a loop stops.
#include "oe/run/control_flow.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "oe/expr/state_reader.hpp"

#include "engine_fixture.hpp"

namespace oe::run::engine {
namespace {

// An outcome that records its item when it settles.
std::function<bool()> record(std::vector<size_t>& applied, size_t index, bool consumes = true) {
  return [&applied, index, consumes] {
    applied.push_back(index);
    return consumes;
  };
}

TEST(ItemOrder, OutcomesSettleInItemOrderWhateverTheCompletionOrder) {
  ItemOrder order;
  std::vector<size_t> applied;
  order.settle(2, record(applied, 2));
  order.settle(1, record(applied, 1));
  EXPECT_TRUE(applied.empty());  // both wait for item 0
  EXPECT_EQ(order.parked(), 2u);
  order.settle(0, record(applied, 0));
  EXPECT_EQ(applied, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(order.nextToApply(), 3u);
  EXPECT_EQ(order.parked(), 0u);
}

TEST(ItemOrder, AnOutcomeThatDoesNotSettleKeepsItsSlot) {
  ItemOrder order;
  std::vector<size_t> applied;
  order.settle(1, record(applied, 1));
  order.settle(0, record(applied, 0, /*consumes=*/false));  // a failed replay: runs live
  EXPECT_EQ(applied, (std::vector<size_t>{0}));
  EXPECT_EQ(order.nextToApply(), 0u);
  EXPECT_EQ(order.parked(), 1u);  // item 1 still waits for item 0
  order.settle(0, record(applied, 0));  // the live run's outcome
  EXPECT_EQ(applied, (std::vector<size_t>{0, 0, 1}));
  EXPECT_EQ(order.nextToApply(), 2u);
}

TEST(ForEachRun, DispatchKeepsToTheNodesConcurrency) {
  ForEachRun each;
  each.items = Json::array({"a", "b", "c", "d", "e"});
  std::vector<size_t> started;
  while (each.canDispatch(2)) {
    started.push_back(each.dispatch());
  }
  EXPECT_EQ(started, (std::vector<size_t>{0, 1}));
  EXPECT_FALSE(each.itemDone(true, false));
  ASSERT_TRUE(each.canDispatch(2));
  EXPECT_EQ(each.dispatch(), 2u);
  EXPECT_FALSE(each.canDispatch(2));
}

TEST(ForEachRun, TheNodeFinishesWithItsLastItemAndFailsIfAnyItemFailed) {
  ForEachRun each;
  each.items = Json::array({1, 2, 3});
  while (each.canDispatch(3)) {
    each.dispatch();
  }
  EXPECT_FALSE(each.itemDone(true, false));
  EXPECT_FALSE(each.itemDone(false, false));
  EXPECT_TRUE(each.itemDone(true, false));
  EXPECT_FALSE(each.succeeded());
}

TEST(ForEachRun, ACancelledRunFinishesTheNodeOnceNoItemIsInFlight) {
  ForEachRun each;
  each.items = Json::array({1, 2, 3, 4});
  each.dispatch();
  each.dispatch();
  EXPECT_FALSE(each.itemDone(true, true));  // one still in flight
  EXPECT_TRUE(each.itemDone(true, true));   // items 2 and 3 never start
  EXPECT_TRUE(each.succeeded());
}

TEST(ControlFlow, ItemsComeFromAStatePath) {
  const Json state = {{"xs", {1, 2, 3}}, {"obj", {{"inner", {"a"}}}}, {"n", 4}};
  expr::JsonStateReader reader(state);
  auto xs = resolveItems("$.xs", reader);
  ASSERT_TRUE(xs.has_value());
  EXPECT_EQ(*xs, Json::array({1, 2, 3}));
  auto inner = resolveItems("$.obj.inner", reader);
  ASSERT_TRUE(inner.has_value());
  EXPECT_EQ(*inner, Json::array({"a"}));
  auto n = resolveItems("$.n", reader);
  ASSERT_TRUE(n.has_value());
  EXPECT_FALSE(n->is_array());  // the caller runs it zero times
  EXPECT_FALSE(resolveItems("$.missing", reader).has_value());
  EXPECT_FALSE(resolveItems("xs", reader).has_value());  // not a path
}

TEST(ControlFlow, AnUnsetOrNonListSourceIsWarnedAboutAndAnEmptyListIsNot) {
  EXPECT_FALSE(notAListWarning("for_each", "$.xs", Json::array()).has_value());
  EXPECT_FALSE(notAListWarning("for_each", "$.xs", Json::array({1})).has_value());
  auto unset = notAListWarning("node \"each\": for_each", "$.items", std::nullopt);
  ASSERT_TRUE(unset.has_value());
  EXPECT_EQ(*unset, "node \"each\": for_each $.items is unset, so it ran zero times; write that "
                    "field before it runs (or check the path)");
  auto null_value = notAListWarning("for_each", "$.items", Json(nullptr));
  ASSERT_TRUE(null_value.has_value());
  EXPECT_NE(null_value->find("is unset"), std::string::npos);
  auto object = notAListWarning("pipeline \"p\": items", "$.cfg", Json::object());
  ASSERT_TRUE(object.has_value());
  EXPECT_EQ(*object, "pipeline \"p\": items $.cfg is an object, not a list, so it ran zero times");
  auto number = notAListWarning("for_each", "$.n", Json(3));
  ASSERT_TRUE(number.has_value());
  EXPECT_NE(number->find("is a number, not a list"), std::string::npos);
}

TEST(ControlFlow, ALoopStopsAtMaxIters) {
  spec::LoopSpec loop;
  loop.max_iters = 3;
  const Json state = Json::object();
  expr::JsonStateReader reader(state);
  EXPECT_FALSE(loopStops(loop, 0, reader));
  EXPECT_FALSE(loopStops(loop, 2, reader));
  EXPECT_TRUE(loopStops(loop, 3, reader));
  loop.max_iters.reset();
  loop.until = "$.done == true";
  EXPECT_FALSE(loopStops(loop, 99, reader));
  EXPECT_TRUE(loopStops(loop, 100, reader));  // max_iters defaults to 100
}

TEST(ControlFlow, ALoopStopsWhenUntilHolds) {
  spec::LoopSpec loop;
  loop.until = "$.count >= 2";
  Json state = {{"count", 1}};
  expr::JsonStateReader reader(state);
  EXPECT_FALSE(loopStops(loop, 1, reader));
  state["count"] = 2;
  EXPECT_TRUE(loopStops(loop, 1, reader));
  loop.until = "$.count >= ";  // does not compile: the loop does not run forever
  EXPECT_TRUE(loopStops(loop, 0, reader));
}

}  // namespace
}  // namespace oe::run::engine

// The control flow's Run members (control_flow.cpp) through the in-process engine.

namespace oe::run::engine::testing {
namespace {

using ControlFlowRun = EngineTest;

constexpr std::string_view kForEach = R"(name: each
version: 0.1.0
state: { schema: { xs: { type: array }, seen: { type: array, merge: array_append } } }
runtime: { deterministic: true }
graph:
  nodes:
    - { id: seed, kind: fake, args: { delta: { xs: [0, 1, 2, 3, 4] } } }
    - id: each
      kind: fake
      for_each: { source: $.xs, concurrency: 3 }
      args: { append_item: seen, await_left: 3, await_index: 0 }
  edges: [ { from: seed, to: each } ]
)";

TEST_F(ControlFlowRun, DeterministicForEachSettlesInItemOrder) {
  // Item 0 returns only after three calls returned (seed, and items 1 and 2 beside it),
  // so its outcome comes last of the three; D16 still appends in item order.
  const RunSummary summary = run(kForEach);
  EXPECT_EQ(summary.status, RunStatus::kSuccess);
  EXPECT_EQ(callsOf("each").size(), 5u);
  ASSERT_GE(recorder_.left_order.size(), 4u);  // seed, then the items
  EXPECT_EQ(recorder_.left_order[3], 0) << Json(recorder_.left_order).dump();
  EXPECT_EQ(summary.final_state["seen"], Json::array({0, 1, 2, 3, 4}));
  EXPECT_EQ(eventsOf("node.finished", "each").size(), 5u);
}

TEST_F(ControlFlowRun, APipelineHandsEachStagesEdgeOutputToTheNext) {
  const RunSummary summary = run(R"(name: pipe
version: 0.1.0
state: { schema: { items: { type: array } } }
graph:
  nodes:
    - { id: seed, kind: fake, args: { delta: { items: [x, y] } } }
    - { id: s1, kind: fake, args: { edge_item: true } }
    - { id: s2, kind: fake }
    - { id: s3, kind: fake }
  edges: []
  pipelines: [ { id: p, items: $.items, stages: [s1, s2, s3] } ]
)");
  EXPECT_EQ(summary.status, RunStatus::kSuccess);
  const auto s2 = callsOf("s2");
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_EQ(s2[0]["edge_inputs"], (Json{{"s1", {{"item", "x"}}}}));
  EXPECT_EQ(s2[1]["edge_inputs"], (Json{{"s1", {{"item", "y"}}}}));
  EXPECT_EQ(s2[1]["args"]["$pipeline"], "p");
  EXPECT_EQ(s2[1]["args"]["$index"], 1);
  // s2 hands on no edge_output, which ends each item's chain (§3.5): kept, but said, per item
  // (upstream stopped the chain silently).
  EXPECT_TRUE(callsOf("s3").empty());
  ASSERT_EQ(summary.warnings.size(), 2u) << Json(summary.warnings).dump();
  EXPECT_EQ(summary.warnings[0],
            "pipeline \"p\": item 0 (\"x\") stopped after stage \"s2\", which returned no "
            "edge_output, so stage \"s3\" did not run for it; a stage hands the next one its "
            "edge_output (return one to go on)");
  EXPECT_NE(summary.warnings[1].find("item 1 (\"y\") stopped after stage \"s2\""),
            std::string::npos);
  EXPECT_EQ(eventsOf("run.warning", "p").size(), 2u);
}

TEST(ControlFlow, AStoppedStageChainNamesThePipelineTheItemAndTheStagesLeft) {
  spec::PipelineSpec pipeline;
  pipeline.id = "p";
  pipeline.stages = {"a", "b", "c"};
  const std::string long_item(100, 'z');
  const std::string warning = stageChainStopped(pipeline, 7, Json(long_item), 0);
  EXPECT_NE(warning.find("item 7 (\"zzz"), std::string::npos) << warning;
  EXPECT_NE(warning.find("...) stopped after stage \"a\""), std::string::npos) << warning;
  EXPECT_NE(warning.find("so stages \"b\", \"c\" did not run"), std::string::npos) << warning;
  EXPECT_LT(warning.size(), 300u);
}

TEST_F(ControlFlowRun, AForEachOrPipelineOverAnUnsetFieldIsAWarningNotSilence) {
  const RunSummary summary = run(R"(name: unset
version: 0.1.0
state: { schema: { items: { type: array }, empty: { type: array } } }
graph:
  nodes:
    - { id: seed, kind: fake, args: { delta: { empty: [] } } }
    - { id: each, kind: fake, for_each: { source: $.items } }
    - { id: none, kind: fake, for_each: { source: $.empty } }
    - { id: s1, kind: fake }
  edges: [ { from: seed, to: each }, { from: seed, to: none } ]
  pipelines: [ { id: p, items: $.items, stages: [s1] } ]
)");
  EXPECT_EQ(summary.status, RunStatus::kSuccess);  // zero iterations, successors run (§3.5)
  EXPECT_TRUE(callsOf("each").empty());
  ASSERT_EQ(summary.warnings.size(), 2u) << Json(summary.warnings).dump();  // not for `none`
  EXPECT_NE(summary.warnings[0].find("node \"each\": for_each $.items is unset"),
            std::string::npos)
      << summary.warnings[0];
  EXPECT_NE(summary.warnings[1].find("pipeline \"p\": items $.items is unset"), std::string::npos)
      << summary.warnings[1];
  EXPECT_EQ(eventsOf("run.warning", "each").size(), 1u);
  EXPECT_EQ(eventsOf("run.warning", "p").size(), 1u);
}

TEST_F(ControlFlowRun, ALoopRunsUntilMaxItersOrUntil) {
  RunSummary summary = run(R"(name: loop
version: 0.1.0
state: { schema: {} }
graph:
  nodes: [ { id: body, kind: fake } ]
  edges: []
  loops: [ { id: l, body: body, max_iters: 3 } ]
)");
  EXPECT_EQ(summary.status, RunStatus::kSuccess);
  const auto calls = callsOf("body");
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[2]["args"]["$iter"], 2);
  EXPECT_EQ(calls[2]["args"]["$loop"], "l");

  summary = run(R"(name: until
version: 0.1.0
state: { schema: { done: { type: boolean } } }
graph:
  nodes: [ { id: once, kind: fake, args: { delta: { done: true } } } ]
  edges: []
  loops: [ { id: l, body: once, until: '$.done == true', max_iters: 50 } ]
)");
  EXPECT_EQ(callsOf("once").size(), 1u);
}

// Upstream runs a main node with an edge from a pipeline stage or a loop body in the main pass,
// before the stage or body ever ran, so it gets neither their edge_output nor their writes.
// oe makes it wait for the pipeline or loop (D19), and what follows it waits in turn.
TEST_F(ControlFlowRun, AMainNodeAfterAStageOrALoopBodyWaitsForThePipelineOrLoop) {
  RunSummary summary = run(R"(name: after
version: 0.1.0
state: { schema: { n: { type: number }, items: { type: array } } }
graph:
  nodes:
    - { id: seed, kind: fake, args: { delta: { items: [x, y] } } }
    - { id: stage, kind: fake, args: { edge_item: true } }
    - { id: body, kind: fake, reads: [n], args: { count: n, edge: looped } }
    - { id: after_stage, kind: fake }
    - { id: after_loop, kind: fake, reads: [n] }
    - { id: last, kind: fake }
  edges:
    - { from: stage, to: after_stage }
    - { from: body, to: after_loop }
    - { from: after_loop, to: last }
  pipelines: [ { id: p, items: $.items, stages: [stage] } ]
  loops: [ { id: l, body: body, max_iters: 3 } ]
)");
  EXPECT_EQ(summary.status, RunStatus::kSuccess);
  std::vector<std::string> order;
  for (const Json& call : recorder_.calls) {
    order.push_back(call["node"].get<std::string>());
  }
  EXPECT_EQ(order, (std::vector<std::string>{"seed", "stage", "stage", "after_stage", "body",
                                             "body", "body", "after_loop", "last"}));
  EXPECT_EQ(callsOf("after_stage")[0]["edge_inputs"], (Json{{"stage", {{"item", "y"}}}}));
  EXPECT_EQ(callsOf("after_loop")[0]["edge_inputs"], (Json{{"body", "looped"}}));
  EXPECT_EQ(callsOf("after_loop")[0]["state_view"], (Json{{"n", 3}}));

  // A loop whose body failed is failed for what waits for it, which is skipped.
  summary = run(R"(name: failed
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - { id: body, kind: fake, args: { fail_until: 9 } }
    - { id: after_loop, kind: fake }
  edges: [ { from: body, to: after_loop } ]
  loops: [ { id: l, body: body, max_iters: 3 } ]
)");
  EXPECT_EQ(summary.status, RunStatus::kFailed);
  EXPECT_EQ(callsOf("after_loop").size(), 1u);  // the first run's only
  ASSERT_EQ(eventsOf("node.skipped", "after_loop").size(), 1u);
}

// A loop stopped in its fourth iteration and resumed goes on from there: the three finished
// iterations are neither applied again nor asked `until` of the state they left (before, the
// resumed loop started again at iteration 0, whose inputs, n = 3 now, had changed, so it ran
// and appended again).
TEST_F(ControlFlowRun, AResumedLoopGoesOnWhereItStopped) {
  const std::string yaml = R"(name: loop
version: 0.1.0
state: { schema: { n: { type: number }, seen: { type: array, merge: array_append } } }
graph:
  nodes:
    - id: body
      kind: fake
      reads: [n]
      args: { count: n, append_item: seen, fail_item: 3, fail_unless_file: ")" +
                           (dir_ / "go").string() + R"(" }
  edges: []
  loops: [ { id: l, body: body, until: '$.n >= 5', max_iters: 10 } ]
)";
  RunSummary summary = run(yaml);
  ASSERT_EQ(summary.status, RunStatus::kPartial);
  EXPECT_EQ(summary.final_state["seen"], Json::array({0, 1, 2}));
  ASSERT_EQ(callsOf("body").size(), 4u);

  dir_.write("go", "");
  RunOptions resume;
  resume.chain_id = "run-1";
  summary = run(yaml, resume);
  EXPECT_EQ(summary.status, RunStatus::kSuccess);
  EXPECT_EQ(summary.final_state["n"], 5);
  EXPECT_EQ(summary.final_state["seen"], Json::array({0, 1, 2, 3, 4}));
  EXPECT_EQ(summary.cached, 3u);  // iterations 0..2, as they were
  EXPECT_EQ(summary.ran, 2u);
  const auto calls = callsOf("body");
  ASSERT_EQ(calls.size(), 6u);  // 4 in the first run, then iterations 3 and 4
  EXPECT_EQ(calls[4]["args"]["$iter"], 3);
  EXPECT_EQ(calls[4]["state_view"]["n"], 3);
}

// A `when` is decided once per chain of runs. The first run decides it while `seen` holds one
// item and skips `gated`; its loop then appends to `seen` and stops. The resume finds `seen`
// longer and must not decide again (before, it did: `gated` ran, and the resumed run ended
// where no uninterrupted one does; crash harness seeds 40 and 48).
TEST_F(ControlFlowRun, AResumeKeepsTheWhenDecisionsOfTheRunItContinues) {
  const std::string yaml = R"(name: gate
version: 0.1.0
state: { schema: { seen: { type: array, merge: array_append }, n: { type: number } } }
graph:
  nodes:
    - { id: seed, kind: fake, args: { delta: { seen: [seed] } } }
    - { id: gated, kind: fake, args: { delta: { n: 100 } } }
    - id: body
      kind: fake
      reads: [n]
      args: { count: n, append_item: seen, fail_item: 1, fail_unless_file: ")" +
                           (dir_ / "go").string() + R"(" }
  edges: [ { from: seed, to: gated, when: 'length($.seen) > 1' } ]
  loops: [ { id: l, body: body, max_iters: 2 } ]
)";
  RunSummary summary = run(yaml);
  ASSERT_EQ(summary.status, RunStatus::kPartial);
  EXPECT_EQ(summary.skipped, 1u);
  EXPECT_EQ(summary.final_state["seen"], Json::array({"seed", 0}));

  dir_.write("go", "");
  RunOptions resume;
  resume.chain_id = "run-1";
  summary = run(yaml, resume);
  EXPECT_EQ(summary.status, RunStatus::kSuccess);
  EXPECT_EQ(summary.skipped, 1u);
  EXPECT_TRUE(callsOf("gated").empty());
  EXPECT_EQ(summary.final_state["seen"], Json::array({"seed", 0, 1}));
  EXPECT_EQ(summary.final_state["n"], 2);
}

TEST(ControlFlow, ALandedIterationIsNotAskedUntilAgain) {
  spec::LoopSpec loop;
  loop.id = "l";
  loop.body = "b";
  loop.until = "$.done == true";
  loop.max_iters = 4;
  std::vector<int> iterations(1, 0);
  for (std::string_view key : {"b@l#0", "b@l#2", "other@l#7", "b@m#9", "x/b@l#8", "b@l#"}) {
    noteLandedIteration({loop}, key, iterations);
  }
  EXPECT_EQ(iterations[0], 3);
  const Json state = {{"done", true}};
  expr::JsonStateReader reader(state);
  EXPECT_TRUE(loopStops(loop, 1, reader));
  EXPECT_FALSE(loopStops(loop, 1, reader, /*landed=*/true));
  EXPECT_TRUE(loopStops(loop, 4, reader, /*landed=*/true));  // max_iters still holds
}

}  // namespace
}  // namespace oe::run::engine::testing

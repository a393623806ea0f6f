// The scheduler tests of reference §11.3, ported to run the real `oe` with real .mjs tools.
#include <algorithm>
#include <map>
#include <regex>

#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using Scheduler = OeTest;

// A tool that records how many calls were in flight at once (one worker serves all calls).
constexpr std::string_view kInFlightTool = R"(
let inflight = 0;
let max = 0;
export default async function (args) {
  inflight++;
  max = Math.max(max, inflight);
  await new Promise((r) => setTimeout(r, args.ms ?? 50));
  inflight--;
  return { state_delta: { max_in_flight: max, seen: [args.$item ?? args.label] } };
}
)";

// The same, synchronised instead of timed (one worker serves all calls, so calls can wait for
// each other): `until_in_flight: n` holds a call until n calls have been in flight at once, and
// `after: <label>` holds it until the call labelled so has finished. Either wait gives up after
// 10 s, so a scheduler that cannot satisfy it makes the test fail rather than hang.
constexpr std::string_view kSyncTool = R"(
let inflight = 0;
let max = 0;
const done = new Set();
const waiters = [];
function wake() {
  for (const w of waiters.splice(0)) {
    if (w.ready()) w.resolve(); else waiters.push(w);
  }
}
function until(ready) {
  if (ready()) return Promise.resolve();
  return new Promise((resolve) => {
    waiters.push({ ready, resolve });
    setTimeout(resolve, 10000);
  });
}
export default async function (args) {
  const label = args.$item ?? args.label;
  inflight++;
  max = Math.max(max, inflight);
  wake();
  if (args.until_in_flight) await until(() => max >= args.until_in_flight);
  if (args.after) await until(() => done.has(args.after));
  inflight--;
  const before = [...done];
  done.add(label);
  wake();
  const delta = { max_in_flight: max, seen: [label] };
  if (args.report) delta[args.report] = before;  // what had finished when this call did
  return { state_delta: delta };
}
)";

TEST_F(Scheduler, RunnerThreadsValuesFromAToB) {
  writeTool("a.mjs", "export default () => ({ state_delta: { a: 7 } });");
  writeTool("b.mjs", "export default (args) => ({ state_delta: { b: args._state.a * 2 } });");
  writeExperience(R"(name: runner
version: 0.1.0
state: { schema: { a: { type: number }, b: { type: number } } }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./tools/a.mjs, writes: [a] }
    - { id: b, kind: tool, impl: ./tools/b.mjs, reads: [a], writes: [b] }
  edges: [ { from: a, to: b } ]
)");
  int code = -1;
  auto out = runJson({}, &code);
  EXPECT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["status"], "success");
  EXPECT_EQ(out["final_state"]["a"], 7);
  EXPECT_EQ(out["final_state"]["b"], 14);
  auto evs = events(out["run_id"]);
  EXPECT_EQ(count(evs, "run.started"), 1u);
  EXPECT_EQ(count(evs, "run.finished"), 1u);
  EXPECT_EQ(count(evs, "node.finished"), 2u);
}

TEST_F(Scheduler, ThrowingToolFailsTheRun) {
  writeTool("boom.mjs", "export default () => { throw new Error('boom'); };");
  writeExperience(R"(name: failing
version: 0.1.0
state: { schema: {} }
graph:
  nodes: [ { id: x, kind: tool, impl: ./tools/boom.mjs } ]
  edges: []
)");
  int code = -1;
  auto out = runJson({}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out["status"], "failed");
  auto evs = events(out["run_id"]);
  ASSERT_EQ(count(evs, "node.failed", "x"), 1u);
  for (const auto& e : evs) {
    if (e["type"] == "node.failed") {
      EXPECT_NE(e["error"].get<std::string>().find("boom"), std::string::npos) << e.dump();
    }
  }
}

TEST_F(Scheduler, WhenFalseSkipsAndRunStillSucceeds) {
  writeTool("set.mjs", "export default (a) => ({ state_delta: { [a.field]: a.value } });");
  writeExperience(R"(name: when
version: 0.1.0
state: { schema: { flag: { type: boolean }, result: { type: string } } }
graph:
  nodes:
    - { id: gate, kind: tool, impl: ./tools/set.mjs, args: { field: flag, value: false }, writes: [flag] }
    - { id: gated, kind: tool, impl: ./tools/set.mjs, args: { field: result, value: ran }, writes: [result] }
  edges: [ { from: gate, to: gated, when: '$.flag == true' } ]
)");
  auto out = runJson({"--no-cache"});
  EXPECT_EQ(out["status"], "success");
  EXPECT_FALSE(out["final_state"].contains("result"));
  auto evs = events(out["run_id"]);
  ASSERT_EQ(count(evs, "node.skipped", "gated"), 1u);
  for (const auto& e : evs) {
    if (e["type"] == "node.skipped") {
      EXPECT_EQ(e["reason"], "when: condition false");
    }
  }
  // The same graph with a true condition runs the gated node.
  writeExperience(R"(name: when
version: 0.1.0
state: { schema: { flag: { type: boolean }, result: { type: string } } }
graph:
  nodes:
    - { id: gate, kind: tool, impl: ./tools/set.mjs, args: { field: flag, value: true }, writes: [flag] }
    - { id: gated, kind: tool, impl: ./tools/set.mjs, args: { field: result, value: ran }, writes: [result] }
  edges: [ { from: gate, to: gated, when: '$.flag == true' } ]
)");
  out = runJson({"--no-cache"});
  EXPECT_EQ(out["final_state"]["result"], "ran");
}

TEST_F(Scheduler, ForEachSeesItemsInOrderAndRespectsConcurrency) {
  writeTool("seed.mjs", "export default () => ({ state_delta: { items: ['a','b','c','d','e','f','g','h'] } });");
  writeTool("probe.mjs", kSyncTool);
  writeExperience(R"(name: fe
version: 0.1.0
state:
  schema:
    items: { type: array }
    seen: { type: array, merge: array_append }
    max_in_flight: { type: number }
graph:
  nodes:
    - { id: seed, kind: tool, impl: ./tools/seed.mjs, writes: [items] }
    - { id: each, kind: tool, impl: ./tools/probe.mjs, writes: [seen, max_in_flight],
        for_each: { source: $.items } }
  edges: [ { from: seed, to: each } ]
)");
  auto out = runJson({"--no-cache"});
  EXPECT_EQ(out["status"], "success") << last_stderr_;
  EXPECT_EQ(out["final_state"]["seen"], nlohmann::json({"a", "b", "c", "d", "e", "f", "g", "h"}));
  EXPECT_EQ(out["final_state"]["max_in_flight"], 1);  // concurrency unset → one at a time

  // Each item waits until 4 items have been in flight at once: the limit must let exactly 4 run
  // together (3 would make every wait give up; 8 would show as 8).
  std::string yaml = readFile(dir_.path() / "experience.yaml");
  yaml.replace(yaml.find("writes: [seen, max_in_flight],"), 30,
               "args: { until_in_flight: 4 }, writes: [seen, max_in_flight],");
  yaml.replace(yaml.find("source: $.items }"), 17, "source: $.items, concurrency: 4 }");
  writeExperience(yaml);
  out = runJson({"--no-cache"});
  EXPECT_EQ(out["status"], "success");
  EXPECT_EQ(out["final_state"]["max_in_flight"], 4);
}

TEST_F(Scheduler, IndependentNodesRunInParallelAndADependencyDoesNot) {
  // Every node waits until all four have been in flight together.
  writeTool("probe.mjs", kSyncTool);
  writeExperience(R"(name: par
version: 0.1.0
runtime: { concurrency: 4 }
state: { schema: { seen: { type: array, merge: array_append }, max_in_flight: { type: number } } }
graph:
  nodes:
    - { id: n1, kind: tool, impl: ./tools/probe.mjs, args: { label: n1, until_in_flight: 4 }, writes: [seen, max_in_flight] }
    - { id: n2, kind: tool, impl: ./tools/probe.mjs, args: { label: n2, until_in_flight: 4 }, writes: [seen, max_in_flight] }
    - { id: n3, kind: tool, impl: ./tools/probe.mjs, args: { label: n3, until_in_flight: 4 }, writes: [seen, max_in_flight] }
    - { id: n4, kind: tool, impl: ./tools/probe.mjs, args: { label: n4, until_in_flight: 4 }, writes: [seen, max_in_flight] }
  edges: []
)");
  auto out = runJson({"--no-cache"});
  EXPECT_EQ(out["final_state"]["max_in_flight"].get<int>(), 4);
  EXPECT_EQ(out["final_state"]["seen"].size(), 4u);

  writeExperience(R"(name: par
version: 0.1.0
runtime: { concurrency: 4 }
state: { schema: { seen: { type: array, merge: array_append }, max_in_flight: { type: number } } }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./tools/timed.mjs, args: { label: a, ms: 20 }, writes: [seen, max_in_flight] }
    - { id: b, kind: tool, impl: ./tools/timed.mjs, args: { label: b, ms: 20 }, writes: [seen, max_in_flight] }
  edges: [ { from: a, to: b } ]
)");
  // Timed on purpose: only an ignored dependency could overlap a and b, and then likely would.
  writeTool("timed.mjs", kInFlightTool);
  TempDir fresh;  // a fresh worker: the module-level counters start at zero
  std::filesystem::copy(dir_.path() / "experience.yaml", fresh / "experience.yaml");
  std::filesystem::copy(dir_.path() / "tools", fresh / "tools", std::filesystem::copy_options::recursive);
  // --fresh: the first run's `seen` is not this one's (a new folder on SQLite, the same scope,
  // the experience's name, on PostgreSQL).
  auto r = oe({"run", fresh.path().string(), "--json", "--no-cache", "--fresh"});
  auto dep = nlohmann::json::parse(r.out);
  EXPECT_EQ(dep["final_state"]["max_in_flight"], 1);
  EXPECT_EQ(dep["final_state"]["seen"], nlohmann::json({"a", "b"}));
}

TEST_F(Scheduler, ReadyQueueDoesNotWaitForTheSlowestOfAWave) {
  // D5: c depends only on a, and b does not finish before c has: a ready-queue scheduler runs
  // c while b waits; a wave scheduler would start c only after b, whose wait then gives up.
  writeTool("probe.mjs", kSyncTool);
  writeExperience(R"(name: d5
version: 0.1.0
runtime: { concurrency: 2 }
state: { schema: { seen: { type: array, merge: array_append }, max_in_flight: { type: number },
                   before_b: { type: array } } }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./tools/probe.mjs, args: { label: a }, writes: [seen, max_in_flight] }
    - { id: b, kind: tool, impl: ./tools/probe.mjs, args: { label: b, after: c, report: before_b },
        writes: [seen, max_in_flight, before_b] }
    - { id: c, kind: tool, impl: ./tools/probe.mjs, args: { label: c }, writes: [seen, max_in_flight] }
  edges: [ { from: a, to: c } ]
)");
  auto out = runJson({"--no-cache"});
  // c ran to its end while b was still running. (Not the order of `seen`: b and c finish in the
  // same instant, and which of their answers the host takes first is a race.)
  EXPECT_EQ(out["final_state"]["before_b"], nlohmann::json({"a", "c"})) << out.dump(2);
  EXPECT_EQ(out["final_state"]["seen"].size(), 3u);
}

TEST_F(Scheduler, LoopUntilAndMaxIters) {
  writeTool("inc.mjs", "export default (a) => ({ state_delta: { count: (a._state.count ?? 0) + 1 } });");
  writeExperience(R"(name: loop
version: 0.1.0
state: { schema: { count: { type: number } } }
graph:
  nodes: [ { id: inc, kind: tool, impl: ./tools/inc.mjs, reads: [count], writes: [count] } ]
  edges: []
  loops: [ { id: l, body: inc, until: '$.count >= 3', max_iters: 10 } ]
)");
  auto out = runJson({"--no-cache"});
  EXPECT_EQ(out["final_state"]["count"], 3);

  ASSERT_EQ(oe({"reset-state", "--yes"}).exit_code, 0);
  writeExperience(R"(name: loop
version: 0.1.0
state: { schema: { count: { type: number } } }
graph:
  nodes: [ { id: inc, kind: tool, impl: ./tools/inc.mjs, reads: [count], writes: [count] } ]
  edges: []
  loops: [ { id: l, body: inc, max_iters: 5 } ]
)");
  out = runJson({"--no-cache"});
  EXPECT_EQ(out["final_state"]["count"], 5);
}

TEST_F(Scheduler, PipelineHandsEdgeOutputFromStageToStage) {
  writeTool("seed.mjs", "export default () => ({ state_delta: { items: ['x', 'y'] } });");
  writeTool("a.mjs", "export default (a) => ({ state_delta: {}, edge_output: 'A:' + a.$item });");
  writeTool("b.mjs",
            "export default (a) => ({ state_delta: { processed: [String(a._edge_inputs.stage_a)] } });");
  writeExperience(R"(name: pipe
version: 0.1.0
state: { schema: { items: { type: array }, processed: { type: array, merge: array_append } } }
graph:
  nodes:
    - { id: seed, kind: tool, impl: ./tools/seed.mjs, writes: [items] }
    - { id: stage_a, kind: tool, impl: ./tools/a.mjs }
    - { id: stage_b, kind: tool, impl: ./tools/b.mjs, writes: [processed] }
  edges: []
  pipelines: [ { id: p1, items: $.items, stages: [stage_a, stage_b] } ]
)");
  auto out = runJson({"--no-cache"});
  EXPECT_EQ(out["status"], "success") << last_stderr_;
  EXPECT_EQ(out["final_state"]["processed"], nlohmann::json({"A:x", "A:y"}));
}

TEST_F(Scheduler, RetrySucceedsAfterTwoFailures) {
  writeTool("flaky.mjs", R"(
let calls = 0;
export default () => {
  calls++;
  if (calls < 3) throw new Error('flaky ' + calls);
  return { state_delta: { calls } };
};)");
  writeExperience(R"(name: retry
version: 0.1.0
state: { schema: { calls: { type: number } } }
graph:
  nodes:
    - { id: f, kind: tool, impl: ./tools/flaky.mjs, writes: [calls],
        on_error: { policy: retry, attempts: 3, backoff: exponential, base_ms: 5 } }
  edges: []
)");
  auto out = runJson({"--no-cache"});
  EXPECT_EQ(out["status"], "success");
  EXPECT_EQ(out["final_state"]["calls"], 3);
  auto evs = events(out["run_id"]);
  EXPECT_EQ(count(evs, "node.failed"), 0u);
  EXPECT_EQ(count(evs, "node.started"), 1u);  // one started per node, attempts inside
}

TEST_F(Scheduler, DefaultPolicyIsSkipSiblingStillRunsStatusPartial) {
  writeTool("boom.mjs", "export default () => { throw new Error('boom'); };");
  writeTool("ok.mjs", "export default () => ({ state_delta: { ok: true } });");
  writeExperience(R"(name: partial
version: 0.1.0
state: { schema: { ok: { type: boolean }, after: { type: boolean } } }
graph:
  nodes:
    - { id: bad, kind: tool, impl: ./tools/boom.mjs }
    - { id: after_bad, kind: tool, impl: ./tools/ok.mjs, writes: [ok] }
    - { id: sibling, kind: tool, impl: ./tools/ok.mjs, writes: [ok] }
  edges: [ { from: bad, to: after_bad } ]
)");
  int code = -1;
  auto out = runJson({"--no-cache"}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out["status"], "partial");
  EXPECT_EQ(out["final_state"]["ok"], true);
  auto evs = events(out["run_id"]);
  EXPECT_EQ(count(evs, "node.skipped", "after_bad"), 1u);
  EXPECT_EQ(count(evs, "node.finished", "sibling"), 1u);
}

TEST_F(Scheduler, RetriesRunOutWithLinearOrExponentialBackoff) {
  // Every attempt fails with its number; the retry events say how long the host waits.
  // One module per node: each counts its own attempts.
  for (const char* name : {"lin.mjs", "exp.mjs"}) {
    writeTool(name, R"(
let calls = 0;
export default () => { calls++; throw new Error('attempt ' + calls + ' failed'); };)");
  }
  writeTool("ok.mjs", "export default () => ({ state_delta: { ok: true } });");
  writeExperience(R"(name: exhaust
version: 0.1.0
state: { schema: { ok: { type: boolean } } }
graph:
  nodes:
    - { id: lin, kind: tool, impl: ./tools/lin.mjs,
        on_error: { policy: retry, attempts: 4, base_ms: 10 } }
    - { id: exp, kind: tool, impl: ./tools/exp.mjs,
        on_error: { policy: retry, attempts: 4, backoff: exponential, base_ms: 10 } }
    - { id: after_lin, kind: tool, impl: ./tools/ok.mjs, writes: [ok] }
  edges: [ { from: lin, to: after_lin } ]
)");
  // The retries are progress lines (they are not in the event log): run without --json.
  auto r = oe({"run", dir_.path().string(), "--no-cache"});
  EXPECT_EQ(r.exit_code, 1);
  using Waits = std::vector<std::pair<int, int64_t>>;
  std::map<std::string, Waits> retries;  // node -> (attempt, delay_ms)
  static const std::regex kRetry(R"(  retry   (\w+) after attempt (\d+) in (\d+) ms: )");
  for (std::sregex_iterator it(r.err.begin(), r.err.end(), kRetry), end; it != end; ++it) {
    retries[(*it)[1]].emplace_back(std::stoi((*it)[2]), std::stoll((*it)[3]));
  }
  // attempts: 4 means 4 calls, 3 waits: base*n when linear (the default), base*2^(n-1) else.
  EXPECT_EQ(retries["lin"], (Waits{{1, 10}, {2, 20}, {3, 30}})) << r.err;
  EXPECT_EQ(retries["exp"], (Waits{{1, 10}, {2, 20}, {3, 40}})) << r.err;
  std::string run_id;  // the only run of this folder
  for (const auto& entry :
       std::filesystem::directory_iterator(dir_.path() / ".openexpertise" / "runs")) {
    if (entry.path().extension() == ".jsonl") {
      run_id = entry.path().stem().string();
    }
  }
  auto evs = events(run_id);
  ASSERT_FALSE(evs.empty()) << r.out << r.err;
  EXPECT_EQ(evs.back()["status"], "failed") << "every node failed or was skipped";
  std::map<std::string, std::string> failures;
  for (const auto& e : evs) {
    if (e["type"] == "node.failed") {
      failures[e["node_id"]] = e["error"];
    }
  }
  ASSERT_EQ(failures.size(), 2U);
  // Each node fails once, with its 4th attempt's error; the descendant is skipped, unrun.
  EXPECT_NE(failures["lin"].find("attempt 4 failed"), std::string::npos) << failures["lin"];
  EXPECT_NE(failures["exp"].find("attempt 4 failed"), std::string::npos) << failures["exp"];
  EXPECT_EQ(count(evs, "node.failed", "lin"), 1u);
  EXPECT_EQ(count(evs, "node.started", "lin"), 1u);
  EXPECT_EQ(count(evs, "node.skipped", "after_lin"), 1u);
  EXPECT_EQ(count(evs, "node.started", "after_lin"), 0u);
}

TEST_F(Scheduler, FailRunCancelsTheRestAndWritesRunFinished) {
  writeTool("boom.mjs", "export default () => { throw new Error('boom'); };");
  writeTool("ok.mjs", "export default () => ({ state_delta: { ok: true } });");
  writeExperience(R"(name: failrun
version: 0.1.0
state: { schema: { ok: { type: boolean } } }
graph:
  nodes:
    - { id: bad, kind: tool, impl: ./tools/boom.mjs, on_error: { policy: fail_run } }
    - { id: later, kind: tool, impl: ./tools/ok.mjs, writes: [ok] }
  edges: [ { from: bad, to: later } ]
)");
  int code = -1;
  auto out = runJson({"--no-cache"}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out["status"], "failed");  // D7
  EXPECT_NE(out["reason"].get<std::string>().find("fail_run"), std::string::npos);
  auto evs = events(out["run_id"]);
  ASSERT_EQ(evs.back()["type"], "run.finished");
  EXPECT_EQ(evs.back()["status"], "failed");
  EXPECT_EQ(count(evs, "node.started", "later"), 0u);
}

TEST_F(Scheduler, PhaseIsOnNodeEventsOnlyWhenDeclared) {
  writeTool("ok.mjs", "export default () => ({ state_delta: {} });");
  writeExperience(R"(name: phase
version: 0.1.0
phases: [ { id: collect } ]
state: { schema: {} }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./tools/ok.mjs, phase: collect }
    - { id: b, kind: tool, impl: ./tools/ok.mjs }
  edges: []
)");
  auto out = runJson({"--no-cache"});
  for (const auto& e : events(out["run_id"])) {
    if (e["type"] == "node.finished" && e["node_id"] == "a") {
      EXPECT_EQ(e["phase"], "collect");
    }
    if (e["type"] == "node.finished" && e["node_id"] == "b") {
      EXPECT_FALSE(e.contains("phase"));
    }
  }
}

TEST_F(Scheduler, RunArgsReachEveryNodeAndNodeArgsWin) {
  // D1: args = {...run_args, ...node_args}
  writeTool("echo.mjs", "export default (a) => ({ state_delta: { [a.out]: a.name + '/' + a.mode } });");
  writeExperience(R"(name: args
version: 0.1.0
state: { schema: { x: { type: string }, y: { type: string } } }
graph:
  nodes:
    - { id: p, kind: tool, impl: ./tools/echo.mjs, args: { out: x } }
    - { id: q, kind: tool, impl: ./tools/echo.mjs, args: { out: y, mode: node } }
  edges: []
)");
  auto out = runJson({"--no-cache", "--args", R"({"name":"run","mode":"run"})"});
  EXPECT_EQ(out["final_state"]["x"], "run/run");
  EXPECT_EQ(out["final_state"]["y"], "run/node");
  auto evs = events(out["run_id"]);
  EXPECT_EQ(evs.front()["args"]["name"], "run");
}

// A tool that appends what it was called with to the field `args.into`: its args without `into`
// and the names of the `_state` fields it was given.
constexpr std::string_view kRecordTool = R"(
export default (a) => {
  const { into, _state, _edge_inputs, ...args } = a;
  return { state_delta: { [into]: [{ args, state: Object.keys(_state) }] } };
};
)";

TEST_F(Scheduler, PathArgsResolveAgainstTheStateAtRunTime) {
  // `pr` and `list` are written by `seed` in this very run: the args of `use` can only resolve
  // when `use` is dispatched, not when the experience is loaded.
  writeTool("seed.mjs",
            "export default () => ({ state_delta: { pr: { id: 7, title: 'Fix' }, list: [1, 2, 3] } "
            "});");
  writeTool("record.mjs", kRecordTool);
  writeExperience(R"(name: paths
version: 0.1.0
state:
  schema:
    pr: { type: object }
    list: { type: array }
    calls: { type: array, merge: array_append }
graph:
  nodes:
    - { id: seed, kind: tool, impl: ./tools/seed.mjs, writes: [pr, list] }
    - id: use
      kind: tool
      impl: ./tools/record.mjs
      writes: [calls]
      args:
        into: calls
        id: $.pr.id
        n: $.list.length
        pair: [$.pr.title, $.nothing]
        nested: { title: $.pr.title, gone: $.nothing }
        plain: see $.pr
  edges: [ { from: seed, to: use } ]
)");
  auto out = runJson({"--no-cache"});
  ASSERT_EQ(out["status"], "success") << last_stderr_;
  const auto& call = out["final_state"]["calls"].at(0);
  EXPECT_EQ(call["args"], nlohmann::json::parse(R"({"id": 7, "n": 3, "pair": ["Fix", null],
      "nested": {"title": "Fix"}, "plain": "see $.pr"})"));
}

TEST_F(Scheduler, InjectedKeysReachForEachPipelineAndLoopCalls) {
  writeTool("seed.mjs", "export default () => ({ state_delta: { items: ['x', 'y'] } });");
  writeTool("record.mjs", kRecordTool);
  writeTool("inc.mjs",
            "export default (a) => ({ state_delta: { count: (a._state.count ?? 0) + 1, "
            "looped: [{ iter: a.$iter, loop: a.$loop }] } });");
  writeExperience(R"(name: injected
version: 0.1.0
runtime: { deterministic: true }
state:
  schema:
    items: { type: array }
    count: { type: number }
    each_calls: { type: array, merge: array_append }
    stage_calls: { type: array, merge: array_append }
    looped: { type: array, merge: array_append }
graph:
  nodes:
    - { id: seed, kind: tool, impl: ./tools/seed.mjs, writes: [items] }
    - { id: each, kind: tool, impl: ./tools/record.mjs, writes: [each_calls], args: { into: each_calls },
        for_each: { source: $.items, concurrency: 2 } }
    - { id: stage, kind: tool, impl: ./tools/record.mjs, writes: [stage_calls], args: { into: stage_calls } }
    - { id: inc, kind: tool, impl: ./tools/inc.mjs, reads: [count], writes: [count, looped] }
  edges: [ { from: seed, to: each }, { from: seed, to: inc } ]
  pipelines: [ { id: p1, items: $.items, stages: [stage] } ]
  loops: [ { id: again, body: inc, until: '$.count >= 2', max_iters: 5 } ]
)");
  auto out = runJson({"--no-cache"});
  ASSERT_EQ(out["status"], "success") << last_stderr_;
  const auto& state = out["final_state"];
  EXPECT_EQ(state["each_calls"], nlohmann::json::parse(R"([
      {"args": {"$item": "x", "$index": 0}, "state": []},
      {"args": {"$item": "y", "$index": 1}, "state": []}])"));
  EXPECT_EQ(state["stage_calls"], nlohmann::json::parse(R"([
      {"args": {"$item": "x", "$index": 0, "$pipeline": "p1"}, "state": []},
      {"args": {"$item": "y", "$index": 1, "$pipeline": "p1"}, "state": []}])"));
  EXPECT_EQ(state["looped"], nlohmann::json::parse(R"([
      {"iter": 0, "loop": "again"}, {"iter": 1, "loop": "again"}])"));
}

TEST_F(Scheduler, ToolsSeeOnlyTheStateFieldsTheyRead) {
  writeTool("seed.mjs",
            "export default () => ({ state_delta: { a: 1, b: 2, secret: 'not yours' } });");
  writeTool("record.mjs", kRecordTool);
  writeExperience(R"(name: reads
version: 0.1.0
state:
  schema:
    a: { type: number }
    b: { type: number }
    secret: { type: string }
    unset: { type: string }
    calls: { type: array, merge: array_append }
graph:
  nodes:
    - { id: seed, kind: tool, impl: ./tools/seed.mjs, writes: [a, b, secret] }
    - { id: some, kind: tool, impl: ./tools/record.mjs, reads: [b, a, unset], writes: [calls],
        args: { into: calls } }
    - { id: none, kind: tool, impl: ./tools/record.mjs, writes: [calls], args: { into: calls } }
  edges: [ { from: seed, to: some }, { from: some, to: none } ]
)");
  auto out = runJson({"--no-cache"});
  ASSERT_EQ(out["status"], "success") << last_stderr_;
  const auto& calls = out["final_state"]["calls"];
  ASSERT_EQ(calls.size(), 2U);
  auto some = calls[0]["state"].get<std::vector<std::string>>();
  std::sort(some.begin(), some.end());
  EXPECT_EQ(some, (std::vector<std::string>{"a", "b"}));  // no `secret`, nothing for `unset`
  EXPECT_EQ(calls[1]["state"], nlohmann::json::array());
}

TEST_F(Scheduler, TimeoutFailsTheNodeAndKillsTheTool) {
  // The tool and a child of it would run for 10 minutes and then leave a marker: only the
  // timeout's kill of the whole process group ends the run in time for ctest's 300 s limit.
  const auto tool_pid = dir_.path() / "tool.pid";
  const auto child_pid = dir_.path() / "child.pid";
  const auto marker = dir_.path() / "finished";
  // The pid files are written long before the 1 s timeout; nothing waits on that.
  writeExecutable("tools/slow.sh", "#!/bin/sh\necho $$ > '" + tool_pid.string() +
                                       "'\nsleep 600 &\necho $! > '" + child_pid.string() +
                                       "'\nwait\ntouch '" + marker.string() +
                                       "'\necho '{\"state_delta\":{}}'\n");
  writeExperience(R"(name: slow
version: 0.1.0
state: { schema: {} }
graph:
  nodes: [ { id: slow, kind: tool, impl: ./tools/slow.sh, timeout_ms: 1000 } ]
  edges: []
)");
  int code = -1;
  auto out = runJson({"--no-cache"}, &code);
  EXPECT_EQ(code, 1);
  auto evs = events(out["run_id"]);
  bool found = false;
  for (const auto& e : evs) {
    if (e["type"] == "node.failed") {
      found = e["error"].get<std::string>().find("timed out after 1000 ms") != std::string::npos;
    }
  }
  EXPECT_TRUE(found);
  const pid_t tool = pidIn(tool_pid);
  const pid_t child = pidIn(child_pid);
  ASSERT_GT(tool, 0);
  ASSERT_GT(child, 0);
  EXPECT_TRUE(processGone(tool));
  EXPECT_TRUE(processGone(child)) << "the tool's child outlived the timeout";
  if (!processGone(child)) {
    ::kill(child, SIGKILL);
  }
  EXPECT_FALSE(std::filesystem::exists(marker));
}

// processGone() is how the kill tests above see a process end; a process that was just
// signalled, or is about to exit, still runs for a moment: it must be looked at again rather
// than reported alive on the first look (issue 22, section 5).
TEST(ProcessSupport, ProcessGoneWaitsForAProcessThatIsAboutToEnd) {
  TempDir dir;
  BackgroundProcess brief({"sh", "-c", "sleep 1"}, {}, dir.path(), dir.path() / "brief");
  EXPECT_TRUE(processGone(brief.pid()));
  BackgroundProcess lasting({"sleep", "600"}, {}, dir.path(), dir.path() / "lasting");
  EXPECT_FALSE(processGone(lasting.pid(), std::chrono::milliseconds(50)));
}

TEST_F(Scheduler, CacheReplaysUnchangedNodesAndReRunsEditedTools) {
  const auto calls = dir_.path() / "calls.log";
  writeTool("count.mjs", "import { appendFileSync } from 'node:fs';\n"
                         "export default (a) => { appendFileSync(a.log, 'x\\n'); return { state_delta: { val: 42 } }; };");
  writeExperience(std::string(R"(name: cache
version: 0.1.0
state: { schema: { val: { type: number } } }
graph:
  nodes: [ { id: c, kind: tool, impl: ./tools/count.mjs, writes: [val], args: { log: ")") +
                  calls.string() + R"(" } } ]
  edges: []
)");
  auto first = runJson();
  auto second = runJson();
  EXPECT_EQ(second["final_state"]["val"], 42);
  EXPECT_EQ(readFile(calls), "x\n");  // the tool ran once
  // D4: editing the tool's code invalidates its cache entry.
  writeTool("count.mjs", "import { appendFileSync } from 'node:fs';\n"
                         "export default (a) => { appendFileSync(a.log, 'y\\n'); return { state_delta: { val: 43 } }; };");
  auto third = runJson();
  EXPECT_EQ(third["final_state"]["val"], 43);
  EXPECT_EQ(readFile(calls), "x\ny\n");
}

TEST_F(Scheduler, ResumeReadsArgsBackAndReplaysFinishedNodes) {
  writeTool("echo.mjs", "export default (a) => ({ state_delta: { x: a.name } });");
  writeExperience(R"(name: resume
version: 0.1.0
state: { schema: { x: { type: string } } }
graph:
  nodes: [ { id: p, kind: tool, impl: ./tools/echo.mjs } ]
  edges: []
)");
  auto first = runJson({"--args", R"({"name":"from-args"})"});
  auto r = oe({"resume", first["run_id"], "--experience", dir_.path().string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto resumed = nlohmann::json::parse(r.out);
  EXPECT_EQ(resumed["final_state"]["x"], "from-args");
  EXPECT_EQ(resumed["nodes"]["cached"], 1);
  EXPECT_NE(resumed["run_id"], first["run_id"]);
  auto evs = events(resumed["run_id"]);
  EXPECT_EQ(evs.front()["resumed_from"], first["run_id"]);
}

}  // namespace
}  // namespace oe::test

// `oe run --from NODE` and `--only NODE` (issue 3 item 5): the selected nodes execute, the rest
// is taken from the current state and the cache without executing it.
#include "oe_fixture.hpp"

namespace oe::test {
namespace {

class RerunFrom : public OeTest {
 protected:
  void SetUp() override {
    const std::string log = (dir_.path() / "calls.log").string();
    writeTool("a.mjs", "import { appendFileSync } from 'node:fs';\n"
                       "export default (x) => { appendFileSync(x.log, 'a\\n');"
                       " return { state_delta: { a: 1 }, edge_output: 'A' }; };");
    writeTool("b.mjs", "import { appendFileSync } from 'node:fs';\n"
                       "export default (x) => { appendFileSync(x.log, 'b\\n');"
                       " return { state_delta: { b: x._edge_inputs.a + 'B' } }; };");
    writeTool("c.mjs", "import { appendFileSync } from 'node:fs';\n"
                       "export default (x) => { appendFileSync(x.log, 'c\\n');"
                       " return { state_delta: { c: x._state.b + 'C' } }; };");
    writeTool("d.mjs", "import { appendFileSync } from 'node:fs';\n"
                       "export default (x) => { appendFileSync(x.log, 'd\\n');"
                       " return { state_delta: { d: 4 } }; };");
    writeExperience(R"(name: from
version: 0.1.0
state: { schema: { a: { type: number }, b: { type: string }, c: { type: string }, d: { type: number } } }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./tools/a.mjs, writes: [a] }
    - { id: b, kind: tool, impl: ./tools/b.mjs, writes: [b] }
    - { id: c, kind: tool, impl: ./tools/c.mjs, reads: [b], writes: [c] }
    - { id: d, kind: tool, impl: ./tools/d.mjs, writes: [d] }
  edges: [ { from: a, to: b }, { from: b, to: c } ]
)");
    log_ = dir_.path() / "calls.log";
    int code = -1;
    auto first = runJson({"--args", "{\"log\":\"" + log + "\"}"}, &code);
    ASSERT_EQ(code, 0) << last_stderr_;
    ASSERT_EQ(readFile(log_), "a\nd\nb\nc\n");  // Kahn order: a, d seed the queue
    std::filesystem::remove(log_);
    args_ = "{\"log\":\"" + log + "\"}";
  }
  std::filesystem::path log_;
  std::string args_;
};

TEST_F(RerunFrom, FromRunsTheNodeAndDownstreamWithUpstreamFromTheCache) {
  int code = -1;
  auto out = runJson({"--from", "b", "--args", args_}, &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(readFile(log_), "b\nc\n");  // a and d were not executed, b ran despite its cache entry
  EXPECT_EQ(out["nodes"]["ran"], 2);
  EXPECT_EQ(out["nodes"]["reused"], 2);
  EXPECT_EQ(out["final_state"]["b"], "AB");  // a's edge_output came from the cache
  EXPECT_EQ(out["final_state"]["c"], "ABC");
  auto evs = events(out["run_id"]);
  EXPECT_EQ(count(evs, "node.ready", "a"), 0u);
  EXPECT_EQ(count(evs, "node.started", "b"), 1u);
}

TEST_F(RerunFrom, OnlyRunsOneNodeAgainstTheCurrentState) {
  int code = -1;
  auto out = runJson({"--only", "c", "--args", args_}, &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(readFile(log_), "c\n");
  EXPECT_EQ(out["nodes"]["ran"], 1);
  EXPECT_EQ(out["final_state"]["c"], "ABC");
}

TEST_F(RerunFrom, UnknownNodeAndBothFlagsAreRefused) {
  auto r = oe({"run", dir_.path().string(), "--from", "nope"});
  EXPECT_EQ(r.exit_code, 2);  // a bad invocation, refused before the run (issue 10)
  EXPECT_NE(r.err.find("--from: no node \"nope\""), std::string::npos) << r.err;
  EXPECT_EQ(oe({"run", dir_.path().string(), "--from", "a", "--only", "b"}).exit_code, 2);
}

}  // namespace
}  // namespace oe::test

// Definition pinning (issue 3 item 4): a resume says which nodes changed since the run and
// re-runs only those and what their outputs reach.
#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using Pinning = OeTest;

constexpr std::string_view kYaml = R"(name: pin
version: 0.1.0
state: { schema: { a: { type: number }, b: { type: number }, c: { type: number } } }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./tools/a.mjs, writes: [a] }
    - { id: b, kind: tool, impl: ./tools/b.mjs, reads: [a], writes: [b] }
    - { id: c, kind: tool, impl: ./tools/c.mjs, writes: [c] }
  edges: [ { from: a, to: b } ]
)";

TEST_F(Pinning, ResumeNamesChangedNodesAndRerunsOnlyThem) {
  writeTool("a.mjs", "export default () => ({ state_delta: { a: 1 } });");
  writeTool("b.mjs", "export default (x) => ({ state_delta: { b: x._state.a + 1 } });");
  writeTool("c.mjs", "export default () => ({ state_delta: { c: 3 } });");
  writeExperience(kYaml);
  auto first = runJson();
  ASSERT_EQ(first["status"], "success") << last_stderr_;
  EXPECT_TRUE(std::filesystem::exists(dir_.path() / ".openexpertise" / "runs" /
                                      (first["run_id"].get<std::string>() + ".pin.json")));

  // Unchanged: resume replays everything and says so.
  auto same = oe({"resume", first["run_id"], "--experience", dir_.path().string(), "--json"});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.err.find("unchanged"), std::string::npos) << same.err;
  EXPECT_EQ(nlohmann::json::parse(same.out)["nodes"]["cached"], 3);

  // Edit b's code: only b is named, only b runs (a and c replay).
  writeTool("b.mjs", "export default (x) => ({ state_delta: { b: x._state.a + 100 } });");
  auto r = oe({"resume", first["run_id"], "--experience", dir_.path().string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto resumed = nlohmann::json::parse(r.out);
  EXPECT_EQ(resumed["definition_changes"]["changed"], nlohmann::json({"b"}));
  EXPECT_EQ(resumed["nodes"]["ran"], 1);
  EXPECT_EQ(resumed["nodes"]["cached"], 2);
  EXPECT_EQ(resumed["final_state"]["b"], 101);
  EXPECT_NE(r.err.find("changed: b"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace oe::test

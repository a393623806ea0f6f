// Definition pinning (issue 3 item 4): a resume says which nodes changed since the run and
// what it does with each: what had landed is kept, the rest runs with the new definition.
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

TEST_F(Pinning, ResumeNamesChangedNodesAndKeepsWhatHadLanded) {
  writeTool("a.mjs", "export default () => ({ state_delta: { a: 1 } });");
  writeTool("b.mjs", "export default (x) => ({ state_delta: { b: x._state.a + 1 } });");
  writeTool("c.mjs", "export default () => { throw new Error('c is broken'); };");
  writeExperience(kYaml);
  auto first = runJson();
  ASSERT_EQ(first["status"], "partial") << last_stderr_;
  const std::string run_id = first["run_id"];
  EXPECT_TRUE(std::filesystem::exists(dir_.path() / ".openexpertise" / "runs" /
                                      (run_id + ".pin.json")));

  // Edit b (which had landed) and fix c (which had failed). The resume says which changed and
  // what it does with each: b's write stays as it was, c runs with its new code.
  writeTool("b.mjs", "export default (x) => ({ state_delta: { b: x._state.a + 100 } });");
  writeTool("c.mjs", "export default () => ({ state_delta: { c: 3 } });");
  auto r = oe({"resume", run_id, "--experience", dir_.path().string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto resumed = nlohmann::json::parse(r.out);
  EXPECT_EQ(resumed["definition_changes"]["changed"], nlohmann::json({"b", "c"}));
  EXPECT_EQ(resumed["definition_changes"]["landed"], (nlohmann::json{{"b", 1}, {"c", 0}}));
  EXPECT_EQ(resumed["nodes"]["ran"], 1);
  EXPECT_EQ(resumed["nodes"]["cached"], 2);
  EXPECT_EQ(resumed["final_state"]["b"], 2);
  EXPECT_EQ(resumed["final_state"]["c"], 3);
  EXPECT_NE(r.err.find("changed: b, c"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("node \"b\" changed; its write that had landed is kept"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("oe run " + dir_.path().string() + " --from b"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("node \"c\" changed and nothing of it had landed: it runs with its new "
                       "definition"),
            std::string::npos)
      << r.err;

  // Unchanged since that resume: everything replays, and it says so.
  auto same =
      oe({"resume", resumed["run_id"], "--experience", dir_.path().string(), "--json"});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.err.find("unchanged"), std::string::npos) << same.err;
  EXPECT_EQ(nlohmann::json::parse(same.out)["nodes"]["cached"], 3);

  // What the note proposes: a new chain from b runs b's new code.
  auto again = runJson({"--from", "b"});
  EXPECT_EQ(again["final_state"]["b"], 101);
}

}  // namespace
}  // namespace oe::test

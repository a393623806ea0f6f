// `oe run` keeps the validated experience in .openexpertise/ and reuses it only while the YAML
// is byte for byte the same: an edit is parsed and checked again, with its diagnostics.
#include "oe_fixture.hpp"

namespace oe::test {
namespace {

constexpr std::string_view kSnapshotTool =
    "#!/bin/sh\ncat >/dev/null\necho '{\"state_delta\":{\"n\":1}}'\n";

constexpr std::string_view kSnapYaml = R"(name: snap
version: 0.1.0
state:
  schema:
    n: { type: number }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./tools/one.sh, writes: [n] }
  edges: []
)";

class SpecSnapshot : public OeTest {};

TEST_F(SpecSnapshot, ASecondRunReusesItAndAnEditIsCheckedAgain) {
  writeExecutable("tools/one.sh", kSnapshotTool);
  writeExperience(kSnapYaml);
  const auto snapshot = dir_.path() / ".openexpertise" / "experience.yaml.spec-snapshot";

  int code = -1;
  auto first = runJson({"--no-cache"}, &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(first["final_state"]["n"], 1);
  ASSERT_TRUE(std::filesystem::exists(snapshot));
  const auto written = std::filesystem::last_write_time(snapshot);

  auto second = runJson({"--no-cache"}, &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(second["final_state"]["n"], 1);
  EXPECT_EQ(second["nodes"]["ran"], 1);
  EXPECT_EQ(std::filesystem::last_write_time(snapshot), written) << "a hit does not rewrite it";

  // The same file with an edge to a node that does not exist: reported, not run.
  std::string broken(kSnapYaml);
  broken.replace(broken.find("edges: []"), 9, "edges:\n    - { from: a, to: ghost }");
  writeExperience(broken);
  auto r = oe({"run", dir_.path().string()});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.err.find("unknown node id \"ghost\""), std::string::npos) << r.err;

  // Back to the original text: runs again (from a fresh snapshot or the old one, either way).
  writeExperience(kSnapYaml);
  auto third = runJson({"--no-cache"}, &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(third["final_state"]["n"], 1);
}

}  // namespace
}  // namespace oe::test

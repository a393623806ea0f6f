// `oe validate` reports every problem at once with file:line:column (D8, D9).
#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using Validate = OeTest;

TEST_F(Validate, ValidExperiencePasses) {
  writeTool("ok.mjs", "export default () => ({ state_delta: {} });");
  writeExperience(R"(name: ok
version: 0.1.0
state: { schema: { x: { type: string } } }
graph:
  nodes: [ { id: a, kind: tool, impl: ./tools/ok.mjs, writes: [x] } ]
  edges: []
)");
  auto r = oe({"validate", dir_.path().string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("experience valid"), std::string::npos);
}

TEST_F(Validate, ReportsEveryErrorWithLineAndColumn) {
  writeExperience(R"(name: broken
version: 0.1.0
state:
  schema:
    x: { type: string }
graph:
  nodes:
    - id: a
      kind: tool
      impl: ./tools/a.mjs
      writes: [y]
    - id: b
      kind: no-such-kind
    - id: c
      kind: tool
  edges:
    - { from: a, to: ghost }
    - { from: a, to: c, when: '$.x == ' }
)");
  auto r = oe({"validate", dir_.path().string()});
  EXPECT_EQ(r.exit_code, 1);
  const std::string& e = r.err;
  // undeclared write on line 11, unknown kind on 13, missing impl for c (node at 14),
  // unknown edge target on 17, a broken expression on 18.
  EXPECT_NE(e.find("writes undeclared state field \"y\""), std::string::npos) << e;
  EXPECT_NE(e.find("experience.yaml:11:"), std::string::npos) << e;
  EXPECT_NE(e.find("no-such-kind"), std::string::npos) << e;
  EXPECT_NE(e.find("experience.yaml:13:"), std::string::npos) << e;
  EXPECT_NE(e.find("impl"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown node id \"ghost\""), std::string::npos) << e;
  EXPECT_NE(e.find("experience.yaml:17:"), std::string::npos) << e;
  EXPECT_NE(e.find("experience.yaml:18:"), std::string::npos) << e;
  EXPECT_NE(e.find("node \"a\""), std::string::npos) << e;
}

TEST_F(Validate, YamlSyntaxErrorHasLineAndColumn) {
  writeExperience("name: x\nversion: 0.1.0\nstate: { schema: {}\ngraph: [\n");
  auto r = oe({"validate", dir_.path().string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("YAML parse error at line"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("column"), std::string::npos) << r.err;
}

TEST_F(Validate, MissingFileSaysWhatToPass) {
  auto r = oe({"validate", (dir_.path() / "nowhere").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("experience.yaml not found at"), std::string::npos) << r.err;
}

TEST_F(Validate, CycleIsReported) {
  writeTool("ok.mjs", "export default () => ({ state_delta: {} });");
  writeExperience(R"(name: cyc
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./tools/ok.mjs }
    - { id: b, kind: tool, impl: ./tools/ok.mjs }
  edges: [ { from: a, to: b }, { from: b, to: a } ]
)");
  auto r = oe({"validate", dir_.path().string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cycle"), std::string::npos) << r.err;
}

TEST_F(Validate, UnknownKeyWarnsWithSuggestionAndFailsUnderStrict) {
  writeTool("ok.mjs", "export default () => ({ state_delta: {} });");
  writeExperience(R"(name: typo
version: 0.1.0
state: { schema: {} }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./tools/ok.mjs, wirtes: [] }
  edges: []
)");
  auto r = oe({"validate", dir_.path().string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("writes"), std::string::npos) << r.err;
  auto strict = oe({"validate", dir_.path().string(), "--strict"});
  EXPECT_EQ(strict.exit_code, 1);
}

TEST_F(Validate, ExamplesValidate) {
  for (const char* name : {"hello-tool", "python-tool"}) {
    auto path = std::filesystem::path(OE_SOURCE_DIR) / "examples" / name;
    if (!std::filesystem::exists(path)) {
      continue;
    }
    auto r = oe({"validate", path.string()});
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
  }
}

}  // namespace
}  // namespace oe::test

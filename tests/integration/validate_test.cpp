// `oe validate` reports every problem at once with file:line:column (D8, D9).
#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using Validate = OeTest;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // their shadow memory needs terabytes of address space
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// `oe <args>` with at most 1 GiB of address space (prlimit), so that a document that makes oe
// build gigabytes ends in std::bad_alloc and SIGABRT instead of swapping the machine.
ProcessResult oeLimited(const std::filesystem::path& dir, std::vector<std::string> args) {
  args.insert(args.begin(), OE_EXE);
  if (!kSanitized) {
    args.insert(args.begin(), {"prlimit", "--as=1073741824", "--"});
  }
  return runProcess(args, {{"OE_PLUGIN_PATH", ""}}, dir);
}

// 8 levels of 9 aliases: 9^9 strings, gigabytes once expanded (issue 10, item 3).
std::string aliasBomb() {
  std::string text = "name: bomb\nversion: 0.1.0\nstate: {schema: {}}\n";
  text += "l0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 8; ++i) {
    text += "l" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 9; ++k) {
      text += (k == 0 ? "*a" : ", *a") + std::to_string(i - 1);
    }
    text += "]\n";
  }
  return text + "graph: {nodes: [], edges: []}\n";
}

TEST_F(Validate, AliasBombIsRefusedNotFatal) {
  writeExperience(aliasBomb());
  for (const char* command : {"validate", "run"}) {
    auto r = oeLimited(dir_.path(), {command, dir_.path().string()});
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.err;  // not 134 (SIGABRT)
    EXPECT_NE(r.err.find("experience.yaml:9:5: error: alias expansion exceeds 1000000 nodes"),
              std::string::npos)
        << command << ": " << r.err;
  }
}

TEST_F(Validate, DeepNestingIsRefusedNotFatal) {
  for (const char* open : {"[", "{a: ", "- "}) {
    std::string text = "name: deep\nversion: 0.1.0\nstate:\n  ";
    for (int i = 0; i < 100000; ++i) {
      text += open;
    }
    writeExperience(text + "x\n");
    for (const char* command : {"validate", "run"}) {
      auto r = oeLimited(dir_.path(), {command, dir_.path().string()});
      EXPECT_EQ(r.exit_code, 1) << command << " " << open << ": " << r.err;
      EXPECT_NE(r.err.find("experience.yaml:4:"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("more than 128 levels deep"), std::string::npos)
          << command << " " << open << ": " << r.err;
    }
  }
}

TEST_F(Validate, OversizedFileIsRefusedUnread) {
  std::string text = "name: big\nversion: 0.1.0\nstate: {schema: {}}\n"
                     "graph: {nodes: [], edges: []}\ndescription: ";
  text += std::string((size_t{16} << 20) + 1, 'x');
  writeExperience(text + "\n");
  for (const char* command : {"validate", "run"}) {
    auto r = oeLimited(dir_.path(), {command, dir_.path().string()});
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.err;
    EXPECT_NE(r.err.find("oe reads experience files of at most 16 MiB"), std::string::npos)
        << command << ": " << r.err;
  }
}

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
  // file:line:column once, in front; the message does not repeat the position.
  EXPECT_NE(r.err.find("experience.yaml:4:1: error: YAML parse error: "), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("line 4"), std::string::npos) << r.err;
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

// `oe init` through the binary: each template scaffolds a folder that `oe validate` accepts and
// `oe run` completes as it is (the LLM templates from their shipped recording, cli-agent with the
// scripted stand-in CLI first on PATH); and the refusals: no name, a non-empty folder, an
// unknown template.
#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class InitCli : public OeTest {
 protected:
  // No provider configured: a template that needs a key would fail here.
  std::map<std::string, std::string> offline(std::string path = "") {
    if (path.empty()) {
      const char* env = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): read only
      path = env != nullptr ? env : "/usr/bin:/bin";
    }
    return {{"PATH", path},          {"OPENAI_API_KEY", ""},     {"ANTHROPIC_API_KEY", ""},
            {"OPENAI_BASE_URL", ""}, {"ANTHROPIC_BASE_URL", ""}, {"OE_SCRIPTED_CLI_ANSWERS", ""}};
  }

  fs::path init(const std::string& name, const std::string& template_name) {
    auto r = oe({"init", name, "--template", template_name});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("created " + name), std::string::npos) << r.out;
    const fs::path folder = dir_.path() / name;
    for (const char* part : {"experience.yaml", "README.md", "package.json", "tools", "prompts"}) {
      EXPECT_TRUE(fs::exists(folder / part)) << template_name << ": " << part;
    }
    EXPECT_NE(readFile(folder / "experience.yaml").find("name: " + name + "\n"), std::string::npos);
    EXPECT_EQ(readFile(folder / "experience.yaml").find("__NAME__"), std::string::npos);
    EXPECT_EQ(json::parse(readFile(folder / "package.json"))["name"], name);
    return folder;
  }

  json runJson(const fs::path& folder, std::vector<std::string> extra,
               const std::map<std::string, std::string>& env) {
    std::vector<std::string> args = {"run", folder.string(), "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = oe(args, env);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    auto parsed = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << r.out << r.err;
    return parsed;
  }

  void expectValid(const fs::path& folder, const std::map<std::string, std::string>& env) {
    auto r = oe({"validate", folder.string()}, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("experience valid"), std::string::npos) << r.out;
  }
};

TEST_F(InitCli, ListsTheTemplates) {
  auto r = oe({"init", "--list-templates"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"tool-only  ", "agent  ", "cli-agent  ", "full-pipeline  "}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << r.out;
  }
}

TEST_F(InitCli, ToolOnlyIsTheDefaultAndRuns) {
  auto r = oe({"init", "first"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path folder = dir_.path() / "first";
  EXPECT_NE(readFile(folder / "experience.yaml").find("kind: tool"), std::string::npos);
  expectValid(folder, offline());
  const json out = runJson(folder, {}, offline());
  EXPECT_EQ(out["status"], "success");
  EXPECT_EQ(out["final_state"]["greeting"], "hello, World");
}

TEST_F(InitCli, AgentRunsFromItsRecording) {
  const fs::path folder = init("my-agent", "agent");
  EXPECT_NE(readFile(folder / "README.md").find("oe run . --llm-replay llm-recording.jsonl"),
            std::string::npos);
  expectValid(folder, offline());
  const json out =
      runJson(folder, {"--llm-replay", (folder / "llm-recording.jsonl").string()}, offline());
  EXPECT_EQ(out["status"], "success");
  EXPECT_FALSE(out["final_state"]["summary"].get<std::string>().empty());
}

TEST_F(InitCli, FullPipelineRunsFromItsRecording) {
  const fs::path folder = init("pipeline", "full-pipeline");
  EXPECT_NE(readFile(folder / "README.md").find("oe run . --llm-replay llm-recording.jsonl"),
            std::string::npos);
  expectValid(folder, offline());
  const json out =
      runJson(folder, {"--llm-replay", (folder / "llm-recording.jsonl").string()}, offline());
  EXPECT_EQ(out["status"], "success");
  EXPECT_EQ(out["final_state"]["ideas"].size(), 3U);
  EXPECT_EQ(out["final_state"]["verdicts"].size(), 3U);
  EXPECT_NE(out["final_state"]["report"].get<std::string>().find("# Verdicts"), std::string::npos);
  // Its graph draws, phases and all.
  auto graph = oe({"graph", folder.string()});
  ASSERT_EQ(graph.exit_code, 0) << graph.err;
  EXPECT_NE(graph.out.find("  subgraph phase_collect[\"Collect\"]\n"), std::string::npos)
      << graph.out;
  EXPECT_NE(graph.out.find("load_ideas -->|\"for_each $.ideas\"| judge"), std::string::npos);
}

TEST_F(InitCli, CliAgentWarnsWithoutACliAndRunsWithAStandIn) {
  const fs::path folder = init("cli", "cli-agent");
  EXPECT_NE(readFile(folder / "README.md").find("It needs a coding CLI"), std::string::npos);
  // Without `claude` on PATH: valid, with a warning that names it.
  auto bare = oe({"validate", folder.string()}, offline("/usr/bin:/bin"));
  EXPECT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_NE(bare.err.find("claude"), std::string::npos) << bare.err;
  // With examples/scripted_cli.py standing in for claude.
  const fs::path fake = dir_.path() / "fake-cli";
  fs::create_directories(fake);
  fs::create_symlink(fs::path(OE_SOURCE_DIR) / "examples" / "scripted_cli.py", fake / "claude");
  dir_.write(
      "answers.json",
      R"([{"cli": "claude", "match": "Topic: hermetic tests", "text": "Hermetic tests own their world."}])");
  auto env = offline(fake.string() + ":" + offline()["PATH"]);
  env["OE_SCRIPTED_CLI_ANSWERS"] = (dir_.path() / "answers.json").string();
  expectValid(folder, env);
  const json out = runJson(folder, {}, env);
  EXPECT_EQ(out["status"], "success");
  EXPECT_EQ(out["final_state"]["summary"], "Hermetic tests own their world.");
}

TEST_F(InitCli, NoNameIsAMissingArgument) {
  // A usage error, exit 2, as every other bad invocation (README "Exit codes").
  auto r = oe({"init"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing required argument: name"), std::string::npos) << r.err;
  auto with_template = oe({"init", "--template", "agent"});
  EXPECT_EQ(with_template.exit_code, 2);
}

TEST_F(InitCli, ANonEmptyFolderIsRefusedAndLeftAlone) {
  dir_.write("taken/notes.txt", "mine");
  auto r = oe({"init", "taken"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("taken already exists and is not empty"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_.path() / "taken" / "experience.yaml"));
  EXPECT_EQ(readFile(dir_.path() / "taken" / "notes.txt"), "mine");
  // An empty one is fine.
  fs::create_directories(dir_.path() / "empty");
  EXPECT_EQ(oe({"init", "empty"}).exit_code, 0);
}

TEST_F(InitCli, AnUnknownTemplateOrNameIsABadInvocation) {
  auto r = oe({"init", "x", "--template", "nope"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no template \"nope\"; the templates are agent, cli-agent, full-pipeline, "
                       "tool-only"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_.path() / "x"));
  auto bad_name = oe({"init", "a b"});
  EXPECT_EQ(bad_name.exit_code, 2);
  EXPECT_FALSE(fs::exists(dir_.path() / "a b"));
}

}  // namespace
}  // namespace oe::test

// The cli-agent examples run offline (their scripted stand-in CLIs first on PATH, their LLM
// recording when they have agents) and end in the state upstream's e2e tests assert for the
// examples of the same name (reference §11.1).
#include <algorithm>
#include <cstdlib>

#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using nlohmann::json;

struct CliCall {
  std::string cli;
  std::string prompt;
};

class ExamplesCliTest : public OeTest {
 protected:
  // Copies examples/<name> into the temp dir (the fake-cli symlinks become copies of the
  // stand-in script, which finds its answers next to its own folder) and runs it with that
  // fake-cli/ first on PATH, no provider configured and, when the example ships one, its LLM
  // recording.
  json run(const std::string& name, int* exit_code) {
    const auto source = std::filesystem::path(OE_SOURCE_DIR) / "examples" / name;
    for (const auto& entry : std::filesystem::directory_iterator(source)) {
      if (entry.path().filename() != ".openexpertise") {
        std::filesystem::copy(entry.path(), dir_.path() / entry.path().filename(),
                              std::filesystem::copy_options::recursive);
      }
    }
    std::vector<std::string> args = {"run", dir_.path().string(), "--json"};
    if (std::filesystem::exists(dir_.path() / "llm-recording.jsonl")) {
      args.insert(args.end(), {"--llm-replay", (dir_.path() / "llm-recording.jsonl").string()});
    }
    const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): read only
    auto r = oe(args, {{"PATH", (dir_.path() / "fake-cli").string() + ":" +
                                    (path != nullptr ? path : "/usr/bin:/bin")},
                       {"OE_SCRIPTED_CLI_LOG", (dir_.path() / "cli-calls.jsonl").string()},
                       {"OE_SCRIPTED_CLI_ANSWERS", ""},
                       {"OPENAI_API_KEY", ""},
                       {"ANTHROPIC_API_KEY", ""},
                       {"OPENAI_BASE_URL", ""},
                       {"ANTHROPIC_BASE_URL", ""}});
    *exit_code = r.exit_code;
    last_stderr_ = r.err;
    auto parsed = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << r.out << r.err;
    return parsed;
  }

  // The stand-ins' log: one entry per CLI run, in the order they started.
  std::vector<CliCall> calls() {
    std::vector<CliCall> out;
    std::ifstream in(dir_.path() / "cli-calls.jsonl");
    for (std::string line; std::getline(in, line);) {
      const json call = json::parse(line);
      out.push_back({call["cli"].get<std::string>(), call["prompt"].get<std::string>()});
    }
    return out;
  }

  static bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  }
};

// Upstream's e2e: the CLIs run in the order claude, codex, gemini; codex's prompt holds
// claude's summary, gemini's holds the summary and codex's critique; the verdict starts "No".
TEST_F(ExamplesCliTest, TriCliOrchestration) {
  int code = -1;
  json out = run("tri-cli-orchestration", &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["status"], "success");
  const json& state = out["final_state"];
  const auto summary = state["summary"].get<std::string>();
  const auto critique = state["critique"].get<std::string>();
  const auto verdict = state["verdict"].get<std::string>();
  EXPECT_GT(summary.size(), 50U);
  EXPECT_GT(critique.size(), 50U);
  EXPECT_GT(verdict.size(), 20U);
  EXPECT_EQ(verdict.rfind("No", 0), 0U) << verdict;

  const auto cli_calls = calls();
  ASSERT_EQ(cli_calls.size(), 3U);
  EXPECT_EQ(cli_calls[0].cli, "claude");
  EXPECT_EQ(cli_calls[1].cli, "codex");
  EXPECT_EQ(cli_calls[2].cli, "gemini");
  // The topic is the summarize node's own arg; it is not in state.
  EXPECT_TRUE(contains(cli_calls[0].prompt, "Topic: Rate limiting for public HTTP APIs"))
      << cli_calls[0].prompt;
  EXPECT_FALSE(state.contains("topic"));
  EXPECT_TRUE(contains(cli_calls[1].prompt, summary)) << cli_calls[1].prompt;
  EXPECT_TRUE(contains(cli_calls[2].prompt, summary)) << cli_calls[2].prompt;
  EXPECT_TRUE(contains(cli_calls[2].prompt, critique)) << cli_calls[2].prompt;
}

// Upstream's cli-agent e2e: two CLIs in sequence, text answers stored as they are, the summary
// interpolated into codex's prompt.
TEST_F(ExamplesCliTest, CliOrchestration) {
  int code = -1;
  json out = run("cli-orchestration", &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["status"], "success");
  const json& state = out["final_state"];
  EXPECT_EQ(state["topic"], "Write-ahead logging in SQLite");
  const auto summary = state["summary"].get<std::string>();
  EXPECT_EQ(summary.rfind("In write-ahead logging mode SQLite appends changes", 0), 0U) << summary;
  EXPECT_EQ(state["critique"].get<std::string>().rfind("The summary never says", 0), 0U);

  const auto cli_calls = calls();
  ASSERT_EQ(cli_calls.size(), 2U);
  EXPECT_EQ(cli_calls[0].cli, "claude");
  EXPECT_TRUE(contains(cli_calls[0].prompt, "Topic: Write-ahead logging in SQLite"));
  EXPECT_EQ(cli_calls[1].cli, "codex");
  EXPECT_TRUE(contains(cli_calls[1].prompt, summary)) << cli_calls[1].prompt;
}

// Upstream's e2e: one licence issue, breaking changes, a coverage regression, one security
// finding (Claude's JSON, unwrapped from its envelope and fence), a no-release decision.
TEST_F(ExamplesCliTest, ReleaseGates) {
  int code = -1;
  json out = run("release-gates", &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["status"], "success");
  const json& state = out["final_state"];
  ASSERT_EQ(state["license_issues"].size(), 1U);
  EXPECT_EQ(state["license_issues"][0]["package"], "pdf-render-pro");
  EXPECT_EQ(state["breaking_changes"].size(), 1U);  // only the unreleased section's
  EXPECT_EQ(state["coverage_delta"]["regression"], true);
  EXPECT_EQ(state["coverage_delta"]["delta"], -2.5);
  ASSERT_EQ(state["security_findings"].size(), 1U);
  EXPECT_EQ(state["security_findings"][0]["severity"], "high");
  EXPECT_EQ(state["decision"]["ready_to_release"], false);
  EXPECT_FALSE(state["decision"]["blocking_issues"].empty());
  EXPECT_EQ(out["usage"]["llm_calls"], 1);

  const auto cli_calls = calls();
  ASSERT_EQ(cli_calls.size(), 1U);
  EXPECT_EQ(cli_calls[0].cli, "claude");
}

// Upstream's e2e: one sub-question per researcher, two findings, the two URLs cited, and a
// cross-referenced summary with key findings and open questions.
TEST_F(ExamplesCliTest, DeepResearch) {
  int code = -1;
  json out = run("deep-research", &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["status"], "success");
  const json& state = out["final_state"];
  EXPECT_TRUE(state["clarified_question"].is_string());
  EXPECT_EQ(state["claude_subqs"].size(), 1U);
  EXPECT_EQ(state["gemini_subqs"].size(), 1U);
  EXPECT_EQ(state["raw_findings"].size(), 2U);
  EXPECT_EQ(state["citations"],
            json({"https://example.org/research/in-process-vs-redis-latency",
                  "https://example.org/research/per-instance-cache-consistency"}));
  const json& summary = state["cross_referenced"];
  EXPECT_FALSE(summary["executive_summary"].get<std::string>().empty());
  EXPECT_FALSE(summary["key_findings"].empty());
  EXPECT_FALSE(summary["open_questions"].empty());
  EXPECT_EQ(out["usage"]["llm_calls"], 3);

  auto cli_calls = calls();
  ASSERT_EQ(cli_calls.size(), 2U);
  std::sort(cli_calls.begin(), cli_calls.end(),
            [](const CliCall& a, const CliCall& b) { return a.cli < b.cli; });  // run in parallel
  EXPECT_EQ(cli_calls[0].cli, "claude");
  EXPECT_TRUE(contains(cli_calls[0].prompt, "Research sub-question c1")) << cli_calls[0].prompt;
  EXPECT_EQ(cli_calls[1].cli, "gemini");
  EXPECT_TRUE(contains(cli_calls[1].prompt, "g1")) << cli_calls[1].prompt;
}

// Upstream's e2e: the tests fail at first, two hypotheses each checked by Claude Code, h1
// supported, a fix proposed, and the re-run still failing (the stand-in edits nothing).
TEST_F(ExamplesCliTest, SystematicDebugging) {
  int code = -1;
  json out = run("systematic-debugging", &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["status"], "success");
  const json& state = out["final_state"];
  EXPECT_NE(state["symptoms"]["exit_code"], 0);
  EXPECT_EQ(state["hypotheses"].size(), 2U);
  ASSERT_EQ(state["check_results"].size(), 2U);
  EXPECT_EQ(state["check_results"][0]["hypothesis_id"], "h1");  // item order (deterministic)
  EXPECT_EQ(state["check_results"][0]["verdict"], "supported");
  EXPECT_EQ(state["diagnosis"]["supported_hypothesis_id"], "h1");
  EXPECT_FALSE(state["fix_proposal"].get<std::string>().empty());
  EXPECT_EQ(state["verification_status"], "failed");
  EXPECT_EQ(out["usage"]["llm_calls"], 2);

  const auto cli_calls = calls();
  ASSERT_EQ(cli_calls.size(), 3U);
  EXPECT_TRUE(contains(cli_calls[2].prompt, "has been diagnosed")) << cli_calls[2].prompt;
  EXPECT_TRUE(contains(cli_calls[2].prompt, "size > MAX_PAGE_SIZE")) << cli_calls[2].prompt;
}

// Upstream's e2e: 3 angles, 15 ideas, 3 clusters, one critique per cluster, 3 picks and 3 to 5
// next actions.
TEST_F(ExamplesCliTest, Brainstorming) {
  int code = -1;
  json out = run("brainstorming", &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["status"], "success");
  const json& state = out["final_state"];
  EXPECT_FALSE(state["topic"].get<std::string>().empty());
  EXPECT_EQ(state["angles"].size(), 3U);
  ASSERT_EQ(state["raw_ideas"].size(), 15U);
  EXPECT_EQ(state["raw_ideas"][0]["angle"], "newcomer");  // item order (deterministic)
  EXPECT_EQ(state["raw_ideas"][14]["angle"], "skeptic");
  EXPECT_EQ(state["clusters"].size(), 3U);
  EXPECT_EQ(state["critiques"].size(), state["clusters"].size());
  const json& picks = state["picks"];
  EXPECT_EQ(picks["top_3"].size(), 3U);
  EXPECT_FALSE(picks["reasoning"].get<std::string>().empty());
  EXPECT_GE(picks["next_actions"].size(), 3U);
  EXPECT_LE(picks["next_actions"].size(), 5U);
  EXPECT_EQ(out["usage"]["llm_calls"], 2);
  EXPECT_EQ(calls().size(), 6U);  // 3 angles, then 3 clusters
}

}  // namespace
}  // namespace oe::test

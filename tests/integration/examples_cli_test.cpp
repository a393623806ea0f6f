// The cli-agent examples end in the state upstream's e2e tests assert for the examples of the
// same name (reference §11.1): live, with their scripted stand-in CLIs first on PATH and their
// agents answered over HTTP, and offline, from their shipped recording alone (no CLI, no key).
#include <algorithm>
#include <cstdlib>

#include "oe_fixture.hpp"
#include "support/fake_llm_server.hpp"

namespace oe::test {
namespace {

using nlohmann::json;

struct CliCall {
  std::string cli;
  std::string prompt;
};

// examples/scripted_llm.py's answers over HTTP: the first entry whose `match` is in the last
// user message answers, as text or as a structured_output tool call, with its usage.
FakeResponse scriptedAnswer(const json& answers, const RecordedRequest& request) {
  const json body = request.json();
  std::string prompt;
  for (const json& message : body.value("messages", json::array())) {
    if (message.value("role", "") == "user" && message["content"].is_string()) {
      prompt = message["content"].get<std::string>();
    }
  }
  for (const json& answer : answers) {
    if (prompt.find(answer["match"].get<std::string>()) == std::string::npos) {
      continue;
    }
    json message = {{"role", "assistant"}};
    std::string finish = "stop";
    std::string out;
    if (answer.contains("tool")) {
      out = answer["tool"]["input"].dump();
      message["content"] = nullptr;
      message["tool_calls"] = {
          {{"id", "call_1"},
           {"type", "function"},
           {"function", {{"name", answer["tool"]["name"]}, {"arguments", out}}}}};
      finish = "tool_calls";
    } else {
      out = answer["text"].get<std::string>();
      message["content"] = out;
    }
    return FakeLlmServer::json(
        200, {{"id", "chatcmpl-scripted"},
              {"object", "chat.completion"},
              {"model", body.value("model", "")},
              {"choices", {{{"index", 0}, {"message", message}, {"finish_reason", finish}}}},
              {"usage",
               {{"prompt_tokens", std::max<size_t>(1, prompt.size() / 4)},
                {"completion_tokens", std::max<size_t>(1, out.size() / 4)}}}});
  }
  return FakeLlmServer::json(400, {{"error", {{"message", "no scripted answer for: " + prompt}}}});
}

class ExamplesCliTest : public OeTest {
 protected:
  // Runs examples/<name> twice, each time in a copy of its own (the fake-cli symlinks become
  // copies of the stand-in script, which finds its answers next to its own folder):
  //  - live: its stand-in CLIs first on PATH, logging each run, and its agents answered over
  //    HTTP from its scripted-answers.json, as examples/record.sh made the recording;
  //  - offline: from its shipped llm-recording.jsonl alone (--llm-replay), with no stand-in on
  //    PATH and no provider: it must end in the same state, and no CLI may run.
  // `unordered`: array fields that parallel nodes fill in completion order (compared as sets).
  // Returns the live run's summary.
  json run(const std::string& name, int* exit_code,
           const std::vector<std::string>& unordered = {}) {
    const auto source = std::filesystem::path(OE_SOURCE_DIR) / "examples" / name;
    const auto live = dir_.path() / "live";
    const auto offline = dir_.path() / "offline";
    for (const auto& copy : {live, offline}) {
      std::filesystem::create_directories(copy);
      for (const auto& entry : std::filesystem::directory_iterator(source)) {
        if (entry.path().filename() != ".openexpertise") {
          std::filesystem::copy(entry.path(), copy / entry.path().filename(),
                                std::filesystem::copy_options::recursive);
        }
      }
    }
    const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): read only
    const std::string system_path = path != nullptr ? path : "/usr/bin:/bin";
    std::map<std::string, std::string> env = {
        {"PATH", (live / "fake-cli").string() + ":" + system_path},
        {"OE_SCRIPTED_CLI_LOG", (dir_.path() / "cli-calls.jsonl").string()},
        {"OE_SCRIPTED_CLI_ANSWERS", ""},
        {"OPENAI_API_KEY", ""},
        {"ANTHROPIC_API_KEY", ""},
        {"OPENAI_BASE_URL", ""},
        {"ANTHROPIC_BASE_URL", ""}};
    if (std::filesystem::exists(live / "scripted-answers.json")) {
      std::ifstream in(live / "scripted-answers.json");
      server_.setHandler([answers = json::parse(in)](const RecordedRequest& request) {
        return scriptedAnswer(answers, request);
      });
      env["OPENAI_BASE_URL"] = server_.baseUrl() + "/v1";
      env["OPENAI_API_KEY"] = "none";
    }
    auto r = oe({"run", live.string(), "--json"}, env);
    *exit_code = r.exit_code;
    last_stderr_ = r.err;
    auto parsed = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << r.out << r.err;

    const size_t live_calls = calls().size();
    auto replayed = oe({"run", offline.string(), "--json", "--llm-replay",
                        (offline / "llm-recording.jsonl").string()},
                       {{"PATH", system_path},
                        {"OE_SCRIPTED_CLI_LOG", (dir_.path() / "cli-calls.jsonl").string()},
                        {"OE_SCRIPTED_CLI_ANSWERS", ""},
                        {"OPENAI_API_KEY", ""},
                        {"ANTHROPIC_API_KEY", ""},
                        {"OPENAI_BASE_URL", ""},
                        {"ANTHROPIC_BASE_URL", ""}});
    EXPECT_EQ(replayed.exit_code, 0) << replayed.err;
    auto offline_out = json::parse(replayed.out, nullptr, false);
    EXPECT_FALSE(offline_out.is_discarded()) << replayed.out << replayed.err;
    if (!parsed.is_discarded() && !offline_out.is_discarded()) {
      json live_state = parsed["final_state"];
      json offline_state = offline_out["final_state"];
      for (const std::string& field : unordered) {
        for (json* state : {&live_state, &offline_state}) {
          if (state->contains(field) && (*state)[field].is_array()) {
            std::sort((*state)[field].begin(), (*state)[field].end(),
                      [](const json& a, const json& b) { return a.dump() < b.dump(); });
          }
        }
      }
      EXPECT_EQ(offline_state, live_state)
          << "the shipped recording does not replay to the live run's state: re-record it "
             "with `bash examples/record.sh "
          << name << "`";
    }
    EXPECT_EQ(calls().size(), live_calls) << "a CLI ran during the offline replay";
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

  FakeLlmServer server_;
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
  // The run's usage counts the agents' calls and the CLI runs that report usage (Claude's
  // envelope does; Gemini's text output does not).
  EXPECT_EQ(out["usage"]["llm_calls"], 1 + 1);

  const auto cli_calls = calls();
  ASSERT_EQ(cli_calls.size(), 1U);
  EXPECT_EQ(cli_calls[0].cli, "claude");
}

// Upstream's e2e: one sub-question per researcher, two findings, the two URLs cited, and a
// cross-referenced summary with key findings and open questions.
TEST_F(ExamplesCliTest, DeepResearch) {
  int code = -1;
  json out = run("deep-research", &code, {"raw_findings"});
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
  // The run's usage counts the agents' calls and the CLI runs that report usage (Claude's
  // envelope does; Gemini's text output does not).
  EXPECT_EQ(out["usage"]["llm_calls"], 3 + 1);

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
  // The run's usage counts the agents' calls and the CLI runs that report usage (Claude's
  // envelope does; Gemini's text output does not).
  EXPECT_EQ(out["usage"]["llm_calls"], 2 + 2);

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
  // The run's usage counts the agents' calls and the CLI runs that report usage (Claude's
  // envelope does; Gemini's text output does not).
  EXPECT_EQ(out["usage"]["llm_calls"], 2 + 6);
  EXPECT_EQ(calls().size(), 6U);  // 3 angles, then 3 clusters
}

}  // namespace
}  // namespace oe::test

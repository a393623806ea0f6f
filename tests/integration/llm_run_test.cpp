// LLM runs end to end (issue 4): the real `oe` binary, the agent and openai-llm plugins, the
// host's HTTP client and a real local server speaking the OpenAI protocol. Rate limits measured
// by the server, budgets that stop before the limit, record and replay, schema repair, and the
// host's prompt values as the agent and skill kinds receive them.
#include <set>

#include "oe_fixture.hpp"
#include "support/fake_llm_server.hpp"

namespace oe::test {
namespace {

using nlohmann::json;

class LlmRunTest : public OeTest {
 protected:
  // The environment of a run against the fake server: only OPENAI_* set, fast retries.
  std::map<std::string, std::string> serverEnv() { return openAiServerEnv(server_); }
  json run(std::vector<std::string> extra, const std::map<std::string, std::string>& env,
           int* exit_code = nullptr, const std::string& command = "run") {
    std::vector<std::string> args = {command};
    if (command == "run") {
      args.push_back(dir_.path().string());
    }
    args.push_back("--json");
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = oe(args, env);
    if (exit_code != nullptr) {
      *exit_code = r.exit_code;
    }
    last_stderr_ = r.err;
    auto parsed = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << "stdout: " << r.out << "\nstderr: " << r.err;
    return parsed;
  }
  // The user message of an OpenAI request.
  static std::string userText(const RecordedRequest& request) {
    const json body = request.json();
    for (const auto& m : body["messages"]) {
      if (m["role"] == "user") {
        return m["content"].get<std::string>();
      }
    }
    return {};
  }

  FakeLlmServer server_;
};

// `count` agent nodes a0..a<count-1>, each writing its own field; optional chain edges.
std::string agentsYaml(int count, bool chain, const std::string& runtime, int max_tokens = 0) {
  std::string yaml = "name: agents\nversion: 0.1.0\nstate:\n  schema:\n";
  for (int i = 0; i < count; ++i) {
    yaml += "    out" + std::to_string(i) + ": {type: string}\n";
  }
  yaml += "graph:\n  nodes:\n";
  for (int i = 0; i < count; ++i) {
    yaml += "    - {id: a" + std::to_string(i) + ", kind: agent, prompt: prompts/p.md, writes: [out" +
            std::to_string(i) + "], args: {n: " + std::to_string(i) + "}";
    if (max_tokens > 0) {
      yaml += ", max_tokens: " + std::to_string(max_tokens);
    }
    yaml += "}\n";
  }
  yaml += "  edges:";
  if (!chain || count < 2) {
    yaml += " []\n";
  } else {
    yaml += "\n";
    for (int i = 1; i < count; ++i) {
      yaml += "    - {from: a" + std::to_string(i - 1) + ", to: a" + std::to_string(i) + "}\n";
    }
  }
  return yaml + runtime;
}

TEST_F(LlmRunTest, FanOutOf500AgentsNeverHasMoreThanMaxInFlightRequests) {
  // 32 nodes are dispatched at once; runtime.limits must keep the run at 5 requests in flight.
  // The server accepts everything and records the peak it saw, so only the host's limiter can
  // keep the peak at 5 (each answer is held 10 ms, so unlimited callers would overlap).
  server_.setHandler([](const RecordedRequest&) {
    return FakeLlmServer::delayed(FakeLlmServer::openAiText("ok"), std::chrono::milliseconds(10));
  });
  dir_.write("prompts/p.md", "item {{n}}");
  writeExperience(agentsYaml(
      500, false, "runtime:\n  concurrency: 32\n  limits:\n    openai: {max_in_flight: 5}\n"));
  int code = -1;
  json out = run({"-q"}, serverEnv(), &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["status"], "success");
  EXPECT_EQ(out["nodes"]["failed"], 0);
  EXPECT_EQ(out["nodes"]["ran"], 500);
  EXPECT_EQ(out["final_state"]["out499"], "ok");
  EXPECT_EQ(server_.requestCount(), 500U);
  EXPECT_LE(server_.peakInFlight(), 5U);
  EXPECT_EQ(out["usage"]["llm_calls"], 500);
  EXPECT_EQ(out["usage"]["input_tokens"], 500 * 7);
}

TEST_F(LlmRunTest, BudgetStopsBeforeTheLimitAndResumeContinuesWithALargerOne) {
  // Each call: prompt "hi" (2 bytes), max_tokens 20 -> reserves 16 + 8 + 2 + 20 = 46 tokens;
  // the server reports 7 + 3 = 10 used. Budget 60: two calls fit (10 + 46 <= 60), the third
  // would not (20 + 46 > 60).
  server_.setHandler([](const RecordedRequest&) { return FakeLlmServer::openAiText("ok", 7, 3); });
  dir_.write("prompts/p.md", "hi");
  writeExperience(agentsYaml(6, true, "runtime:\n  budget: {max_tokens: 60}\n", 20));
  int code = -1;
  json first = run({"-q"}, serverEnv(), &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(first["reason"], "budget_exhausted");
  EXPECT_EQ(server_.requests().size(), 2U);
  EXPECT_EQ(first["usage"]["input_tokens"].get<int>() + first["usage"]["output_tokens"].get<int>(),
            20);
  EXPECT_EQ(first["final_state"]["out1"], "ok");
  EXPECT_FALSE(first["final_state"].contains("out2"));
  const std::string run_id = first["run_id"];
  auto evs = events(run_id);
  EXPECT_EQ(count(evs, "node.tokens"), 2U);
  EXPECT_EQ(count(evs, "node.failed", "a2"), 1U);
  EXPECT_EQ(count(evs, "node.started", "a3"), 0U);  // nothing starts after the stop
  EXPECT_EQ(evs.back()["reason"], "budget_exhausted");

  // Resume with a larger budget: a0 and a1 replay from the cache, a2..a5 call the server.
  json second = run({run_id, "--experience", dir_.path().string(), "-q", "--max-tokens", "1000"},
                    serverEnv(), &code, "resume");
  EXPECT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(second["status"], "success");
  EXPECT_EQ(second["nodes"]["cached"], 2);
  EXPECT_EQ(server_.requests().size(), 6U);
  auto resumed = events(second["run_id"]);
  // The budget covers the chain: the resumed run starts from the 20 tokens already spent.
  EXPECT_EQ(resumed.front()["usage_before"]["input_tokens"].get<int>() +
                resumed.front()["usage_before"]["output_tokens"].get<int>(),
            20);
  EXPECT_EQ(resumed.back()["usage_total"]["llm_calls"], 6);
}

TEST_F(LlmRunTest, CostBudgetStopsTheRunBeforeItIsPassed) {
  // $0.01 a token. Each call reserves 46 tokens ($0.46: a 2-byte prompt, max_tokens 20) and
  // spends 10 ($0.10). Under $0.70: calls 1-3 fit (0.20 + 0.46 <= 0.70), the 4th would not
  // (0.30 + 0.46 > 0.70), so the chain stops there and nothing after it starts.
  server_.setHandler([](const RecordedRequest&) {
    return FakeLlmServer::openAiText("ok", 7, 3, "stop", "priced-model");
  });
  dir_.write("prompts/p.md", "hi");
  std::string yaml = agentsYaml(6, true,
                                "runtime:\n  budget: {max_cost_usd: 0.70}\n  prices:\n"
                                "    priced-model: {input: 10000, output: 10000}\n",
                                20);
  for (size_t at = yaml.find("kind: agent,"); at != std::string::npos;
       at = yaml.find("kind: agent,", at + 1)) {
    yaml.insert(at + 12, " model: priced-model,");
  }
  writeExperience(yaml);
  int code = -1;
  json out = run({"-q"}, serverEnv(), &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out["reason"], "budget_exhausted");
  EXPECT_EQ(server_.requestCount(), 3U);
  EXPECT_NEAR(out["usage"]["cost_usd"].get<double>(), 0.30, 1e-9);
  EXPECT_LE(out["usage"]["cost_usd"].get<double>(), 0.70);
  EXPECT_EQ(out["final_state"]["out2"], "ok");
  EXPECT_FALSE(out["final_state"].contains("out3"));
  auto evs = events(out["run_id"]);
  std::string refusal;
  for (const auto& e : evs) {
    if (e.value("type", "") == "node.failed" && e.value("node_id", "") == "a3") {
      refusal = e["error"];
    }
  }
  EXPECT_NE(refusal.find("max_cost_usd"), std::string::npos) << refusal;
  EXPECT_EQ(count(evs, "node.started", "a4"), 0U);
  EXPECT_EQ(evs.back()["reason"], "budget_exhausted");
}

// A per-minute limit cannot be waited out in a test: the third call finds the window full and
// waits (reported as activity) until its node's timeout cancels the wait. Without the limiter
// all three would reach the server.
TEST_F(LlmRunTest, RequestsPerMinuteHoldsTheCallsAboveTheLimit) {
  server_.setHandler([](const RecordedRequest&) { return FakeLlmServer::openAiText("ok"); });
  dir_.write("prompts/p.md", "item {{n}}");
  std::string yaml = agentsYaml(
      3, false, "runtime:\n  concurrency: 3\n  limits:\n    openai: {requests_per_minute: 2}\n");
  for (size_t at = yaml.find("kind: agent,"); at != std::string::npos;
       at = yaml.find("kind: agent,", at + 1)) {
    yaml.insert(at + 12, " timeout_ms: 3000,");
  }
  writeExperience(yaml);
  int code = -1;
  json out = run({"-q"}, serverEnv(), &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(server_.requestCount(), 2U);
  EXPECT_EQ(out["nodes"]["failed"], 1);
  auto evs = events(out["run_id"]);
  std::string failed;
  std::string error;
  for (const auto& e : evs) {
    if (e.value("type", "") == "node.failed") {
      failed = e["node_id"];
      error = e["error"];
    }
  }
  EXPECT_NE(error.find("timed out after 3000 ms"), std::string::npos) << error;
  bool waited = false;
  for (const auto& e : evs) {
    waited = waited || (e.value("type", "") == "node.activity" && e.value("node_id", "") == failed &&
                        e.value("activity", "").find("runtime.limits.openai") != std::string::npos);
  }
  EXPECT_TRUE(waited);
}

// tokens_per_minute counts a call's upper bound while it runs and its real usage after: here
// each call reserves 46 tokens and really uses 50, so under 100 a minute the third never fits.
TEST_F(LlmRunTest, TokensPerMinuteHoldsTheCallsAboveTheLimit) {
  server_.setHandler([](const RecordedRequest&) { return FakeLlmServer::openAiText("ok", 40, 10); });
  dir_.write("prompts/p.md", "hi");
  std::string yaml = agentsYaml(
      3, false, "runtime:\n  concurrency: 3\n  limits:\n    openai: {tokens_per_minute: 100}\n",
      20);
  for (size_t at = yaml.find("kind: agent,"); at != std::string::npos;
       at = yaml.find("kind: agent,", at + 1)) {
    yaml.insert(at + 12, " timeout_ms: 3000,");
  }
  writeExperience(yaml);
  int code = -1;
  json out = run({"-q"}, serverEnv(), &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(server_.requestCount(), 2U);
  EXPECT_EQ(out["nodes"]["failed"], 1);
  EXPECT_EQ(out["usage"]["input_tokens"], 80);
  auto evs = events(out["run_id"]);
  std::string error;
  for (const auto& e : evs) {
    if (e.value("type", "") == "node.failed") {
      error = e["error"];
    }
  }
  EXPECT_NE(error.find("timed out after 3000 ms"), std::string::npos) << error;
}

TEST_F(LlmRunTest, RecordedRunReplaysOfflineToTheSameState) {
  server_.setHandler([](const RecordedRequest& request) {
    return FakeLlmServer::openAiText("echo: " + userText(request));
  });
  dir_.write("prompts/p.md", "number {{n}}");
  writeExperience(agentsYaml(3, true, ""));
  const auto recording = dir_.path() / "llm-recording.jsonl";
  int code = -1;
  json recorded = run({"-q", "--no-cache", "--llm-record", recording.string()}, serverEnv(), &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(recorded["final_state"]["out2"], "echo: number 2");
  server_.stop();

  std::filesystem::remove_all(dir_.path() / ".openexpertise");
  json replayed = run({"-q", "--llm-replay", recording.string()}, noProviderEnv(), &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(replayed["final_state"], recorded["final_state"]);
  EXPECT_EQ(replayed["usage"], recorded["usage"]);

  // A request that was never recorded fails its node, naming it and the file.
  dir_.write("prompts/p.md", "a different prompt {{n}}");
  json missed = run({"-q", "--no-cache", "--llm-replay", recording.string()}, noProviderEnv(),
                    &code);
  EXPECT_EQ(code, 1);
  auto evs = events(missed["run_id"]);
  bool named = false;
  for (const auto& e : evs) {
    if (e.value("type", "") == "node.failed" && e.value("node_id", "") == "a0") {
      const std::string error = e["error"];
      named = error.find("node \"a0\"") != std::string::npos &&
              error.find("no recorded LLM response") != std::string::npos &&
              error.find(recording.string()) != std::string::npos;
    }
  }
  EXPECT_TRUE(named);
}

TEST_F(LlmRunTest, ToolOnlyRunNeedsNoKeyAndAnAgentWithoutOneSaysWhatToSet) {
  dir_.write("prompts/p.md", "hi");
  writeExperience(agentsYaml(1, false, ""));
  int code = -1;
  json out = run({"-q"}, noProviderEnv(), &code);
  EXPECT_EQ(code, 1);
  auto evs = events(out["run_id"]);
  std::string error;
  for (const auto& e : evs) {
    if (e.value("type", "") == "node.failed") {
      error = e["error"];
    }
  }
  EXPECT_NE(error.find("No LLM provider configured. Set ANTHROPIC_API_KEY or OPENAI_API_KEY"),
            std::string::npos)
      << error;
}

TEST_F(LlmRunTest, SchemaRepairSendsTheValidationErrorsBack) {
  server_.enqueue(FakeLlmServer::openAiToolCalls({{"structured_output", R"({"score":"high"})"}}));
  server_.enqueue(FakeLlmServer::openAiToolCalls({{"structured_output", R"({"score":0.75})"}}));
  dir_.write("prompts/p.md", "rate it");
  writeExperience(R"(name: repair
version: 0.1.0
state:
  schema:
    score: {type: number}
graph:
  nodes:
    - id: rate
      kind: agent
      prompt: prompts/p.md
      writes: [score]
      schema:
        type: object
        required: [score]
        properties:
          score: {type: number}
  edges: []
)");
  int code = -1;
  json out = run({"-q"}, serverEnv(), &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["final_state"]["score"], 0.75);
  auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 2U);
  const std::string second = requests[1].body;
  EXPECT_NE(second.find("score"), std::string::npos);
  EXPECT_GT(requests[1].json()["messages"].size(), requests[0].json()["messages"].size());
  EXPECT_EQ(out["usage"]["llm_calls"], 2);
}

TEST_F(LlmRunTest, AnthropicKeyPicksTheMessagesProtocolAndItsDefaultModel) {
  server_.enqueue(FakeLlmServer::anthropicMessage("bonjour"));
  dir_.write("prompts/p.md", "say hi");
  writeExperience(agentsYaml(1, false, ""));
  int code = -1;
  json out = run({"-q"},
                 {{"ANTHROPIC_API_KEY", "test-key"},
                  {"ANTHROPIC_BASE_URL", server_.baseUrl()},
                  {"OPENAI_API_KEY", "also-set"},
                  {"OPENAI_BASE_URL", ""},
                  {"OE_ANTHROPIC_MODEL", ""}},
                 &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["final_state"]["out0"], "bonjour");
  auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].path, "/v1/messages");
  EXPECT_EQ(requests[0].json()["model"], "claude-sonnet-4-6");
  auto evs = events(out["run_id"]);
  ASSERT_EQ(count(evs, "node.tokens", "a0"), 1U);
  for (const auto& e : evs) {
    if (e.value("type", "") == "node.tokens") {
      EXPECT_EQ(e["model"], "claude-sonnet-4-6");
      EXPECT_EQ(e["provider"], "anthropic");
      EXPECT_TRUE(e.contains("cost_usd"));
    }
  }
}

TEST_F(LlmRunTest, CostBudgetRefusesAModelWithNoPrice) {
  server_.setHandler([](const RecordedRequest&) { return FakeLlmServer::openAiText("ok"); });
  dir_.write("prompts/p.md", "hi");
  writeExperience(R"(name: priced
version: 0.1.0
state:
  schema:
    out: {type: string}
graph:
  nodes:
    - {id: a, kind: agent, prompt: prompts/p.md, model: my-local-model, writes: [out]}
  edges: []
runtime:
  budget: {max_cost_usd: 1}
)");
  int code = -1;
  json out = run({"-q"}, serverEnv(), &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(server_.requests().size(), 0U);  // refused before any byte was sent
  std::string error;
  for (const auto& e : events(out["run_id"])) {
    if (e.value("type", "") == "node.failed") {
      error = e["error"];
    }
  }
  EXPECT_NE(error.find("add runtime.prices.my-local-model"), std::string::npos) << error;
}

// Upstream's multi-kind e2e (reference §11.2): dataset -> tool -> agent.
TEST_F(LlmRunTest, MultiKindDatasetToolAgent) {
  server_.setHandler([](const RecordedRequest&) {
    return FakeLlmServer::openAiText("summarized: 3 rows seen", 12, 7);
  });
  dir_.write("data/rows.json", R"([{"v":1},{"v":2},{"v":3}])");
  writeTool("count.mjs",
            "export default (args) => ({state_delta: {count: args._state.rows.length}});\n");
  dir_.write("prompts/summary.md", "There are {{count}} rows. Summarize.");
  writeExperience(R"(name: multi-kind
version: 0.1.0
state:
  schema:
    rows: {type: array}
    count: {type: number}
    summary: {type: string}
graph:
  nodes:
    - {id: load, kind: dataset, source: {type: file, uri: data/rows.json}, writes: [rows]}
    - {id: count, kind: tool, impl: ./tools/count.mjs, reads: [rows], writes: [count]}
    - {id: summarize, kind: agent, prompt: prompts/summary.md, reads: [count], writes: [summary]}
  edges:
    - {from: load, to: count}
    - {from: count, to: summarize}
)");
  int code = -1;
  json out = run({"-q"}, serverEnv(), &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["final_state"]["rows"], json::parse(R"([{"v":1},{"v":2},{"v":3}])"));
  EXPECT_EQ(out["final_state"]["count"], 3);
  EXPECT_EQ(out["final_state"]["summary"], "summarized: 3 rows seen");
  auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(userText(requests[0]), "There are 3 rows. Summarize.");
  auto evs = events(out["run_id"]);
  EXPECT_GE(count(evs, "node.activity", "summarize"), 1U);
  ASSERT_EQ(count(evs, "node.tokens", "summarize"), 1U);
  for (const auto& e : evs) {
    if (e.value("type", "") == "node.tokens") {
      EXPECT_EQ(e["input_tokens"], 12);
      EXPECT_EQ(e["output_tokens"], 7);
    }
    if (e.value("type", "") == "node.finished" && e.value("node_id", "") == "summarize") {
      EXPECT_EQ(e["metrics"]["tokens_in"], 12);
      EXPECT_EQ(e["metrics"]["tokens_out"], 7);
    }
  }
}

TEST_F(LlmRunTest, DeterministicFanOutAppendsInItemOrderWhateverFinishesFirst) {
  // All three requests are in flight together, then item c is answered first, b after it and
  // a last: the answers arrive in the reverse of item order, by construction rather than by sleeps.
  server_.setHandler([](const RecordedRequest& request) {
    const std::string item = userText(request);
    const size_t answers_before = item == "item a" ? 2 : item == "item b" ? 1 : 0;
    return FakeLlmServer::heldUntil(
        FakeLlmServer::openAiToolCalls(
            {{"structured_output", json{{"seen", json::array({item})}}.dump()}}),
        3, answers_before);
  });
  writeTool("seed.mjs",
            "export default () => ({state_delta: {items: ['a', 'b', 'c']}});\n");
  dir_.write("prompts/p.md", "item {{$item}}");
  writeExperience(R"(name: order
version: 0.1.0
state:
  schema:
    items: {type: array}
    seen: {type: array, merge: array_append}
graph:
  nodes:
    - {id: seed, kind: tool, impl: ./tools/seed.mjs, writes: [items]}
    - id: each
      kind: agent
      prompt: prompts/p.md
      writes: [seen]
      for_each: {source: $.items, concurrency: 3}
      schema: {type: object, required: [seen], properties: {seen: {type: array}}}
  edges:
    - {from: seed, to: each}
runtime:
  deterministic: true
)");
  int code = -1;
  json out = run({"-q"}, serverEnv(), &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["final_state"]["seen"], json::parse(R"(["item a", "item b", "item c"])"));
  EXPECT_EQ(server_.peakInFlight(), 3U);  // the items really overlapped
}

// The skill kind against the real host's oe.prompt/1 (the plugin tests use a fake one): the
// SKILL.md body is the system prompt and the user message is
// JSON.stringify({...state_view, ...edge_inputs, ...args}, null, 2), keys in that order.
// Prompt files are in their node's cache key (docs/durability.md, "What the cache key covers"):
// editing an agent's prompt template, or a skill's SKILL.md, calls the model again for that node
// alone; the other nodes replay from the cache and send nothing.
TEST_F(LlmRunTest, EditingAPromptFileCallsTheModelAgainForItsNodeOnly) {
  server_.setHandler([](const RecordedRequest& request) {
    return FakeLlmServer::openAiText("echo: " + userText(request));
  });
  dir_.write("prompts/a.md", "first {{n}}");
  dir_.write("prompts/b.md", "second {{n}}");
  dir_.write("skills/s/SKILL.md", "---\nname: s\n---\nSay hi.\n");
  writeExperience(R"(name: prompt-key
version: 0.1.0
state: { schema: { a: {type: string}, b: {type: string}, s: {type: string} } }
graph:
  nodes:
    - {id: a, kind: agent, prompt: prompts/a.md, writes: [a], args: {n: 1}}
    - {id: b, kind: agent, prompt: prompts/b.md, writes: [b], args: {n: 2}}
    - {id: s, kind: skill, impl: skills/s, writes: [s], args: {n: 3}}
  edges: []
)");
  int code = -1;
  auto runOk = [&] {
    json out = run({"-q"}, serverEnv(), &code);
    EXPECT_EQ(code, 0) << last_stderr_;
    return out;
  };
  runOk();
  EXPECT_EQ(server_.requestCount(), 3U);
  EXPECT_EQ(runOk()["nodes"]["cached"], 3);
  EXPECT_EQ(server_.requestCount(), 3U);

  dir_.write("prompts/a.md", "first, edited {{n}}");
  json edited = runOk();
  EXPECT_EQ(edited["final_state"]["a"], "echo: first, edited 1");
  EXPECT_EQ(edited["nodes"]["ran"], 1) << edited.dump();
  EXPECT_EQ(edited["nodes"]["cached"], 2);
  EXPECT_EQ(server_.requestCount(), 4U);

  dir_.write("skills/s/SKILL.md", "---\nname: s\n---\nSay hello.\n");
  edited = runOk();
  EXPECT_EQ(edited["nodes"]["ran"], 1) << edited.dump();
  EXPECT_EQ(edited["nodes"]["cached"], 2);
  auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 5U);
  EXPECT_EQ(requests[4].json()["messages"][0]["content"], "Say hello.\n");
}

TEST_F(LlmRunTest, SkillSendsItsInputsAsUpstreamsJsonThroughTheRealHost) {
  server_.setHandler([](const RecordedRequest&) { return FakeLlmServer::openAiText("greeting"); });
  dir_.write("skills/classify/SKILL.md",
             "---\nname: classify\ndescription: Classifies user utterances\n---\n# Classify\n\n"
             "Label the utterance as greeting, question or other.\n");
  writeTool("seed.mjs", "export default () => ({state_delta: {utterance: 'hello there'}});\n");
  writeExperience(R"(name: skill-real-host
version: 0.1.0
state:
  schema:
    utterance: {type: string}
    label: {type: string}
graph:
  nodes:
    - {id: seed, kind: tool, impl: ./tools/seed.mjs, writes: [utterance]}
    - {id: classify, kind: skill, impl: skills/classify, reads: [utterance], writes: [label],
       args: {mode: strict}}
  edges:
    - {from: seed, to: classify}
)");
  int code = -1;
  json out = run({"-q"}, serverEnv(), &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["final_state"]["label"], "greeting");
  auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 1U);
  const json body = requests[0].json();
  ASSERT_EQ(body["messages"].size(), 2U) << body.dump();
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][0]["content"],
            "# Classify\n\nLabel the utterance as greeting, question or other.\n");
  // Pretty-printed with 2 spaces, every input present.
  const std::string user = userText(requests[0]);
  EXPECT_EQ(json::parse(user), (json{{"utterance", "hello there"}, {"mode", "strict"}})) << user;
  EXPECT_NE(user.find("\n  \"mode\": \"strict\""), std::string::npos) << user;
}

// Upstream's object spread keeps insertion order: the state field, then the arg (a sorted
// value map would send "mode" first).
TEST_F(LlmRunTest, SkillUserMessageKeepsUpstreamsKeyOrder) {
  server_.setHandler([](const RecordedRequest&) { return FakeLlmServer::openAiText("greeting"); });
  dir_.write("skills/classify/SKILL.md", "# Classify\n");
  writeTool("seed.mjs", "export default () => ({state_delta: {utterance: 'hello there'}});\n");
  writeExperience(R"(name: skill-key-order
version: 0.1.0
state:
  schema:
    utterance: {type: string}
    label: {type: string}
graph:
  nodes:
    - {id: seed, kind: tool, impl: ./tools/seed.mjs, writes: [utterance]}
    - {id: classify, kind: skill, impl: skills/classify, reads: [utterance], writes: [label],
       args: {mode: strict}}
  edges:
    - {from: seed, to: classify}
)");
  int code = -1;
  run({"-q"}, serverEnv(), &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(userText(requests[0]),
            "{\n  \"utterance\": \"hello there\",\n  \"mode\": \"strict\"\n}");
}

// The real host's prompt values: args beat edge inputs, which beat state (reference §2.1). An
// edge input is keyed by the predecessor's id, so a predecessor named `who` competes with the
// state field `who`.
TEST_F(LlmRunTest, PromptValuesPreferArgsThenEdgeInputsThenState) {
  server_.setHandler([](const RecordedRequest& request) {
    return FakeLlmServer::openAiText("echo: " + userText(request));
  });
  dir_.write("prompts/p.md", "{{who}} / {{topic}}");
  writeTool("who.mjs",
            "export default () => ({state_delta: {who: 'state', topic: 't'}, edge_output: "
            "'edge'});\n");
  writeTool("relay.mjs", "export default () => ({state_delta: {}});\n");
  writeExperience(R"(name: precedence
version: 0.1.0
state:
  schema:
    who: {type: string}
    topic: {type: string}
    by_args: {type: string}
    by_edge: {type: string}
    by_state: {type: string}
graph:
  nodes:
    - {id: who, kind: tool, impl: ./tools/who.mjs, writes: [who, topic]}
    - {id: relay, kind: tool, impl: ./tools/relay.mjs}
    - {id: with_args, kind: agent, prompt: prompts/p.md, reads: [who, topic], writes: [by_args],
       args: {who: args}}
    - {id: with_edge, kind: agent, prompt: prompts/p.md, reads: [who, topic], writes: [by_edge]}
    - {id: with_state, kind: agent, prompt: prompts/p.md, reads: [who, topic], writes: [by_state]}
  edges:
    - {from: who, to: with_args}
    - {from: who, to: with_edge}
    - {from: who, to: relay}
    - {from: relay, to: with_state}
)");
  int code = -1;
  json out = run({"-q"}, serverEnv(), &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["final_state"]["by_args"], "echo: args / t");
  EXPECT_EQ(out["final_state"]["by_edge"], "echo: edge / t");
  EXPECT_EQ(out["final_state"]["by_state"], "echo: state / t");
}

// A nested experience's LLM calls are the parent run's (docs/kinds-experience.md): they count
// against the parent's budget, which stops the child and the parent alike, resumably; the
// parent's runtime.limits hold the child's fan-out.
TEST_F(LlmRunTest, ANestedExperienceSpendsTheParentsBudgetAndResumesThroughIt) {
  server_.setHandler([](const RecordedRequest&) { return FakeLlmServer::openAiText("ok", 7, 3); });
  dir_.write("child/prompts/p.md", "hi");
  dir_.write("child/experience.yaml", agentsYaml(6, true, "", 20));  // the budget arithmetic above
  writeExperience(R"(name: parent
version: 0.1.0
state: { schema: {} }
runtime:
  budget: { max_tokens: 60 }
graph:
  nodes:
    - { id: child, kind: experience, impl: ./child }
  edges: []
)");
  int code = -1;
  json first = run({"-q"}, serverEnv(), &code);
  EXPECT_EQ(code, 1) << last_stderr_;
  EXPECT_EQ(first["reason"], "budget_exhausted");
  EXPECT_EQ(server_.requests().size(), 2U);
  // Stopped by the budget, not failed (docs/durability.md, "Cancelled is not failed").
  EXPECT_TRUE(first["failures"].empty()) << first.dump(2);
  ASSERT_FALSE(first["cancelled"].empty()) << first.dump(2);
  EXPECT_NE(first["cancelled"][0]["error"].get<std::string>().find(
                "the run's LLM budget ran out inside the nested experience"),
            std::string::npos)
      << first.dump(2);

  json second = run({first["run_id"], "--experience", dir_.path().string(), "-q", "--max-tokens",
                     "1000"},
                    serverEnv(), &code, "resume");
  EXPECT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(second["status"], "success");
  EXPECT_EQ(server_.requests().size(), 6U) << "the child's finished agents called the LLM again";
}

TEST_F(LlmRunTest, TheParentsLimitsHoldANestedFanOut) {
  server_.setHandler([](const RecordedRequest&) {
    return FakeLlmServer::delayed(FakeLlmServer::openAiText("ok"), std::chrono::milliseconds(10));
  });
  dir_.write("child/prompts/p.md", "item {{n}}");
  dir_.write("child/experience.yaml",
             agentsYaml(40, false, "runtime:\n  concurrency: 16\n  limits:\n    openai: "
                                   "{max_in_flight: 30}\n"));
  writeExperience(R"(name: parent
version: 0.1.0
state: { schema: {} }
runtime:
  limits:
    openai: { max_in_flight: 3 }
graph:
  nodes:
    - { id: child, kind: experience, impl: ./child }
  edges: []
)");
  int code = -1;
  json out = run({"-q"}, serverEnv(), &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(server_.requestCount(), 40U);
  EXPECT_LE(server_.peakInFlight(), 3U) << "the child's own runtime.limits applied, not the run's";
  EXPECT_EQ(out["usage"]["llm_calls"], 40);
}

}  // namespace
}  // namespace oe::test

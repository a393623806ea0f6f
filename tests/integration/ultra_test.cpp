// `oe ultra` and `oe ultra-revise` end to end (issue 13, item 1): the real `oe` binary with its
// plugins, against a real local server speaking the OpenAI or the Anthropic protocol that
// answers each phase (told apart by its system prompt) from a script. Each draft is checked by
// `oe validate` and a smoke run (stand-in LLM answers, real tools): no request of the smoke run
// may reach the server.
#include <deque>
#include <mutex>

#include "oe_fixture.hpp"
#include "support/fake_llm_server.hpp"

namespace oe::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kTask = "Greet the world and summarize the greeting";

json analysis() {
  return {{"name", "greeter"},
          {"description", "Greets the world and summarizes the greeting"},
          {"phases", json::array({{{"id", "greet"}}})},
          {"state_fields", json::array({{{"name", "greeting"}, {"type", "string"}},
                                        {{"name", "summary"}, {"type", "string"}}})},
          {"node_sketches",
           json::array({{{"id", "greet"}, {"kind", "tool"}, {"purpose", "greet"}},
                        {{"id", "summarize"}, {"kind", "agent"}, {"purpose", "summarize"}}})},
          {"open_questions", json::array({"Which language?"})}};
}

// A draft: a tool writing `greeting` (plus `extra_writes`), then an agent with structured output.
json synthesis(const std::string& tool_body, const std::string& extra_writes = "",
               const std::string& marker = "v1") {
  const std::string yaml =
      "name: greeter\n"
      "description: " +
      marker +
      "\n"
      "version: 0.1.0\n"
      "state:\n"
      "  schema:\n"
      "    greeting: { type: string }\n"
      "    summary: { type: string }\n"
      "graph:\n"
      "  nodes:\n"
      "    - id: greet\n"
      "      kind: tool\n"
      "      impl: ./tools/greet.mjs\n"
      "      writes: [greeting" +
      extra_writes +
      "]\n"
      "    - id: summarize\n"
      "      kind: agent\n"
      "      prompt: prompts/summarize.md\n"
      "      reads: [greeting]\n"
      "      writes: [summary]\n"
      "      schema: { type: object, required: [summary], properties: "
      "{ summary: { type: string } } }\n"
      "  edges:\n"
      "    - { from: greet, to: summarize }\n";
  return {
      {"experience_yaml", yaml},
      {"files",
       json::array({{{"path", "tools/greet.mjs"}, {"content", tool_body}},
                    {{"path", "./prompts/summarize.md"}, {"content", "Summarize: {{greeting}}"}}})},
      {"next_steps", json::array({"Set OPENAI_API_KEY"})}};
}

const std::string kGoodTool =
    "export default async function greet() {\n"
    "  return { state_delta: { greeting: 'hello from authored draft' } };\n}\n";
const std::string kBrokenTool =
    "export default async function greet() { throw new Error('greet is broken'); }\n";

json critique(double score, json findings = json::array()) {
  return {{"score", score}, {"findings", std::move(findings)}};
}
json finding(const std::string& severity, const std::string& node) {
  return {{"dimension", "correctness"},
          {"severity", severity},
          {"anchor", {{"node_id", node}}},
          {"evidence", "the greet node"},
          {"fix", "do better"}};
}

class UltraTest : public OeTest {
 protected:
  enum class Protocol { kOpenAi, kAnthropic };

  // Scripted answers per phase; the last one of a phase repeats. A request of no phase (a run
  // of the draft after `oe ultra`) gets {"summary": "ok"}.
  void script(const std::string& phase, json answer) {
    std::lock_guard lock(mutex_);
    answers_[phase].push_back(std::move(answer));
  }

  void serve(Protocol protocol) {
    protocol_ = protocol;
    server_.setHandler([this](const RecordedRequest& request) {
      const std::string phase = phaseOf(request.json());
      json input = {{"summary", "ok"}};
      {
        std::lock_guard lock(mutex_);
        phases_.push_back(phase);
        auto& queue = answers_[phase];
        if (!queue.empty()) {
          input = queue.front();
          if (queue.size() > 1) {
            queue.pop_front();
          }
        }
      }
      if (protocol_ == Protocol::kAnthropic) {
        return FakeLlmServer::anthropicMessage("", 100, 50, "tool_use",
                                               {{"structured_output", input}});
      }
      return FakeLlmServer::openAiToolCalls({{"structured_output", input.dump()}}, 100, 50);
    });
  }

  std::map<std::string, std::string> env() const {
    if (protocol_ == Protocol::kAnthropic) {
      return {{"ANTHROPIC_BASE_URL", server_.baseUrl()},
              {"ANTHROPIC_API_KEY", "test-key"},
              {"OPENAI_API_KEY", ""},
              {"OPENAI_BASE_URL", ""},
              {"OE_OPENAI_MODEL", ""},
              {"OE_ANTHROPIC_MODEL", ""},
              {"OE_ULTRA_SCORE_BAR", ""}};
    }
    auto e = openAiServerEnv(server_);
    e["OE_ULTRA_SCORE_BAR"] = "";
    return e;
  }

  static std::string systemOf(const json& body) {
    if (body.contains("system") && body["system"].is_string()) {
      return body["system"];
    }
    if (body.contains("messages") && !body["messages"].empty() &&
        body["messages"][0].value("role", "") == "system") {
      return body["messages"][0].value("content", "");
    }
    return {};
  }
  static std::string userOf(const json& body) {
    for (const auto& m : body["messages"]) {
      if (m.value("role", "") == "user") {
        return m["content"].is_string() ? m["content"].get<std::string>() : m["content"].dump();
      }
    }
    return {};
  }
  static std::string phaseOf(const json& body) {
    const std::string system = systemOf(body);
    if (system.find("SOP architect") != std::string::npos) return "analyze";
    if (system.find("SOP critic") != std::string::npos) return "critique";
    if (system.find("synthesizer of oe") != std::string::npos) return "synthesize";
    if (system.find("reviser of oe") != std::string::npos) return "revise";
    return "other";
  }
  // The user messages (parsed) of the requests of `phase`, in order.
  std::vector<json> requestsOf(const std::string& phase) {
    std::vector<json> out;
    for (const auto& r : server_.requests()) {
      const json body = r.json();
      if (phaseOf(body) == phase) {
        const std::string user = userOf(body);
        const json parsed = json::parse(user, nullptr, false);
        out.push_back(parsed.is_discarded() ? json(user) : parsed);
      }
    }
    return out;
  }
  std::vector<std::string> phasesSeen() {
    std::lock_guard lock(mutex_);
    return phases_;
  }

  ProcessResult ultra(std::vector<std::string> extra) {
    std::vector<std::string> args = {"ultra", kTask, "--draft-root", root().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return oe(args, env());
  }
  ProcessResult revise(const std::string& feedback, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"ultra-revise", draft().string(), feedback};
    args.insert(args.end(), extra.begin(), extra.end());
    return oe(args, env());
  }
  fs::path root() const { return dir_.path() / "drafts"; }
  fs::path draft() const { return root() / "greeter"; }
  std::string draftFile(const std::string& rel) const { return readFile(draft() / rel); }
  static std::string readFile(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  Protocol protocol_ = Protocol::kOpenAi;
  std::mutex mutex_;
  std::map<std::string, std::deque<json>> answers_;
  std::vector<std::string> phases_;
  // Last: destroyed first, so its thread (whose handler uses the members above) is joined
  // before they go.
  FakeLlmServer server_;
};

TEST_F(UltraTest, AValidDraftPassesItsSmokeRunAndRuns) {
  serve(Protocol::kOpenAi);
  script("analyze", analysis());
  script("synthesize", synthesis(kGoodTool));
  script("critique", critique(92));
  auto r = ultra({});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("ultraexpertise: draft created "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"nodes\":[\"greet(tool)\",\"summarize(agent)\"]"), std::string::npos);
  EXPECT_NE(r.out.find("oe run " + draft().string()), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("✓ analyze"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("valid, smoke run success"), std::string::npos) << r.err;

  // The smoke run's agent call was a stand-in: only the three phases reached the server.
  EXPECT_EQ(phasesSeen(), (std::vector<std::string>{"analyze", "synthesize", "critique"}));
  EXPECT_EQ(draftFile("tools/greet.mjs"), kGoodTool);
  EXPECT_EQ(draftFile("prompts/summarize.md"), "Summarize: {{greeting}}");
  EXPECT_EQ(json::parse(draftFile("analysis.json")), analysis());
  EXPECT_FALSE(fs::exists(draft() / ".openexpertise")) << "the smoke run ran in a scratch copy";
  EXPECT_FALSE(fs::exists(root() / ".ultra-scratch-greeter"));

  // Upstream's requests: the analyzer gets the raw task, the synthesizer pretty JSON.
  const json body = server_.requests().front().json();
  EXPECT_EQ(body["max_tokens"], 8192);
  EXPECT_EQ(userOf(body), kTask);
  EXPECT_EQ(body["tools"][0]["function"]["name"], "structured_output");
  EXPECT_EQ(body["tools"][0]["function"]["parameters"]["properties"]["name"]["pattern"],
            "^[a-z][a-z0-9-]*$");
  const auto synth = requestsOf("synthesize");
  ASSERT_EQ(synth.size(), 1U);
  EXPECT_EQ(synth[0]["task"], kTask);
  EXPECT_EQ(synth[0]["analysis"], analysis());
  ASSERT_TRUE(synth[0].contains("exemplars")) << "the shipped examples are the default corpus";

  // The draft runs for real.
  auto run = oe({"run", draft().string(), "--json"}, env());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out)["final_state"]["greeting"], "hello from authored draft");
}

TEST_F(UltraTest, AnInvalidFirstDraftIsRevisedWithItsValidationErrors) {
  serve(Protocol::kAnthropic);
  script("analyze", analysis());
  script("synthesize", synthesis(kGoodTool, ", extra"));  // writes an undeclared field
  script("critique", critique(40, json::array({finding("high", "greet")})));
  script("revise", synthesis(kGoodTool, "", "fixed"));
  auto r = ultra({"--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["validation"], json({{"valid", true}, {"errors", json::array()}}));
  EXPECT_EQ(out["loop"]["rounds_run"], 1);
  EXPECT_EQ(out["loop"]["final_score"], 40) << "the revision is scored with its critic's score";
  EXPECT_EQ(out["draft_dir"], draft().string());
  EXPECT_EQ(out["synthesis"]["file_paths"], json({"tools/greet.mjs", "./prompts/summarize.md"}));
  EXPECT_NE(draftFile("experience.yaml").find("description: fixed"), std::string::npos);

  // What the reviser was told: the validation errors, and the critic's finding.
  const auto revise_requests = requestsOf("revise");
  ASSERT_EQ(revise_requests.size(), 1U);
  const json& sent = revise_requests[0];
  ASSERT_FALSE(sent["validation_errors"].empty());
  EXPECT_NE(sent["validation_errors"][0].get<std::string>().find("extra"), std::string::npos)
      << sent["validation_errors"];
  EXPECT_EQ(sent["findings"][0]["anchor"]["node_id"], "greet");
  bool error_as_finding = false;
  for (const auto& f : sent["findings"]) {
    error_as_finding |= f["dimension"] == "validity" &&
                        f["evidence"].get<std::string>().find("extra") != std::string::npos;
  }
  EXPECT_TRUE(error_as_finding) << sent["findings"];
  EXPECT_NE(sent["current_draft"]["experience_yaml"].get<std::string>().find("extra"),
            std::string::npos);
}

TEST_F(UltraTest, AnInvalidDraftIsFixedEvenWithoutCritiqueRounds) {
  serve(Protocol::kOpenAi);
  script("analyze", analysis());
  script("synthesize", synthesis(kGoodTool, ", extra"));
  script("revise", synthesis(kGoodTool, "", "fixed"));
  auto r = ultra({"--max-rounds", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(phasesSeen(), (std::vector<std::string>{"analyze", "synthesize", "revise"}));
}

TEST_F(UltraTest, ADraftWhoseSmokeRunFailsIsRevisedWithTheFailure) {
  serve(Protocol::kOpenAi);
  script("analyze", analysis());
  script("synthesize", synthesis(kBrokenTool));
  script("critique", critique(95));
  script("revise", synthesis(kGoodTool, "", "fixed"));
  auto r = ultra({"--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto sent = requestsOf("revise");
  ASSERT_EQ(sent.size(), 1U);
  const std::string errors = sent[0]["validation_errors"].dump();
  EXPECT_NE(errors.find("smoke run: node \\\"greet\\\" failed"), std::string::npos) << errors;
  EXPECT_NE(errors.find("greet is broken"), std::string::npos) << errors;
  EXPECT_EQ(draftFile("tools/greet.mjs"), kGoodTool);
}

TEST_F(UltraTest, NoSmokeChecksValidationOnly) {
  serve(Protocol::kOpenAi);
  script("analyze", analysis());
  script("synthesize", synthesis(kBrokenTool));
  script("critique", critique(95));
  auto r = ultra({"--no-smoke", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(json::parse(r.out)["check"]["smoke"]["ran"], false);
  EXPECT_TRUE(requestsOf("revise").empty());
}

TEST_F(UltraTest, ADraftThatStaysInvalidIsWrittenAndExitsTwo) {
  serve(Protocol::kOpenAi);
  script("analyze", analysis());
  script("synthesize", synthesis(kBrokenTool));
  script("critique", critique(95));
  script("revise", synthesis(kBrokenTool));
  auto r = ultra({"--fix-rounds", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("draft did not pass oe validate"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("greet is broken"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(draft() / "experience.yaml"));
  EXPECT_EQ(requestsOf("revise").size(), 2U) << "max-rounds 1 + fix-rounds 1";
}

TEST_F(UltraTest, ARevisionThatScoresWorseIsNotReturned) {
  serve(Protocol::kOpenAi);
  script("analyze", analysis());
  script("synthesize", synthesis(kGoodTool, "", "first"));
  // Round 1: 90 with a low finding (composite 90, under the bar of 95) -> revise; round 2: the
  // revision scores 50 with a medium finding (45) -> revise again; the last scores 50.
  script("critique", critique(90, json::array({finding("low", "greet")})));
  script("critique", critique(50, json::array({finding("medium", "greet")})));
  script("revise", synthesis(kGoodTool, "", "second"));
  script("revise", synthesis(kGoodTool, "", "third"));
  auto e = env();
  e["OE_ULTRA_SCORE_BAR"] = "95";
  auto r = oe({"ultra", kTask, "--draft-root", root().string(), "--max-rounds", "2", "--json"}, e);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["loop"]["rounds_run"], 2);
  EXPECT_EQ(out["loop"]["final_score"], 90);
  EXPECT_NE(draftFile("experience.yaml").find("description: first"), std::string::npos)
      << draftFile("experience.yaml");
}

TEST_F(UltraTest, AnInvalidRevisionOfAValidDraftIsRejected) {
  serve(Protocol::kOpenAi);
  script("analyze", analysis());
  script("synthesize", synthesis(kGoodTool, "", "first"));
  script("critique", critique(70, json::array({finding("high", "greet")})));
  script("revise", synthesis(kGoodTool, ", extra", "broken"));
  auto r = ultra({"--max-rounds", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("the revision does not validate"), std::string::npos) << r.err;
  EXPECT_NE(draftFile("experience.yaml").find("description: first"), std::string::npos);
  EXPECT_EQ(requestsOf("revise").size(), 1U) << "the gate stops the loop";
}

TEST_F(UltraTest, DryRunAnalyzesOnlyAndWritesNothing) {
  serve(Protocol::kOpenAi);
  script("analyze", analysis());
  auto r = ultra({"--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"node_sketches\""), std::string::npos) << r.out;
  EXPECT_EQ(phasesSeen(), std::vector<std::string>{"analyze"});
  EXPECT_FALSE(fs::exists(root()));
  auto j = ultra({"--dry-run", "--json"});
  ASSERT_EQ(j.exit_code, 0);
  EXPECT_EQ(json::parse(j.out)["analysis"], analysis());
  EXPECT_EQ(json::parse(j.out)["stopped"], true);
}

TEST_F(UltraTest, ExitCodesForNoProviderBadFlagsAndAFailedPhase) {
  auto none = oe({"ultra", kTask, "--draft-root", root().string()}, noProviderEnv());
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("No LLM provider configured"), std::string::npos) << none.err;
  serve(Protocol::kOpenAi);
  EXPECT_EQ(ultra({"--max-rounds", "-1"}).exit_code, 1);
  EXPECT_EQ(oe({"ultra-revise", draft().string()}, env()).exit_code, 2) << "feedback missing";
  script("analyze", json{{"name", "Not A Slug"}});  // fails the analysis schema
  auto bad = ultra({});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("analyze: the answer does not match its schema"), std::string::npos)
      << bad.err;
  EXPECT_FALSE(fs::exists(draft()));
}

TEST_F(UltraTest, ReviseTakesTheFeedbackFirstAndPrunesDroppedFiles) {
  serve(Protocol::kOpenAi);
  script("analyze", analysis());
  json first = synthesis(kGoodTool);
  first["files"].push_back({{"path", "notes/old.md"}, {"content", "old"}});
  script("synthesize", first);
  script("critique", critique(90));
  ASSERT_EQ(ultra({}).exit_code, 0);

  script("revise", synthesis(kGoodTool, "", "revised"));
  auto r = revise("Say hello in French", {"--max-rounds", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("ultraexpertise: draft revised"), std::string::npos) << r.out;
  const auto sent = requestsOf("revise");
  ASSERT_EQ(sent.size(), 1U);
  EXPECT_EQ(sent[0]["findings"][0], json({{"dimension", "decomposition"},
                                          {"severity", "high"},
                                          {"anchor", json::object()},
                                          {"evidence", "user directive"},
                                          {"fix", "Say hello in French"}}));
  EXPECT_NE(draftFile("experience.yaml").find("description: revised"), std::string::npos);
  EXPECT_FALSE(fs::exists(draft() / "notes/old.md"));
  EXPECT_FALSE(fs::exists(draft() / "notes"));
  EXPECT_TRUE(fs::exists(draft() / "analysis.json"));
}

TEST_F(UltraTest, ReviseKeepsAValidDraftWhenTheRevisionIsInvalid) {
  serve(Protocol::kOpenAi);
  script("analyze", analysis());
  script("synthesize", synthesis(kGoodTool, "", "first"));
  script("critique", critique(90));
  ASSERT_EQ(ultra({}).exit_code, 0);
  script("revise", synthesis(kGoodTool, ", extra", "broken"));
  auto r = revise("Add a field", {"--json"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["accepted_revision"], false);
  EXPECT_EQ(out["validation"]["valid"], true);
  EXPECT_NE(draftFile("experience.yaml").find("description: first"), std::string::npos);
  // Without --json, the first line says the draft was kept, not revised.
  script("revise", synthesis(kGoodTool, ", extra", "broken"));
  auto plain = revise("Add a field", {});
  EXPECT_EQ(plain.exit_code, 2) << plain.out << plain.err;
  EXPECT_EQ(plain.out.find("draft revised"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("ultraexpertise: draft kept "), std::string::npos) << plain.out;
}

TEST_F(UltraTest, ASynthesisThatEscapesTheDraftFolderIsRefused) {
  serve(Protocol::kOpenAi);
  script("analyze", analysis());
  json escape = synthesis(kGoodTool);
  escape["files"].push_back({{"path", "../../escape.txt"}, {"content", "x"}});
  script("synthesize", escape);
  script("critique", critique(90));
  script("revise", escape);
  auto r = ultra({"--fix-rounds", "0"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("leaves the draft folder"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_.path() / "escape.txt"));
  EXPECT_FALSE(fs::exists(root().parent_path() / "escape.txt"));
}

TEST_F(UltraTest, ACodingCliNodeGetsASchemaShapedStandInAndNoCliStarts) {
  serve(Protocol::kOpenAi);
  script("analyze", analysis());
  json draft_json = synthesis(kGoodTool);
  std::string yaml = draft_json["experience_yaml"];
  yaml.replace(yaml.find("    summary: { type: string }\n"), 0, "    findings: { type: array }\n");
  yaml.replace(yaml.find("  edges:\n"), 0,
               "    - id: review\n"
               "      kind: cli-agent\n"
               "      provider: claude-code\n"
               "      prompt: \"Review {{greeting}}\"\n"
               "      output_format: json\n"
               "      reads: [greeting]\n"
               "      writes: [findings]\n"
               "      schema: { type: object, required: [findings], properties: "
               "{ findings: { type: array, minItems: 1 } } }\n");
  draft_json["experience_yaml"] = yaml;
  script("synthesize", draft_json);
  script("critique", critique(90));
  // No `claude` anywhere on PATH: a started CLI would fail the smoke run.
  auto e = env();
  e["PATH"] = "/usr/bin:/bin";
  auto r = oe({"ultra", kTask, "--draft-root", root().string(), "--json"}, e);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(json::parse(r.out)["check"]["smoke"]["status"], "success");
  EXPECT_EQ(phasesSeen(), (std::vector<std::string>{"analyze", "synthesize", "critique"}));
}

TEST_F(UltraTest, ARecordedSessionReplaysOfflineToTheSameDraft) {
  serve(Protocol::kOpenAi);
  script("analyze", analysis());
  script("synthesize", synthesis(kGoodTool, ", extra"));
  script("critique", critique(40, json::array({finding("high", "greet")})));
  script("revise", synthesis(kGoodTool, "", "fixed"));
  const std::string recording = (dir_.path() / "ultra.jsonl").string();
  ASSERT_EQ(ultra({"--llm-record", recording}).exit_code, 0);
  const std::string recorded_yaml = draftFile("experience.yaml");
  const size_t requests = server_.requestCount();
  fs::remove_all(root());

  auto r = oe({"ultra", kTask, "--draft-root", root().string(), "--llm-replay", recording},
              noProviderEnv());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(draftFile("experience.yaml"), recorded_yaml);
  EXPECT_EQ(server_.requestCount(), requests) << "the replay made no request";
}

}  // namespace
}  // namespace oe::test

// `oe evolve`, `oe evolve --apply`, `oe run --evolve` and `oe diff` end to end (issue 12): the
// real `oe` binary, the evolution and openai-llm plugins, and a real local server speaking the
// OpenAI protocol that answers with canned proposals.
#include "oe_fixture.hpp"
#include "support/fake_llm_server.hpp"

namespace oe::test {
namespace {

using nlohmann::json;

constexpr std::string_view kScoringYaml = R"(name: scoring
version: 0.1.0
state:
  schema:
    score: { type: number }
graph:
  nodes:
    - id: score
      kind: tool
      impl: ./tools/score.sh
      args: { threshold: 0.5 }
      writes: [score]
  edges: []
)";

constexpr std::string_view kScoreTool =
    "#!/bin/sh\ncat >/dev/null\necho '{\"state_delta\":{\"score\":0.9}}'\n";

// Changes line 11 of kScoringYaml, with the lines around it as context.
constexpr std::string_view kScoringDiff =
    "--- a/experience.yaml\n"
    "+++ b/experience.yaml\n"
    "@@ -9,4 +9,4 @@\n"
    "       kind: tool\n"
    "       impl: ./tools/score.sh\n"
    "-      args: { threshold: 0.5 }\n"
    "+      args: { threshold: 0.7 }\n"
    "       writes: [score]\n";

class EvolveTest : public OeTest {
 protected:
  void SetUp() override {
    writeExperience(kScoringYaml);
    writeExecutable("tools/score.sh", kScoreTool);
  }
  std::map<std::string, std::string> serverEnv() { return openAiServerEnv(server_); }
  // A tool-only run; its id.
  std::string toolRun() {
    int code = -1;
    json out = runJson({}, &code);
    EXPECT_EQ(code, 0) << last_stderr_;
    return out.value("run_id", "");
  }
  static json proposal(std::string_view operation, std::string_view title, std::string_view diff) {
    return {{"operation", operation},
            {"confidence", "high"},
            {"title", title},
            {"rationale", "Every score in the run was above 0.5."},
            {"diff", diff}};
  }
  // The server answers every request with a structured_output call holding `proposals`.
  void answerWith(const json& proposals) {
    server_.setHandler([args = json{{"proposals", proposals}}.dump()](const RecordedRequest&) {
      return FakeLlmServer::openAiToolCalls({{"structured_output", args}}, 900, 120);
    });
  }
  ProcessResult evolve(const std::string& run_id, std::vector<std::string> extra,
                       const std::map<std::string, std::string>& env) {
    std::vector<std::string> args = {"evolve", run_id, "--experience", dir_.path().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return oe(args, env);
  }
  std::filesystem::path report(const std::string& run_id) {
    return dir_.path() / ".openexpertise" / "evolution" / (run_id + ".md");
  }

  FakeLlmServer server_;
};

TEST_F(EvolveTest, ACannedTuneParamProposalIsWrittenInUpstreamsReport) {
  const std::string run_id = toolRun();
  answerWith(json::array({proposal("tune-param", "Tighten threshold", kScoringDiff)}));
  auto r = evolve(run_id, {}, serverEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("evolution proposal written {\"outPath\":\"" + report(run_id).string() +
                       "\",\"proposalCount\":1}"),
            std::string::npos)
      << r.out;
  const std::string md = readFile(report(run_id));
  EXPECT_NE(md.find("Tighten threshold"), std::string::npos) << md;
  EXPECT_NE(md.find("tune-param"), std::string::npos) << md;
  EXPECT_NE(md.find("## 1. Tighten threshold _(tune-param, confidence: high)_\n\nEvery score in "
                    "the run was above 0.5.\n\n```diff\n" +
                    std::string(kScoringDiff) +
                    "\n```\n**oe verdict:** applies cleanly and passes `oe validate` (changes "
                    "experience.yaml)\n"),
            std::string::npos)
      << md;

  // The request: oe's prompt, upstream's tool schema, max_tokens and user message.
  ASSERT_EQ(server_.requestCount(), 1U);
  const json body = server_.requests().front().json();
  EXPECT_EQ(body["max_tokens"], 8192);
  ASSERT_EQ(body["messages"].size(), 2U);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_NE(body["messages"][0]["content"].get<std::string>().find("evolution advisor of oe"),
            std::string::npos);
  const json& tool = body["tools"][0]["function"];
  EXPECT_EQ(tool["name"], "structured_output");
  EXPECT_EQ(tool["parameters"]["properties"]["proposals"]["maxItems"], 5);
  EXPECT_EQ(
      tool["parameters"]["properties"]["proposals"]["items"]["properties"]["operation"]["enum"],
      json::array({"add-node", "tune-param", "add-dataset-case"}));
  const std::string user_text = body["messages"][1]["content"].get<std::string>();
  const nlohmann::ordered_json user = nlohmann::ordered_json::parse(user_text);
  EXPECT_EQ(user_text, user.dump(2)) << "upstream sends JSON.stringify(x, null, 2)";
  EXPECT_EQ(user["experience_yaml"], std::string(kScoringYaml));
  EXPECT_EQ(user["run_event_count"], events(run_id).size());
  EXPECT_EQ(user["sample_events"].size(), std::min<size_t>(30, events(run_id).size()));
  EXPECT_EQ(user["state_diff"].dump(), R"([{"field":"score","before":null,"after":0.9}])");
  std::vector<std::string> keys;
  for (auto it = user.begin(); it != user.end(); ++it) {
    keys.push_back(it.key());
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"experience_yaml", "run_event_count", "state_diff",
                                            "sample_events"}));

  // --apply 1: the YAML changes, the previous one is kept beside it.
  auto applied = evolve(run_id, {"--apply", "1"}, noProviderEnv());
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_NE(readFile(dir_ / "experience.yaml").find("threshold: 0.7"), std::string::npos);
  std::vector<std::filesystem::path> backups;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    if (entry.path().filename().string().starts_with("experience.yaml.bak-")) {
      backups.push_back(entry.path());
    }
  }
  ASSERT_EQ(backups.size(), 1U) << applied.out;
  EXPECT_EQ(readFile(backups.front()), std::string(kScoringYaml));
  EXPECT_NE(applied.out.find("previous version kept as " + backups.front().filename().string()),
            std::string::npos)
      << applied.out;
  auto valid = oe({"validate", dir_.path().string()});
  EXPECT_EQ(valid.exit_code, 0) << valid.err;

  // oe diff lists the report with its counts.
  auto listed = oe({"diff", "--experience", dir_.path().string()});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find(run_id +
                            "  1 proposal(s) (1 valid, 0 do not apply, 0 fail "
                            "validation; 1 applied)  " +
                            report(run_id).string()),
            std::string::npos)
      << listed.out;
}

TEST_F(EvolveTest, NoProposalsGiveUpstreamsEmptyReport) {
  const std::string run_id = toolRun();
  answerWith(json::array());
  auto r = evolve(run_id, {}, serverEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(readFile(report(run_id)),
            "# Evolution Proposals for run `" + run_id +
                "`\n\nGenerated by OpenExpertise EvolutionAdvisor. Review each suggestion\nand "
                "`git apply` the diff blocks you accept; runtime never auto-applies.\n\n_No "
                "proposals generated for this run._\n");
  EXPECT_NE(r.out.find("\"proposalCount\":0"), std::string::npos) << r.out;
}

TEST_F(EvolveTest, ProposalsThatDoNotApplyOrValidateAreMarkedAndRefused) {
  const std::string run_id = toolRun();
  const std::string stale =
      "--- a/experience.yaml\n+++ b/experience.yaml\n@@ -11 +11 @@\n-      args: { limit: 3 }\n"
      "+      args: { limit: 4 }\n";
  const std::string breaking =
      "--- a/experience.yaml\n+++ b/experience.yaml\n@@ -12 +12 @@\n-      writes: [score]\n"
      "+      writes: [grade]\n";
  answerWith(json::array({proposal("tune-param", "Raise the limit", stale),
                          proposal("add-node", "Write a grade", breaking)}));
  auto r = evolve(run_id, {}, serverEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = readFile(report(run_id));
  EXPECT_NE(md.find("**oe verdict:** does not apply: hunk 1 (@@ -11 +11 @@) of experience.yaml "
                    "does not apply: line 11 is `      args: { threshold: 0.5 }`, the hunk "
                    "expects `      args: { limit: 3 }`"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("**oe verdict:** applies but fails `oe validate`: experience.yaml:12:"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("grade"), std::string::npos) << md;
  EXPECT_NE(r.out.find("verdicts: 0 valid, 1 do not apply, 1 fail validation"), std::string::npos)
      << r.out;

  for (const char* n : {"1", "2"}) {
    auto refused = evolve(run_id, {"--apply", n}, noProviderEnv());
    EXPECT_EQ(refused.exit_code, 1) << refused.out;
    EXPECT_NE(refused.err.find("is not applied"), std::string::npos) << refused.err;
  }
  EXPECT_EQ(readFile(dir_ / "experience.yaml"), std::string(kScoringYaml));
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    EXPECT_FALSE(entry.path().filename().string().starts_with("experience.yaml.bak-"));
  }
  auto out_of_range = evolve(run_id, {"--apply", "3"}, noProviderEnv());
  EXPECT_EQ(out_of_range.exit_code, 2);
  EXPECT_NE(out_of_range.err.find("has 2 proposal(s)"), std::string::npos) << out_of_range.err;
}

TEST_F(EvolveTest, ARecordingMadeWithLlmRecordReplaysOffline) {
  const std::string run_id = toolRun();
  answerWith(json::array({proposal("tune-param", "Tighten threshold", kScoringDiff)}));
  const auto recording = dir_.path() / "evolve.jsonl";
  auto recorded = evolve(run_id, {"--llm-record", recording.string()}, serverEnv());
  ASSERT_EQ(recorded.exit_code, 0) << recorded.err;
  const std::string first = readFile(report(run_id));
  std::filesystem::remove(report(run_id));

  auto replayed = evolve(run_id, {"--llm-replay", recording.string()}, noProviderEnv());
  ASSERT_EQ(replayed.exit_code, 0) << replayed.err;
  EXPECT_EQ(readFile(report(run_id)), first);
  EXPECT_EQ(server_.requestCount(), 1U) << "the replay asked no server";

  // A request the recording does not hold (another prompt) fails, naming the recording.
  dir_.write("other-prompt.md", "Propose nothing.");
  auto missed = evolve(
      run_id,
      {"--llm-replay", recording.string(), "--prompt", (dir_.path() / "other-prompt.md").string()},
      noProviderEnv());
  EXPECT_EQ(missed.exit_code, 1);
  EXPECT_NE(missed.err.find("no recorded LLM response"), std::string::npos) << missed.err;
}

TEST_F(EvolveTest, RunEvolveEvolvesASuccessfulRunAndOnlyWarnsWhenEvolveFails) {
  answerWith(json::array({proposal("tune-param", "Tighten threshold", kScoringDiff)}));
  auto r = oe({"run", dir_.path().string(), "--json", "--evolve"}, serverEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out);  // stdout stays one JSON document
  const std::string run_id = out["run_id"];
  EXPECT_TRUE(std::filesystem::exists(report(run_id))) << r.err;
  EXPECT_NE(r.err.find("evolution proposal written"), std::string::npos) << r.err;

  // No provider at all: the run succeeds, evolve fails with a warning.
  auto warned = oe({"run", dir_.path().string(), "--evolve"}, noProviderEnv());
  EXPECT_EQ(warned.exit_code, 0) << warned.err;
  EXPECT_NE(warned.err.find("oe: warning: --evolve: evolving run"), std::string::npos)
      << warned.err;
}

TEST_F(EvolveTest, EvaluateRunsAValidProposalsCopyAgainstTheRun) {
  // Two nodes: `load` is left alone by the proposal (a cache hit in the candidate run), `score`
  // echoes its threshold, so the candidate's final state differs from the run's.
  writeExecutable("tools/load.sh",
                  "#!/bin/sh\ncat >/dev/null\necho '{\"state_delta\":{\"n\":3}}'\n");
  writeExecutable("tools/echo.py",
                  "#!/usr/bin/env python3\nimport json, sys\nargs = json.load(sys.stdin)\n"
                  "print(json.dumps({'state_delta': {'score': args['threshold']}}))\n");
  writeExperience(R"(name: scoring
version: 0.1.0
state:
  schema:
    n: { type: number }
    score: { type: number }
graph:
  nodes:
    - { id: load, kind: tool, impl: ./tools/load.sh, writes: [n] }
    - id: score
      kind: tool
      impl: ./tools/echo.py
      args: { threshold: 0.5 }
      writes: [score]
  edges:
    - { from: load, to: score }
)");
  const std::string run_id = toolRun();
  const std::string diff =
      "--- a/experience.yaml\n+++ b/experience.yaml\n@@ -12,3 +12,3 @@\n"
      "       impl: ./tools/echo.py\n-      args: { threshold: 0.5 }\n"
      "+      args: { threshold: 0.7 }\n       writes: [score]\n";
  answerWith(json::array({proposal("tune-param", "Tighten threshold", diff),
                          proposal("tune-param", "Stale", "not a diff")}));
  auto r = evolve(run_id, {"--evaluate"}, serverEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = readFile(report(run_id));
  EXPECT_NE(md.find("**oe evaluation:** success (run "), std::string::npos) << md;
  EXPECT_NE(md.find(": 1 ran, 1 cached, 0 failed)"), std::string::npos) << md;
  EXPECT_NE(md.find("tokens 0 -> 0, cost $0.0000 -> $0.0000; state: score 0.5 -> 0.7"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("**oe evaluation:**", md.find("## 2.")), std::string::npos)
      << "a proposal that does not apply is not run";
  const json sidecar =
      json::parse(readFile(dir_ / ".openexpertise" / "evolution" / (run_id + ".json")));
  const json& evaluation = sidecar["proposals"][0]["evaluation"];
  EXPECT_EQ(evaluation["status"], "success");
  EXPECT_EQ(evaluation["nodes"]["cached"], 1);
  EXPECT_EQ(
      evaluation["state_changes"],
      json::array(
          {{{"field", "score"}, {"baseline", 0.5}, {"candidate", 0.7}, {"baseline_known", true}}}));
  EXPECT_TRUE(
      std::filesystem::exists(evaluation["folder"].get<std::string>() + "/experience.yaml"));
  EXPECT_NE(readFile(dir_ / "experience.yaml").find("threshold: 0.5"), std::string::npos)
      << "evaluating changes a copy only";
}

// --evaluate-runs: the proposal is run with the args of each of the newest finished runs whose
// args differ (an input set), each run's evidence on an evaluation line of its own.
TEST_F(EvolveTest, EvaluateRunsCoverThePastRunsWithOtherArgs) {
  writeExecutable("tools/echo.py",
                  "#!/usr/bin/env python3\nimport json, sys\nargs = json.load(sys.stdin)\n"
                  "print(json.dumps({'state_delta': {'score': args['threshold'] * "
                  "args.get('scale', 1)}}))\n");
  writeExperience(R"(name: scoring
version: 0.1.0
state:
  schema:
    score: { type: number }
graph:
  nodes:
    - id: score
      kind: tool
      impl: ./tools/echo.py
      args: { threshold: 0.5 }
      writes: [score]
  edges: []
)");
  int code = -1;
  runJson({"--args", R"({"scale": 2})"}, &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  runJson({"--args", R"({"scale": 2})"}, &code);  // the same inputs again: not a new case
  ASSERT_EQ(code, 0) << last_stderr_;
  const std::string run_id = toolRun();  // no args: the evaluated run
  const std::string diff =
      "--- a/experience.yaml\n+++ b/experience.yaml\n@@ -9,3 +9,3 @@\n"
      "       impl: ./tools/echo.py\n-      args: { threshold: 0.5 }\n"
      "+      args: { threshold: 0.7 }\n       writes: [score]\n";
  answerWith(json::array({proposal("tune-param", "Tighten threshold", diff)}));
  auto r = evolve(run_id, {"--evaluate", "--evaluate-runs", "5"}, serverEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = readFile(report(run_id));
  EXPECT_NE(md.find("**oe evaluation:** with the args of run " + run_id + ": success"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("state: score 0.5 -> 0.7"), std::string::npos) << md;
  EXPECT_NE(md.find("state: score 1.0 -> 1.4"), std::string::npos) << md;
  const json sidecar =
      json::parse(readFile(dir_ / ".openexpertise" / "evolution" / (run_id + ".json")));
  const json& evaluations = sidecar["proposals"][0]["evaluation"];
  ASSERT_TRUE(evaluations.is_array()) << sidecar.dump(2);
  ASSERT_EQ(evaluations.size(), 2U) << "two distinct inputs among three runs";
  EXPECT_EQ(evaluations[0]["input_run"], run_id);
  EXPECT_NE(evaluations[1]["input_run"], run_id);
}

TEST_F(EvolveTest, TheKindWorksAsAGraphNodeWritingItsProposals) {
  writeExperience(R"(name: advisor-node
version: 0.1.0
state:
  schema:
    yaml: { type: string }
    proposals: { type: array }
graph:
  nodes:
    - { id: load, kind: tool, impl: ./tools/load.sh, writes: [yaml] }
    - id: advise
      kind: evolution
      reads: [yaml]
      max_tokens: 1000
      args: { experience_yaml: $.yaml, run_events: [], state_diff: [], run_id: none }
      writes: [proposals]
  edges:
    - { from: load, to: advise }
)");
  writeExecutable("tools/load.sh",
                  "#!/bin/sh\ncat >/dev/null\necho '{\"state_delta\":{\"yaml\":\"name: x\"}}'\n");
  answerWith(json::array({proposal("add-node", "Add a check", "--- a/x\n+++ b/x")}));
  auto r = oe({"run", dir_.path().string(), "--json"}, serverEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out);
  ASSERT_EQ(out["final_state"]["proposals"].size(), 1U) << r.out;
  EXPECT_EQ(out["final_state"]["proposals"][0]["title"], "Add a check");
  const json body = server_.requests().front().json();
  EXPECT_EQ(body["max_tokens"], 1000);
  EXPECT_EQ(json::parse(body["messages"][1]["content"].get<std::string>())["experience_yaml"],
            "name: x");
}

TEST_F(EvolveTest, MissingYamlOrRunLogExitsOne) {
  auto no_runs = evolve("nope", {}, noProviderEnv());
  EXPECT_EQ(no_runs.exit_code, 1);
  EXPECT_NE(no_runs.err.find("no runs yet"), std::string::npos) << no_runs.err;
  toolRun();
  auto no_run = evolve("nope", {}, noProviderEnv());
  EXPECT_EQ(no_run.exit_code, 1);
  EXPECT_NE(no_run.err.find("no run \"nope\""), std::string::npos) << no_run.err;
  auto no_yaml = oe({"evolve", "x", "--experience", (dir_.path() / "missing").string()});
  EXPECT_EQ(no_yaml.exit_code, 1);
  EXPECT_NE(no_yaml.err.find("experience.yaml not found at"), std::string::npos) << no_yaml.err;
  auto empty = oe({"diff", "--experience", dir_.path().string()});
  EXPECT_EQ(empty.exit_code, 0);
  EXPECT_NE(empty.out.find("no evolution proposals in"), std::string::npos) << empty.out;
}

TEST_F(EvolveTest, TheExampleEvolvesOfflineFromItsShippedRecording) {
  // examples/evolve-demo ships a run's log and the recording of `oe evolve` on it.
  const auto source = std::filesystem::path(OE_SOURCE_DIR) / "examples" / "evolve-demo";
  std::filesystem::remove(dir_ / "experience.yaml");
  std::filesystem::copy(
      source, dir_.path(),
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
  auto r = oe({"evolve", "--last", "--experience", dir_.path().string(), "--llm-replay",
               (dir_.path() / "llm-recording.jsonl").string(), "--evaluate"},
              noProviderEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::filesystem::path> reports;
  for (const auto& entry :
       std::filesystem::directory_iterator(dir_.path() / ".openexpertise" / "evolution")) {
    if (entry.path().extension() == ".md") {
      reports.push_back(entry.path());
    }
  }
  ASSERT_EQ(reports.size(), 1U);
  const std::string md = readFile(reports.front());
  EXPECT_NE(md.find("## 1. Raise the pass threshold _(tune-param, confidence: high)_"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("**oe verdict:** applies cleanly and passes `oe validate`"), std::string::npos)
      << md;
  EXPECT_NE(md.find("**oe verdict:** does not apply: the diff is a JSON array of rows"),
            std::string::npos)
      << md;
  // The shipped run has no state store (and no cache) with it: both nodes run, and the
  // run's values are unknown ("?").
  EXPECT_NE(md.find("**oe evaluation:** success (run "), std::string::npos) << md;
  EXPECT_NE(md.find("state: scores ? -> [0.92,0.12,0.64], passed ? -> 2"), std::string::npos) << md;
  auto applied = oe({"evolve", "--last", "--experience", dir_.path().string(), "--apply", "1"},
                    noProviderEnv());
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  auto run = runJson();
  EXPECT_EQ(run["status"], "success") << last_stderr_;
  EXPECT_EQ(run["final_state"]["passed"], 2) << "the threshold went from 0.1 to 0.5";
}

}  // namespace
}  // namespace oe::test

// The pure readers of CLI output and the provider command lines (white box: compiled in).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_output.hpp"
#include "command.hpp"
#include "llm_kit/output_schema.hpp"

namespace oe::cliagent {
namespace {

Json parsed(std::string_view stdout_text, const llmkit::OutputSchema* schema = nullptr) {
  OutputSpec spec{true, {}, schema, "n"};
  auto result = parseOutput(stdout_text, spec);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.failure().message);
  return result.ok() ? *result : Json();
}

std::string parseError(std::string_view stdout_text, const llmkit::OutputSchema* schema = nullptr) {
  OutputSpec spec{true, {}, schema, "n"};
  auto result = parseOutput(stdout_text, spec);
  EXPECT_FALSE(result.ok());
  return result.ok() ? std::string() : result.failure().message;
}

TEST(ParseOutput, TextModeKeepsStdoutRaw) {
  OutputSpec one{false, {"answer"}, nullptr, "n"};
  EXPECT_EQ(parseOutput("  the answer\n", one).value(), (Json{{"answer", "  the answer\n"}}));
  OutputSpec none{false, {}, nullptr, "n"};
  EXPECT_EQ(parseOutput("ignored", none).value(), Json::object());
}

TEST(ParseOutput, ClaudeEnvelopeIsUnwrapped) {
  EXPECT_EQ(parsed(R"({"type":"result","subtype":"success","is_error":false,)"
                   R"("result":"{\"security_findings\":[{\"id\":1}]}"})"),
            Json::parse(R"({"security_findings":[{"id":1}]})"));
}

TEST(ParseOutput, FencedBlocksAreStripped) {
  EXPECT_EQ(parsed("```json\n{\"a\":1,\"b\":2}\n```"), (Json{{"a", 1}, {"b", 2}}));
  EXPECT_EQ(parsed("Sure:\n```\n{\"a\":1}\n```\nbye"), (Json{{"a", 1}}));
  EXPECT_EQ(parsed(R"({"type":"result","result":"```json\n{\"security_findings\": []}\n```"})"),
            (Json{{"security_findings", Json::array()}}));
}

TEST(ParseOutput, NotJsonSaysSoWithTheStartOfStdout) {
  const std::string message = parseError("not json");
  EXPECT_NE(message.find("cli-agent for node \"n\" was configured with `output_format: json` but "
                         "stdout is not valid JSON"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("First 200 chars: 'not json'"), std::string::npos) << message;
}

TEST(ParseOutput, SchemaFailureAndNonObjects) {
  auto schema = llmkit::OutputSchema::compile(
      nlohmann::json::parse(R"({"type":"object","properties":{"n":{"type":"number"}}})"));
  ASSERT_TRUE(schema.ok());
  const std::string message = parseError(R"({"n":"oops"})", schema->get());
  EXPECT_NE(message.find("cli-agent for node \"n\": parsed JSON output failed schema validation: "
                         "/n: "),
            std::string::npos)
      << message;
  EXPECT_NE(parseError("[1,2]").find("JSON output must be a plain object (got object)"),
            std::string::npos);
  EXPECT_NE(parseError("42").find("(got number)"), std::string::npos);
}

TEST(ExtractJsonCandidate, EdgeCases) {
  EXPECT_EQ(extractJsonCandidate("  {\"a\":1}  "), "{\"a\":1}");
  EXPECT_EQ(extractJsonCandidate("```json```"), "```json```");  // an empty fence is no fence
  EXPECT_EQ(extractJsonCandidate("``` open only"), "``` open only");
  EXPECT_EQ(extractJsonCandidate(R"({"result":5})"), R"({"result":5})");
  EXPECT_EQ(extractJsonCandidate(""), "");
}

TEST(ResultEnvelope, ReadsErrorUsageAndModel) {
  auto envelope = parseResultEnvelope(
      R"({"type":"result","subtype":"success","is_error":true,"result":"Invalid API key",)"
      R"("api_error_status":401,"terminal_reason":"api_error","total_cost_usd":0.5,)"
      R"("usage":{"input_tokens":3,"output_tokens":4},"modelUsage":{"m1":{}}})");
  ASSERT_TRUE(envelope);
  EXPECT_TRUE(envelope->is_error);
  EXPECT_EQ(envelope->result, "Invalid API key");
  EXPECT_EQ(envelope->api_error_status, 401);
  EXPECT_EQ(envelope->terminal_reason, "api_error");
  EXPECT_TRUE(envelope->has_usage);
  EXPECT_EQ(envelope->input_tokens, 3);
  EXPECT_EQ(envelope->output_tokens, 4);
  EXPECT_EQ(envelope->cost_usd, 0.5);
  EXPECT_EQ(envelope->model, "m1");
  EXPECT_FALSE(parseResultEnvelope(R"({"type":"assistant"})"));
  EXPECT_FALSE(parseResultEnvelope("plain text"));
}

TEST(StreamLine, ToolUsesMessagesAndResult) {
  auto init = parseStreamLine(R"({"type":"system","subtype":"init","model":"m"})");
  EXPECT_EQ(init.activities, std::vector<std::string>{"session started (model m)"});
  auto assistant = parseStreamLine(
      R"({"type":"assistant","message":{"content":[{"type":"text","text":"hi\nthere"},)"
      R"({"type":"tool_use","name":"Bash","input":{"command":"make test"}},)"
      R"({"type":"tool_use","name":"Glob","input":{}}]}})");
  EXPECT_EQ(assistant.activities,
            (std::vector<std::string>{"message: hi there", "tool: Bash make test", "tool: Glob"}));
  EXPECT_TRUE(parseStreamLine(R"({"type":"user","message":{}})").activities.empty());
  auto result = parseStreamLine(R"({"type":"result","is_error":false,"result":"done"})");
  ASSERT_TRUE(result.result);
  EXPECT_EQ(result.result->result, "done");
  EXPECT_TRUE(parseStreamLine("{not json").activities.empty());
}

// Feeds `lines` to a reader and returns every activity it reported, in order.
std::vector<std::string> readAll(StreamReader& reader, const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const std::string& line : lines) {
    for (std::string& activity : reader.line(line)) {
      out.push_back(std::move(activity));
    }
  }
  return out;
}

// What codex exec --json 0.169 prints for a turn that ran a command and edited a file, with a
// warning item, an event type it does not know yet, garbage and a half line among them.
const std::vector<std::string> kCodexTurn = {
    R"({"type":"thread.started","thread_id":"01a20c02-2314"})",
    R"({"type":"turn.started"})",
    R"({"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Plan**"}})",
    R"({"type":"item.started","item":{"id":"item_1","type":"command_execution",)"
    R"("command":"bash -lc 'make test'","aggregated_output":"","exit_code":null,)"
    R"("status":"in_progress"}})",
    R"({"type":"item.completed","item":{"id":"item_1","type":"command_execution",)"
    R"("command":"bash -lc 'make test'","aggregated_output":"ok\n","exit_code":0,)"
    R"("status":"completed"}})",
    R"({"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":)"
    R"([{"path":"src/a.c","kind":"update"},{"path":"src/b.c","kind":"add"}]}})",
    R"({"type":"item.completed","item":{"id":"item_3","type":"error",)"
    R"("message":"Model metadata for `gpt-fake` not found"}})",
    R"({"type":"item.completed","item":{"id":"item_4","type":"mcp_tool_call","server":"gh",)"
    R"("tool":"search","status":"completed"}})",
    R"(not json at all)",
    R"({"type":"item.completed","item":{"id":"item_5","type":"agent)",
    R"({"type":"session.configured","whatever":[1,2]})",
    R"([1,2,3])",
    R"({"type":"item.completed","item":{"id":"item_6","type":"agent_message",)"
    R"("text":"Tests pass.\nDone"}})",
    R"({"type":"turn.completed","usage":{"input_tokens":200,"cached_input_tokens":50,)"
    R"("output_tokens":9,"reasoning_output_tokens":3}})",
};

TEST(CodexStream, ItemsBecomeActivitiesAndTheTurnTheAnswer) {
  StreamReader reader(StreamFormat::kCodex);
  EXPECT_EQ(readAll(reader, kCodexTurn),
            (std::vector<std::string>{"session started", "tool: shell bash -lc 'make test'",
                                      "tool: edit src/a.c, src/b.c",
                                      "warning: Model metadata for `gpt-fake` not found",
                                      "tool: gh.search", "message: Tests pass. Done"}))
      << "a command shows once, when it starts";
  const auto result = reader.result();
  ASSERT_TRUE(result);
  EXPECT_FALSE(result->is_error) << "an error item is a warning, not a failed turn";
  EXPECT_EQ(result->result, "Tests pass.\nDone");
  EXPECT_TRUE(result->has_usage);
  EXPECT_EQ(result->input_tokens, 200);
  EXPECT_EQ(result->output_tokens, 9);
}

TEST(CodexStream, AFailedOrUnfinishedTurn) {
  StreamReader failed(StreamFormat::kCodex);
  EXPECT_EQ(readAll(failed, {R"({"type":"thread.started","thread_id":"t"})",
                             R"j({"type":"error","message":"Reconnecting... 1/5 (429)"})j",
                             R"({"type":"turn.failed","error":{"message":"429 Too Many"}})"}),
            (std::vector<std::string>{"session started", "error: Reconnecting... 1/5 (429)"}));
  ASSERT_TRUE(failed.result());
  EXPECT_TRUE(failed.result()->is_error);
  EXPECT_EQ(failed.result()->result, "429 Too Many");
  EXPECT_FALSE(failed.result()->has_usage);

  StreamReader killed(StreamFormat::kCodex);  // SIGTERM: no turn.* event at all
  readAll(killed, {R"({"type":"thread.started","thread_id":"t"})", R"({"type":"turn.started"})"});
  EXPECT_FALSE(killed.result());

  const CodexEvent odd = parseCodexLine(R"({"type":"turn.completed","usage":"lots"})");
  EXPECT_TRUE(odd.turn_completed);
  EXPECT_EQ(odd.input_tokens, 0);
  EXPECT_TRUE(parseCodexLine(R"({"type":"item.completed","item":7})").activities.empty());
  EXPECT_TRUE(parseCodexLine("").activities.empty());
}

// gemini --output-format stream-json 0.61: the answer comes in chunks; tool uses in between.
TEST(GeminiStream, ChunksToolsAndStats) {
  StreamReader reader(StreamFormat::kGemini);
  const std::vector<std::string> activities = readAll(
      reader,
      {R"({"type":"init","timestamp":"2026-11-25T10:00:00Z","session_id":"g","model":"gem-2"})",
       R"({"type":"message","role":"user","content":"review it"})",
       R"({"type":"message","role":"assistant","content":"Let me ","delta":true})",
       R"({"type":"message","role":"assistant","content":"look.","delta":true})",
       R"({"type":"tool_use","tool_name":"run_shell_command","tool_id":"t1",)"
       R"("parameters":{"command":"ls -la"}})",
       R"({"type":"tool_result","tool_id":"t1","status":"success","output":"a"})",
       R"({"type":"message","role":"assistant","content":" All good)",
       R"({"type":"error","severity":"warning","message":"Loop detected"})",
       R"({"type":"a-new-event","x":{}})",
       R"({"type":"message","role":"assistant","content":" All good.","delta":true})",
       R"({"type":"result","status":"success","stats":{"total_tokens":340,)"
       R"("input_tokens":300,"output_tokens":40,"cached":0,"tool_calls":1}})"});
  EXPECT_EQ(activities,
            (std::vector<std::string>{"session started (model gem-2)", "message: Let me look.",
                                      "tool: run_shell_command ls -la", "warning: Loop detected",
                                      "message: All good."}));
  const auto result = reader.result();
  ASSERT_TRUE(result);
  EXPECT_FALSE(result->is_error);
  EXPECT_EQ(result->result, "Let me look. All good.");
  EXPECT_EQ(result->input_tokens, 300);
  EXPECT_EQ(result->output_tokens, 40);
  EXPECT_EQ(result->model, "gem-2");
}

TEST(GeminiStream, AnErrorResultAndNoResult) {
  StreamReader failed(StreamFormat::kGemini);
  readAll(failed, {R"({"type":"result","status":"error","error":{"type":"ApiError",)"
                   R"("message":"Resource has been exhausted"},"stats":{"input_tokens":5}})"});
  ASSERT_TRUE(failed.result());
  EXPECT_TRUE(failed.result()->is_error);
  EXPECT_EQ(failed.result()->result, "Resource has been exhausted");
  EXPECT_EQ(failed.result()->input_tokens, 5);

  StreamReader cut(StreamFormat::kGemini);
  readAll(cut, {R"({"type":"init","model":"m"})", R"({"type":"message","role":"assist)"});
  EXPECT_FALSE(cut.result());
  const GeminiEvent odd = parseGeminiLine(R"({"type":"tool_use","parameters":"x"})");
  EXPECT_EQ(odd.activities, std::vector<std::string>{"tool: ?"});
}

TEST(LineSplitter, LinesSurviveAnyChunking) {
  LineSplitter splitter(1024);
  EXPECT_TRUE(splitter.feed("{\"a\"").empty());
  EXPECT_EQ(splitter.feed(":1}\r\n{\"b\":2}\n{\"c\""),
            (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
  EXPECT_EQ(splitter.finish(), "{\"c\"");
  EXPECT_FALSE(splitter.finish());
}

TEST(LineSplitter, OverlongLinesAreDroppedWhole) {
  LineSplitter splitter(4);
  EXPECT_EQ(splitter.feed("abcdefgh\nok\n"), std::vector<std::string>{"ok"});
  EXPECT_EQ(splitter.dropped(), 1U);
  EXPECT_TRUE(splitter.feed("abc").empty());
  EXPECT_TRUE(splitter.feed("de").empty());
  EXPECT_EQ(splitter.feed("\nx\n"), std::vector<std::string>{"x"});
}

TEST(ClassifyFailure, RateLimitsOverloadsAndTheRest) {
  EXPECT_EQ(classifyFailure(1, "", "429 Too Many Requests", nullptr), FailureKind::kRateLimited);
  EXPECT_EQ(classifyFailure(173, "", "", nullptr), FailureKind::kRateLimited);
  EXPECT_EQ(classifyFailure(1, "", "Error: Rate limit reached", nullptr),
            FailureKind::kRateLimited);
  EXPECT_EQ(classifyFailure(1, "", "overloaded_error", nullptr), FailureKind::kOverloaded);
  EXPECT_EQ(classifyFailure(1, "", "boom", nullptr), FailureKind::kOther);
  EXPECT_EQ(classifyFailure(1, "", "line 14290 failed", nullptr), FailureKind::kOther);
  ResultEnvelope envelope;
  envelope.api_error_status = 529;
  EXPECT_EQ(classifyFailure(1, "", "", &envelope), FailureKind::kOverloaded);
}

TEST(Command, UpstreamCommandLines) {
  CommandSpec spec;
  spec.prompt = "P";
  spec.model = "m";
  spec.extra_args = {"--x"};
  spec.provider = Provider::kClaudeCode;
  EXPECT_EQ(buildArgv(spec), (std::vector<std::string>{"claude", "-p", "P", "--output-format",
                                                       "text", "--model", "m", "--x"}));
  spec.json = true;
  EXPECT_EQ(buildArgv(spec).at(4), "json");
  spec.provider = Provider::kCodex;
  EXPECT_EQ(buildArgv(spec), (std::vector<std::string>{"codex", "exec", "--skip-git-repo-check",
                                                       "--model", "m", "--x", "P"}));
  spec.provider = Provider::kGemini;
  EXPECT_EQ(buildArgv(spec),
            (std::vector<std::string>{"gemini", "--yolo", "--prompt", "P", "--model", "m", "--x"}));
  // stream: each CLI's JSON events, the rest of upstream's command line unchanged.
  spec.stream = true;
  EXPECT_EQ(buildArgv(spec),
            (std::vector<std::string>{"gemini", "--yolo", "--output-format", "stream-json",
                                      "--prompt", "P", "--model", "m", "--x"}));
  spec.provider = Provider::kCodex;
  EXPECT_EQ(buildArgv(spec), (std::vector<std::string>{"codex", "exec", "--skip-git-repo-check",
                                                       "--json", "--model", "m", "--x", "P"}));
  spec.provider = Provider::kClaudeCode;
  EXPECT_EQ(buildArgv(spec),
            (std::vector<std::string>{"claude", "-p", "P", "--output-format", "stream-json",
                                      "--verbose", "--model", "m", "--x"}));
  spec.stream = false;
  spec.provider = Provider::kGemini;
  spec.prompt_on_stdin = true;
  EXPECT_EQ(buildArgv(spec), (std::vector<std::string>{"gemini", "--yolo", "--model", "m", "--x"}));
  spec.provider = Provider::kCodex;
  EXPECT_EQ(buildArgv(spec).back(), "-");
}

TEST(Utf8Prefix, NeverSplitsASequence) {
  EXPECT_EQ(utf8Prefix("h\xC3\xA9llo", 2), "h");
  EXPECT_EQ(utf8Prefix("abc", 10), "abc");
}

}  // namespace
}  // namespace oe::cliagent

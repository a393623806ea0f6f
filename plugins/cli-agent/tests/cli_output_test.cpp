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
  auto schema = llmkit::OutputSchema::compile(nlohmann::json::parse(
      R"({"type":"object","properties":{"n":{"type":"number"}}})"));
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

TEST(LineSplitter, LinesSurviveAnyChunking) {
  LineSplitter splitter(1024);
  EXPECT_TRUE(splitter.feed("{\"a\"").empty());
  EXPECT_EQ(splitter.feed(":1}\r\n{\"b\":2}\n{\"c\""), (std::vector<std::string>{
                                                          "{\"a\":1}", "{\"b\":2}"}));
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
  EXPECT_EQ(buildArgv(spec), (std::vector<std::string>{"gemini", "--yolo", "--prompt", "P",
                                                       "--model", "m", "--x"}));
  spec.prompt_on_stdin = true;
  EXPECT_EQ(buildArgv(spec),
            (std::vector<std::string>{"gemini", "--yolo", "--model", "m", "--x"}));
  spec.provider = Provider::kCodex;
  EXPECT_EQ(buildArgv(spec).back(), "-");
}

TEST(Utf8Prefix, NeverSplitsASequence) {
  EXPECT_EQ(utf8Prefix("h\xC3\xA9llo", 2), "h");
  EXPECT_EQ(utf8Prefix("abc", 10), "abc");
}

}  // namespace
}  // namespace oe::cliagent

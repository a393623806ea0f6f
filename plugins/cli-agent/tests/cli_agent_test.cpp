// The cli-agent kind driven through the real ABI against fake CLIs that behave like the real
// ones: upstream's command lines and parse rules, and oe's process-group kills, stall watchdog,
// retryable statuses and Claude's live progress.
#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include "cli_agent_test_fixture.hpp"
#include "support/process.hpp"

namespace oe::cliagent::test {
namespace {

using oe::test::CallResult;
using oe::test::CreateResult;
using Json = CliAgentTest::Json;
using Clock = std::chrono::steady_clock;

std::vector<std::string> argvOf(const Json& record) {
  return record["argv"].get<std::vector<std::string>>();
}

TEST_F(CliAgentTest, ClaudeTextAnswerGoesToTheWritesField) {
  oe_node* node = create(cliNode("ask", "claude-code", "text please", {"answer"}));
  const Json response = responseOf(call(node, "ask"));
  EXPECT_EQ(response["state_delta"], (Json{{"answer", "the answer"}}));
  const auto runs = records();
  ASSERT_EQ(runs.size(), 1U);
  EXPECT_EQ(runs[0]["cli"], "claude");
  EXPECT_EQ(argvOf(runs[0]),
            (std::vector<std::string>{"-p", "text please", "--output-format", "text"}));
  EXPECT_EQ(runs[0]["stdin"], "") << "stdin is closed at once";
  const auto seen = activities();
  ASSERT_GE(seen.size(), 2U);
  EXPECT_EQ(seen.front(), "spawning claude-code (timeout 600000ms)");
  EXPECT_EQ(seen.back(), "parsing text output");
  EXPECT_EQ(eventCount("node.tokens"), 0U) << "text output carries no usage";
}

TEST_F(CliAgentTest, CodexJsonOutputIsCheckedAgainstTheSchema) {
  const Json schema = Json::parse(
      R"({"type":"object","required":["findings"],"properties":{"findings":{"type":"array"}}})");
  oe_node* node = create(cliNode("review", "codex", "json findings", {"findings"},
                                 {{"output_format", "json"},
                                  {"schema", schema},
                                  {"model", "gpt-fake"},
                                  {"extra_args", {"--sandbox", "read-only"}}}));
  const Json response = responseOf(call(node, "review"));
  EXPECT_EQ(response["state_delta"]["findings"][0], (Json{{"title", "x"}, {"severity", "high"}}));
  EXPECT_EQ(argvOf(records().at(0)),
            (std::vector<std::string>{"exec", "--skip-git-repo-check", "--model", "gpt-fake",
                                      "--sandbox", "read-only", "json findings"}));
  EXPECT_EQ(activities().back(), "parsing JSON output");
}

TEST_F(CliAgentTest, GeminiCommandLineAndEnvironment) {
  oe_node* node = create(cliNode("g", "gemini", "env", {"out"},
                                 {{"model", "gemini-fake"}, {"env", {{"FAKE_VAR", "from-node"}}}}));
  const Json response = responseOf(call(node, "g"));
  const Json printed = Json::parse(response["state_delta"]["out"].get<std::string>());
  EXPECT_EQ(printed["FAKE_VAR"], "from-node");
  EXPECT_EQ(printed["GEMINI_CLI_TRUST_WORKSPACE"], "true") << "else gemini exits 55 headless";
  EXPECT_EQ(argvOf(records().at(0)),
            (std::vector<std::string>{"--yolo", "--prompt", "env", "--model", "gemini-fake"}));
}

TEST_F(CliAgentTest, PromptPlaceholdersAreFilledFromArgs) {
  oe_node* node = create(cliNode("r", "claude-code", "review: {{diff}}", {"answer"}));
  responseOf(call(node, "r", Json{{"diff", "PR-123"}}));
  EXPECT_EQ(argvOf(records().at(0)).at(1), "review: PR-123");
}

TEST_F(CliAgentTest, NonZeroExitNamesTheCodeAndStderr) {
  oe_node* node = create(cliNode("b", "claude-code", "boom", {"answer"}));
  const CallResult result = call(node, "b");
  EXPECT_EQ(result.status, OE_UNKNOWN);
  EXPECT_EQ(result.error,
            "cli-agent \"b\" (provider=claude-code) exited with exit code 1. stderr: boom\n");
}

TEST_F(CliAgentTest, WorkdirIsRelativeToTheExperience) {
  std::filesystem::create_directory(dir_.path() / "sub");
  oe_node* node = create(cliNode("w", "codex", "pwd", {"cwd"}, {{"workdir", "./sub"}}));
  const Json response = responseOf(call(node, "w"));
  EXPECT_TRUE(response["state_delta"]["cwd"].get<std::string>().ends_with("/sub"));

  oe_node* missing = create(cliNode("m", "codex", "pwd", {"cwd"}, {{"workdir", "nope"}}));
  const CallResult result = call(missing, "m");
  EXPECT_EQ(result.status, OE_NOT_FOUND);
  EXPECT_NE(result.error.find("workdir"), std::string::npos) << result.error;
}

TEST_F(CliAgentTest, ClaudeEnvelopeIsUnwrappedAndItsUsageBecomesNodeTokens) {
  oe_node* node = create(cliNode("sec", "claude-code", "envelope", {"security_findings"},
                                 {{"output_format", "json"}}));
  const Json response = responseOf(call(node, "sec"));
  EXPECT_EQ(response["state_delta"], (Json{{"security_findings", Json::array()}}));
  EXPECT_EQ(response["metrics"]["tokens_in"], 120);
  EXPECT_EQ(response["metrics"]["tokens_out"], 7);
  EXPECT_EQ(argvOf(records().at(0)),
            (std::vector<std::string>{"-p", "envelope", "--output-format", "json"}));
  const auto tokens = eventsOf("node.tokens");
  ASSERT_EQ(tokens.size(), 1U);
  EXPECT_EQ(tokens[0].fields["input_tokens"], 120);
  EXPECT_EQ(tokens[0].fields["output_tokens"], 7);
  EXPECT_EQ(tokens[0].fields["model"], "claude-fake-4");
  EXPECT_EQ(tokens[0].fields["provider"], "claude-code");
  EXPECT_DOUBLE_EQ(tokens[0].fields["cost_usd"].get<double>(), 0.00062);
}

TEST_F(CliAgentTest, ClaudeIsErrorWithExitOneIsARetryableRateLimit) {
  oe_node* node =
      create(cliNode("e", "claude-code", "envelope-error", {"x"}, {{"output_format", "json"}}));
  const CallResult result = call(node, "e");
  EXPECT_EQ(result.status, OE_RESOURCE_EXHAUSTED) << result.error;
  EXPECT_NE(result.error.find("exited with exit code 1"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("Request rejected (429)"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("api_error_status 429"), std::string::npos) << result.error;
}

TEST_F(CliAgentTest, ClaudeIsErrorWithExitZeroStillFails) {
  oe_node* node = create(
      cliNode("e0", "claude-code", "envelope-error-exit0", {"x"}, {{"output_format", "json"}}));
  const CallResult result = call(node, "e0");
  EXPECT_EQ(result.status, OE_UNKNOWN);
  EXPECT_NE(result.error.find("is_error"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("Invalid API key"), std::string::npos) << result.error;
}

TEST_F(CliAgentTest, StreamJsonBecomesLiveActivityAndTokens) {
  oe_node* node = create(cliNode("s", "claude-code", "stream", {"summary"},
                                 {{"output_format", "json"}, {"stream", true}}));
  const Json response = responseOf(call(node, "s"));
  EXPECT_EQ(response["state_delta"], (Json{{"summary", "one file"}}));
  EXPECT_EQ(argvOf(records().at(0)), (std::vector<std::string>{"-p", "stream", "--output-format",
                                                               "stream-json", "--verbose"}));
  const std::vector<std::string> expected{"spawning claude-code (timeout 600000ms)",
                                          "session started (model claude-fake-4)",
                                          "message: Let me look at the files.",
                                          "tool: Bash ls -la",
                                          "tool: Read a.txt",
                                          "parsing JSON output"};
  EXPECT_EQ(activities(), expected);
  ASSERT_EQ(eventCount("node.tokens"), 1U);
}

// Codex's --json events (opt-in: upstream's command line has no --json): items as activity,
// the last agent message as the answer, turn.completed's usage as node.tokens.
TEST_F(CliAgentTest, CodexJsonEventsBecomeActivityAndTokens) {
  oe_node* node = create(
      cliNode("c", "codex", "stream", {"summary"}, {{"output_format", "json"}, {"stream", true}}));
  const Json response = responseOf(call(node, "c"));
  EXPECT_EQ(response["state_delta"], (Json{{"summary", "one file"}}));
  EXPECT_EQ(argvOf(records().at(0)),
            (std::vector<std::string>{"exec", "--skip-git-repo-check", "--json", "stream"}));
  const std::vector<std::string> expected{"spawning codex (timeout 600000ms)",
                                          "session started",
                                          "tool: shell bash -lc ls",
                                          "tool: edit a.txt",
                                          "warning: Model metadata for `gpt-fake` not found",
                                          "message: {\"summary\": \"one file\"}",
                                          "parsing JSON output"};
  EXPECT_EQ(activities(), expected);
  const auto tokens = eventsOf("node.tokens");
  ASSERT_EQ(tokens.size(), 1U);
  const auto& fields = tokens[0].fields;
  EXPECT_EQ(fields["input_tokens"], 200);
  EXPECT_EQ(fields["output_tokens"], 9);
  EXPECT_EQ(fields["provider"], "codex");
  EXPECT_EQ(response["metrics"]["tokens_in"], 200);
}

TEST_F(CliAgentTest, CodexTurnFailedIsTheNodesError) {
  oe_node* node = create(cliNode("c", "codex", "stream-fail", {"out"}, {{"stream", true}}));
  const CallResult result = call(node, "c");
  EXPECT_EQ(result.status, OE_RESOURCE_EXHAUSTED) << result.error;
  EXPECT_NE(result.error.find("the CLI reported: unexpected status 429 Too Many Requests"),
            std::string::npos)
      << result.error;
}

// Gemini's stream-json (opt-in too): the assistant's chunks are the answer, the result's stats
// the usage, the init event's model the model.
TEST_F(CliAgentTest, GeminiStreamJsonBecomesActivityAndTokens) {
  oe_node* node = create(
      cliNode("g", "gemini", "stream", {"summary"}, {{"output_format", "json"}, {"stream", true}}));
  const Json response = responseOf(call(node, "g"));
  EXPECT_EQ(response["state_delta"], (Json{{"summary", "one file"}}));
  EXPECT_EQ(
      argvOf(records().at(0)),
      (std::vector<std::string>{"--yolo", "--output-format", "stream-json", "--prompt", "stream"}));
  const std::vector<std::string> expected{
      "spawning gemini (timeout 600000ms)", "session started (model gemini-fake-2)",
      "tool: read_file a.txt", "message: {\"summary\": \"one file\"}", "parsing JSON output"};
  EXPECT_EQ(activities(), expected);
  const auto tokens = eventsOf("node.tokens");
  ASSERT_EQ(tokens.size(), 1U);
  const auto& fields = tokens[0].fields;
  EXPECT_EQ(fields["input_tokens"], 300);
  EXPECT_EQ(fields["output_tokens"], 40);
  EXPECT_EQ(fields["model"], "gemini-fake-2");
}

TEST_F(CliAgentTest, StreamWithoutAResultFails) {
  oe_node* node =
      create(cliNode("s", "claude-code", "stream-no-result", {"out"}, {{"stream", true}}));
  const CallResult result = call(node, "s");
  EXPECT_EQ(result.status, OE_UNKNOWN);
  EXPECT_NE(result.error.find("without a result event"), std::string::npos) << result.error;
}

TEST_F(CliAgentTest, RateLimitsAndOverloadsAreRetryableStatuses) {
  oe_node* codex = create(cliNode("c", "codex", "ratelimit", {"out"}));
  CallResult result = call(codex, "c");
  EXPECT_EQ(result.status, OE_RESOURCE_EXHAUSTED) << result.error;
  EXPECT_NE(result.error.find("rate limited"), std::string::npos) << result.error;

  oe_node* gemini = create(cliNode("g", "gemini", "ratelimit", {"out"}));
  result = call(gemini, "g");
  EXPECT_EQ(result.status, OE_RESOURCE_EXHAUSTED) << result.error;
  EXPECT_NE(result.error.find("exit code 173"), std::string::npos) << result.error;

  oe_node* claude = create(cliNode("o", "claude-code", "overloaded", {"out"}));
  result = call(claude, "o");
  EXPECT_EQ(result.status, OE_UNAVAILABLE) << result.error;
}

TEST_F(CliAgentTest, TimeoutKillsTheCliWithUpstreamsMessage) {
  oe_node* node = create(cliNode("h", "claude-code", "hang", {"out"}, {{"timeout_ms", 1000}}));
  const auto start = Clock::now();
  const CallResult result = call(node, "h");
  EXPECT_EQ(result.status, OE_DEADLINE_EXCEEDED);
  EXPECT_EQ(result.error, "cli-agent \"h\" timed out after 1000ms (provider=claude-code)");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
}

TEST_F(CliAgentTest, StallWatchdogKillsACliThatGoesQuiet) {
  oe_node* node = create(
      cliNode("st", "codex", "stall", {"out"}, {{"timeout_ms", 60000}, {"stall_timeout_ms", 300}}));
  const auto start = Clock::now();
  const CallResult result = call(node, "st");
  EXPECT_EQ(result.status, OE_DEADLINE_EXCEEDED);
  EXPECT_NE(result.error.find("stalled: no output for 300ms (stall_timeout_ms)"), std::string::npos)
      << result.error;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
}

// Output resets the watchdog: a CLI that writes a line every 50 ms, on stdout or on stderr, for
// one and a half stall timeouts runs to its end. (The timeout is long enough for the fake CLI's
// Python to start on a loaded machine before its first line.)
TEST_F(CliAgentTest, OutputResetsTheStallWatchdog) {
  for (const std::string stream : {"stdout", "stderr"}) {
    const std::string id = "talk_" + stream;
    oe_node* node = create(cliNode(id, "codex", "chatty 2000 " + stream, {"out"},
                                   {{"timeout_ms", 60000}, {"stall_timeout_ms", 2000}}));
    const CallResult result = call(node, id);
    EXPECT_EQ(result.status, OE_OK) << stream << ": " << result.error;
    EXPECT_EQ(result.error.find("stalled"), std::string::npos) << stream << ": " << result.error;
  }
}

// The deadline leaves the fake CLI time to start its grandchild even on a loaded machine (a
// sanitizer build on 2 cores took over a second), so the kill is what is tested.
TEST_F(CliAgentTest, TimeoutKillsAGrandchildThatIgnoresSigterm) {
  oe_node* node = create(cliNode("o", "claude-code", "orphan", {"out"}, {{"timeout_ms", 3000}}));
  const CallResult result = call(node, "o");
  EXPECT_EQ(result.status, OE_DEADLINE_EXCEEDED) << result.error;
  const pid_t grandchild = oe::test::pidIn(dir_.path() / "grandchild.pid");
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(oe::test::processGone(grandchild)) << "SIGKILL to the group must follow SIGTERM";
}

TEST_F(CliAgentTest, WhatASuccessfulCliLeavesBehindIsStopped) {
  oe_node* node = create(cliNode("lb", "codex", "leave-behind", {"out"}));
  const Json response = responseOf(call(node, "lb"));
  EXPECT_EQ(response["state_delta"]["out"], "done");
  const pid_t leftover = oe::test::pidIn(dir_.path() / "leftover.pid");
  ASSERT_GT(leftover, 0);
  EXPECT_TRUE(oe::test::processGone(leftover)) << "no process of the node outlives it";
}

TEST_F(CliAgentTest, CancelStopsARunningCli) {
  oe_node* node = create(cliNode("c", "codex", "hang", {"out"}));
  auto ctx = host_.makeContext("c");
  oe::test::FakeContext* raw = ctx.get();
  auto running = std::async(std::launch::async, [&] {
    return call(node, "c", Json::object(), Json::object(), Json::object(), raw);
  });
  // The fake records its run once it has read stdin: it is running.
  ASSERT_TRUE(oe::test::waitForFile(dir_.path() / "record.jsonl"));
  kind_->cancel(node, oe::test::FakeHost::context(*raw));
  const CallResult result = running.get();
  EXPECT_EQ(result.status, OE_CANCELLED);
  EXPECT_EQ(result.error, "cancelled");
}

TEST_F(CliAgentTest, StdinIsFedThenClosed) {
  oe_node* fed = create(cliNode("f", "codex", "stdin", {"out"}, {{"stdin", "hello"}}));
  EXPECT_EQ(responseOf(call(fed, "f"))["state_delta"]["out"], "stdin=hello");
  oe_node* closed = create(cliNode("c", "codex", "stdin", {"out"}));
  EXPECT_EQ(responseOf(call(closed, "c"))["state_delta"]["out"], "stdin=");
}

TEST_F(CliAgentTest, APromptTooLongForArgvGoesOnStdin) {
  const std::string prompt = "big " + std::string(200 << 10, 'x');
  for (const char* provider : {"claude-code", "codex", "gemini"}) {
    oe_node* node = create(cliNode("big", provider, prompt, {"out"}));
    EXPECT_EQ(responseOf(call(node, "big"))["state_delta"]["out"],
              "len=" + std::to_string(prompt.size()))
        << provider;
  }
  for (const Json& run : records()) {
    for (const std::string& arg : argvOf(run)) {
      EXPECT_LT(arg.size(), 1000U) << run["cli"];
    }
  }
}

TEST_F(CliAgentTest, TextModeWithTwoWritesFailsBeforeRunning) {
  oe_node* node = create(cliNode("t", "claude-code", "text", {"a", "b"}));
  const CallResult result = call(node, "t");
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(result.error,
            "cli-agent for node \"t\": text mode requires zero or one writes field; got 2. Use "
            "output_format: json with a schema for multi-field output.");
  EXPECT_TRUE(records().empty());
}

TEST_F(CliAgentTest, TextModeWithoutWritesGivesAnEmptyDelta) {
  oe_node* node = create(cliNode("t", "gemini", "text", Json::array()));
  EXPECT_EQ(responseOf(call(node, "t"))["state_delta"], Json::object());
}

TEST_F(CliAgentTest, BadSpecsAreRefusedAtCreate) {
  CreateResult created = tryCreate(cliNode("p", "gpt-9001", "x"));
  EXPECT_EQ(created.status, OE_INVALID_ARGUMENT);
  EXPECT_NE(created.error.find("provider must be one of claude-code, codex, gemini"),
            std::string::npos)
      << created.error;
  created = tryCreate(cliNode("s", "codex", "x", Json::array(), {{"stream", "yes"}}));
  EXPECT_EQ(created.status, OE_INVALID_ARGUMENT);
  EXPECT_NE(created.error.find("stream must be true or false"), std::string::npos) << created.error;
  created = tryCreate(cliNode("t", "codex", "x", Json::array(), {{"timeout_ms", 10}}));
  EXPECT_EQ(created.status, OE_INVALID_ARGUMENT);
  EXPECT_NE(created.error.find("timeout_ms must be an integer >= 1000"), std::string::npos);
}

TEST_F(CliAgentTest, AMissingCliSaysSo) {
  oe_node* node =
      create(cliNode("m", "codex", "x", {"out"}, {{"env", {{"PATH", "/nonexistent"}}}}));
  const CallResult result = call(node, "m");
  EXPECT_EQ(result.status, OE_FAILED_PRECONDITION);
  EXPECT_NE(result.error.find("`codex` command was not found on PATH"), std::string::npos)
      << result.error;
}

TEST_F(CliAgentTest, SpecSchemaMarksTheWorkdirAsAPath) {
  const Json schema = Json::parse(kind_->spec_schema_json);
  EXPECT_EQ(schema["properties"]["workdir"]["x-oe-path"], "directory");
  EXPECT_EQ(schema["required"], (Json{"provider", "prompt"}));
}

}  // namespace
}  // namespace oe::cliagent::test

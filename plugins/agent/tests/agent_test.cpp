// The agent node kind through the real ABI: upstream's dispatcher tests (reference §6.2) and
// oe's schema repair, against a scripted oe.llm/1.
#include <algorithm>
#include <latch>
#include <thread>

#include "agent_test_fixture.hpp"

namespace oe::agent::test {
namespace {

const Json kSchema = Json::parse(R"({"type":"object","required":["label","score"],
  "properties":{"label":{"type":"string"},"score":{"type":"number"}}})");

TEST_F(AgentTest, DescribesItselfThroughTheEntryPoint) {
  const oe_plugin_entry& entry = plugin_->entry();
  EXPECT_STREQ(entry.plugin_id, "dev.oe.agent");
  EXPECT_STREQ(entry.plugin_version, OE_AGENT_EXPECTED_VERSION);
  ASSERT_EQ(entry.node_kind_count(plugin_->self()), 1U);
  EXPECT_EQ(kind_->flags & OE_NODE_KIND_REENTRANT, OE_NODE_KIND_REENTRANT);
  const auto schema = Json::parse(kind_->spec_schema_json);
  EXPECT_EQ(schema["required"], Json::array({"prompt"}));
  for (const char* field : {"prompt", "model", "schema", "args", "max_tokens", "repair_attempts"}) {
    ASSERT_TRUE(schema["properties"].contains(field)) << field;
    EXPECT_TRUE(schema["properties"][field]["description"].is_string()) << field;
  }
  EXPECT_EQ(schema["properties"]["max_tokens"]["minimum"], 1);
  EXPECT_EQ(schema["properties"]["repair_attempts"]["minimum"], 0);
}

TEST_F(AgentTest, MissingPromptTemplateIsReportedWithTheUpstreamMessage) {
  const CreateResult created = tryCreate(spec("summarise", "prompts/nope.md", {"summary"}));
  EXPECT_EQ(created.status, OE_NOT_FOUND);
  EXPECT_EQ(created.error,
            "Agent prompt template not found: " + (dir_.path() / "prompts/nope.md").string() +
                " (declared as \"prompts/nope.md\")");
}

TEST_F(AgentTest, NodeWithoutPromptIsRejected) {
  Json node = spec("a", "x", {"out"});
  node.erase("prompt");
  const CreateResult created = tryCreate(node);
  EXPECT_EQ(created.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(created.error,
            "Agent \"a\" has no prompt; set prompt: to the path of a prompt template file "
            "(relative to the experience directory)");
  const CreateResult empty = tryCreate(spec("a", "", {"out"}));
  EXPECT_EQ(empty.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(empty.error, created.error);
}

TEST_F(AgentTest, RendersThePromptAndSendsUpstreamsRequest) {
  dir_.write("prompts/summarise.md", "There are {{count}} rows. Summarize.");
  oe_node* node = create(spec("summarise", "prompts/summarise.md", {"summary"}));
  llm_.answerText("Three rows.", 12, 7);
  const Json response = responseOf(call(node, "summarise", {{"count", 3}}));

  ASSERT_EQ(llm_.calls(), 1U);
  const Json request = llm_.requests()[0];
  EXPECT_EQ(request["messages"],
            Json::parse(R"([{"role":"user","content":"There are 3 rows. Summarize."}])"));
  EXPECT_EQ(request["max_tokens"], 4096);
  EXPECT_FALSE(request.contains("system"));
  EXPECT_FALSE(request.contains("model"));  // the host picks the run's default model
  EXPECT_FALSE(request.contains("tools"));

  EXPECT_EQ(response["state_delta"], Json({{"summary", "Three rows."}}));
  EXPECT_EQ(response["metrics"], Json({{"tokens_in", 12}, {"tokens_out", 7}}));
  EXPECT_FALSE(response.contains("edge_output"));
  EXPECT_GE(eventCount("node.activity"), 1U);
  EXPECT_EQ(activities(),
            (std::vector<std::string>{"calling the default model", "parsing text output"}));
  EXPECT_EQ(eventCount("node.tokens"), 0U);  // the host's oe.llm/1 emits node.tokens
  EXPECT_EQ(host_.outstandingBuffers(), 0);
}

// Which value wins between args, edge inputs and state is the host's oe.prompt/1 (this fixture's
// fake merges them itself): see LlmRunTest.PromptValuesPreferArgsThenEdgeInputsThenState.
TEST_F(AgentTest, ThePromptIsWhatTheHostsPromptServiceRendered) {
  dir_.write("p.md", "{{who}} / {{topic}} / {{missing}}");
  oe_node* node = create(spec("a", "p.md", {"out"}));
  llm_.answerText("ok");
  responseOf(call(node, "a", {{"who", "args"}, {"topic", "t"}}));
  EXPECT_EQ(llm_.requests()[0]["messages"][0]["content"], "args / t / {{missing}}");
}

TEST_F(AgentTest, ModelAndMaxTokensComeFromTheNode) {
  dir_.write("p.md", "hi");
  oe_node* node =
      create(spec("a", "p.md", {"out"}, {{"model", "gpt-4o-mini"}, {"max_tokens", 100}}));
  llm_.answerText("hello");
  responseOf(call(node, "a"));
  const Json request = llm_.requests()[0];
  EXPECT_EQ(request["model"], "gpt-4o-mini");
  EXPECT_EQ(request["max_tokens"], 100);
  EXPECT_EQ(activities().front(), "calling gpt-4o-mini");
}

TEST_F(AgentTest, InvalidOptionsAreRejectedAtCreate) {
  dir_.write("p.md", "hi");
  const CreateResult zero = tryCreate(spec("a", "p.md", {"out"}, {{"max_tokens", 0}}));
  EXPECT_EQ(zero.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(zero.error, "Agent \"a\": max_tokens must be an integer >= 1, got 0");
  const CreateResult negative = tryCreate(spec("a", "p.md", {"out"}, {{"repair_attempts", -1}}));
  EXPECT_EQ(negative.error, "Agent \"a\": repair_attempts must be an integer >= 0, got -1");
  const CreateResult text = tryCreate(spec("a", "p.md", {"out"}, {{"max_tokens", "many"}}));
  EXPECT_EQ(text.error, "Agent \"a\": max_tokens must be an integer >= 1, got \"many\"");
  const CreateResult model = tryCreate(spec("a", "p.md", {"out"}, {{"model", 4}}));
  EXPECT_EQ(model.error, "Agent \"a\": model must be a non-empty string, got 4");
  const CreateResult schema =
      tryCreate(spec("a", "p.md", {"out"}, {{"schema", {{"type", "no-such-type"}}}}));
  EXPECT_EQ(schema.status, OE_INVALID_ARGUMENT);
  EXPECT_NE(schema.error.find("Agent \"a\": schema is not a valid JSON Schema"), std::string::npos)
      << schema.error;
}

TEST_F(AgentTest, StructuredOutputBecomesTheWholeStateDelta) {
  dir_.write("p.md", "Classify {{text}}");
  oe_node* node = create(spec("classify", "p.md", {"label"}, {{"schema", kSchema}}));
  llm_.answerTool("structured_output", {{"label", "greeting"}, {"score", 0.9}, {"extra", true}});
  const Json response = responseOf(call(node, "classify", {{"text", "hi"}}));

  const Json request = llm_.requests()[0];
  ASSERT_EQ(request["tools"].size(), 1U);
  EXPECT_EQ(request["tools"][0]["name"], "structured_output");
  EXPECT_EQ(request["tools"][0]["description"],
            "Return the agent result as a structured object matching the schema");
  EXPECT_EQ(request["tools"][0]["input_schema"], kSchema);
  // Not filtered by writes (upstream): the host checks the keys against state.schema.
  EXPECT_EQ(response["state_delta"],
            Json({{"label", "greeting"}, {"score", 0.9}, {"extra", true}}));
  EXPECT_EQ(activities(), (std::vector<std::string>{"calling the default model",
                                                    "validating structured output"}));
}

TEST_F(AgentTest, NonObjectSchemaMeansTextMode) {
  dir_.write("p.md", "hi");
  oe_node* node = create(spec("a", "p.md", {"out"}, {{"schema", "not an object"}}));
  llm_.answerText("plain");
  EXPECT_EQ(responseOf(call(node, "a"))["state_delta"], Json({{"out", "plain"}}));
  EXPECT_FALSE(llm_.requests()[0].contains("tools"));
}

TEST_F(AgentTest, MissingToolCallFailsWithUpstreamsMessageWhenNoRepairIsAllowed) {
  dir_.write("p.md", "hi");
  oe_node* node =
      create(spec("classify", "p.md", {"label"}, {{"schema", kSchema}, {"repair_attempts", 0}}));
  llm_.answerText("I think it is a greeting.");
  const CallResult result = call(node, "classify");
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(result.error, "Agent \"classify\" expected a structured_output tool call but got none");
  EXPECT_EQ(llm_.calls(), 1U);
  EXPECT_EQ(host_.outstandingBuffers(), 0);
}

TEST_F(AgentTest, SchemaFailureFailsWithUpstreamsMessageWhenNoRepairIsAllowed) {
  dir_.write("p.md", "hi");
  oe_node* node =
      create(spec("classify", "p.md", {"label"}, {{"schema", kSchema}, {"repair_attempts", 0}}));
  llm_.answerTool("structured_output", {{"label", 3}, {"score", 1}});
  const CallResult result = call(node, "classify");
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(result.error,
            "Agent \"classify\" structured output failed schema: /label: must be "
            "string");
  EXPECT_EQ(llm_.calls(), 1U);
}

TEST_F(AgentTest, EverySchemaProblemIsListed) {
  dir_.write("p.md", "hi");
  const Json schema = Json::parse(R"({"type":"object","required":["label","score"],
    "additionalProperties":false,"properties":{"label":{"enum":["a","b"]},
    "score":{"type":"number","minimum":0},"tags":{"type":"array","items":{"type":"string"}}}})");
  oe_node* node =
      create(spec("c", "p.md", {"label"}, {{"schema", schema}, {"repair_attempts", 0}}));
  llm_.answerTool("structured_output", {{"label", "z"}, {"tags", {"x", 2}}, {"bogus", 1}});
  const CallResult result = call(node, "c");
  ASSERT_EQ(result.status, OE_INVALID_ARGUMENT);
  const std::string prefix = "Agent \"c\" structured output failed schema: ";
  ASSERT_EQ(result.error.substr(0, prefix.size()), prefix) << result.error;
  for (const char* part :
       {"(root): must have required property 'score'",
        "/label: must be equal to one of the allowed values [\"a\",\"b\"]",
        "/tags/1: must be string", "(root): must NOT have additional properties ('bogus')"}) {
    EXPECT_NE(result.error.find(part), std::string::npos) << part << " in " << result.error;
  }
  EXPECT_EQ(result.error.find("Failed to validate"), std::string::npos) << result.error;
}

TEST_F(AgentTest, SchemaFailureIsRepairedByShowingTheModelItsErrors) {
  dir_.write("p.md", "Classify {{text}}");
  oe_node* node = create(spec("classify", "p.md", {"label"}, {{"schema", kSchema}}));
  llm_.answerTool("structured_output", {{"label", 3}, {"score", 1}}, 10, 5);
  llm_.answerTool("structured_output", {{"label", "greeting"}, {"score", 1}}, 30, 6);
  const Json response = responseOf(call(node, "classify", {{"text", "hello"}}));

  EXPECT_EQ(response["state_delta"], Json({{"label", "greeting"}, {"score", 1}}));
  EXPECT_EQ(response["metrics"], Json({{"tokens_in", 40}, {"tokens_out", 11}}));
  ASSERT_EQ(llm_.calls(), 2U);
  const Json first = llm_.requests()[0];
  const Json second = llm_.requests()[1];
  EXPECT_EQ(second["tools"], first["tools"]);
  EXPECT_EQ(second["max_tokens"], first["max_tokens"]);
  const Json& messages = second["messages"];
  ASSERT_EQ(messages.size(), 3U);
  EXPECT_EQ(messages[0], first["messages"][0]);
  EXPECT_EQ(messages[1]["role"], "assistant");
  EXPECT_EQ(messages[1]["content"], R"([called structured_output with {"label":3,"score":1}])");
  EXPECT_EQ(messages[2]["role"], "user");
  const std::string repair = messages[2]["content"];
  EXPECT_NE(repair.find("- /label: must be string"), std::string::npos) << repair;
  EXPECT_NE(repair.find("Call structured_output again"), std::string::npos) << repair;
  EXPECT_EQ(activities(),
            (std::vector<std::string>{
                "calling the default model", "validating structured output",
                "structured output failed schema (1 problem); asking the default model to "
                "correct it (repair 1 of 1)",
                "validating structured output"}));
}

TEST_F(AgentTest, MissingToolCallIsRepaired) {
  dir_.write("p.md", "hi");
  oe_node* node = create(spec("classify", "p.md", {"label"}, {{"schema", kSchema}}));
  llm_.answerText("It is a greeting.");
  llm_.answerTool("structured_output", {{"label", "greeting"}, {"score", 1}});
  EXPECT_EQ(responseOf(call(node, "classify"))["state_delta"]["label"], "greeting");
  ASSERT_EQ(llm_.calls(), 2U);
  const Json messages = llm_.requests()[1]["messages"];
  EXPECT_EQ(messages[1]["content"], "It is a greeting.");
  EXPECT_NE(messages[2]["content"].get<std::string>().find("You did not call the "
                                                           "structured_output tool"),
            std::string::npos);
}

TEST_F(AgentTest, UnparseableToolArgumentsAreRepaired) {
  dir_.write("p.md", "hi");
  oe_node* node = create(spec("classify", "p.md", {"label"}, {{"schema", kSchema}}));
  llm_.answerTool("structured_output", {{"_raw", "{label: greeting"}});
  llm_.answerTool("structured_output", {{"label", "greeting"}, {"score", 2}});
  EXPECT_EQ(responseOf(call(node, "classify"))["state_delta"]["score"], 2);
  const Json messages = llm_.requests()[1]["messages"];
  EXPECT_EQ(messages[1]["content"],
            "[called structured_output with arguments that are not valid JSON: {label: greeting]");
  EXPECT_NE(messages[2]["content"].get<std::string>().find(
                "- (root): the arguments are not valid JSON: {label: greeting"),
            std::string::npos);
}

TEST_F(AgentTest, RepairsThatRunOutFailWithTheLastErrors) {
  dir_.write("p.md", "hi");
  oe_node* node =
      create(spec("classify", "p.md", {"label"}, {{"schema", kSchema}, {"repair_attempts", 2}}));
  llm_.answerTool("structured_output", {{"label", 1}, {"score", 1}});
  llm_.answerText("no tool this time");
  llm_.answerTool("structured_output", {{"label", "x"}, {"score", "high"}});
  const CallResult result = call(node, "classify");
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(result.error,
            "Agent \"classify\" structured output failed schema: /score: must be number");
  ASSERT_EQ(llm_.calls(), 3U);
  EXPECT_EQ(llm_.requests()[2]["messages"].size(), 5U);  // the whole conversation so far
  EXPECT_EQ(host_.outstandingBuffers(), 0);
}

TEST_F(AgentTest, IntegralNumbersCountAsIntegersAsInJavaScript) {
  dir_.write("p.md", "hi");
  const Json schema = Json::parse(R"({"type":"object","properties":{"n":{"type":"integer"}}})");
  oe_node* node = create(spec("a", "p.md", {"n"}, {{"schema", schema}, {"repair_attempts", 0}}));
  llm_.answer(
      Json::parse(R"({"text":"","tool_calls":[{"name":"structured_output","input":{"n":3.0}}]})"));
  const Json response = responseOf(call(node, "a"));
  EXPECT_EQ(response["state_delta"].dump(), R"({"n":3})");
  EXPECT_FALSE(response.contains("metrics"));  // no usage in the answer
}

TEST_F(AgentTest, BudgetExhaustionIsPropagatedWithoutRetrying) {
  dir_.write("p.md", "hi");
  oe_node* node = create(spec("a", "p.md", {"out"}));
  llm_.failWith(OE_RESOURCE_EXHAUSTED, "run budget exhausted: 1000 of 1000 tokens used");
  const CallResult result = call(node, "a");
  EXPECT_EQ(result.status, OE_RESOURCE_EXHAUSTED);
  EXPECT_EQ(result.error, "run budget exhausted: 1000 of 1000 tokens used");
  EXPECT_EQ(llm_.calls(), 1U);
  EXPECT_EQ(host_.outstandingBuffers(), 0);
}

TEST_F(AgentTest, BudgetExhaustionDuringARepairStopsTheRepair) {
  dir_.write("p.md", "hi");
  oe_node* node =
      create(spec("a", "p.md", {"label"}, {{"schema", kSchema}, {"repair_attempts", 3}}));
  llm_.answerText("no tool");
  llm_.failWith(OE_RESOURCE_EXHAUSTED, "run budget exhausted");
  llm_.answerTool("structured_output", {{"label", "never"}, {"score", 1}});
  const CallResult result = call(node, "a");
  EXPECT_EQ(result.status, OE_RESOURCE_EXHAUSTED);
  EXPECT_EQ(result.error, "run budget exhausted");
  EXPECT_EQ(llm_.calls(), 2U);
}

TEST_F(AgentTest, ProviderErrorsKeepTheirStatusAndMessage) {
  dir_.write("p.md", "hi");
  oe_node* node = create(spec("a", "p.md", {"out"}));
  llm_.failWith(OE_UNAUTHENTICATED, "anthropic model \"m\": HTTP 401");
  const CallResult result = call(node, "a");
  EXPECT_EQ(result.status, OE_UNAUTHENTICATED);
  EXPECT_EQ(result.error, "anthropic model \"m\": HTTP 401");
}

TEST_F(AgentTest, CancellationStopsBeforeARepairCall) {
  dir_.write("p.md", "hi");
  oe_node* node = create(spec("a", "p.md", {"label"}, {{"schema", kSchema}}));
  llm_.answerTool("structured_output", {{"label", 1}}, 12, 7, /*cancel_call=*/true);
  llm_.answerTool("structured_output", {{"label", "x"}, {"score", 1}});
  const CallResult result = call(node, "a");
  EXPECT_EQ(result.status, OE_CANCELLED);
  EXPECT_NE(result.error.find("Agent \"a\" was cancelled before repairing"), std::string::npos)
      << result.error;
  EXPECT_EQ(llm_.calls(), 1U);
}

TEST_F(AgentTest, TextModeNeedsExactlyOneWriteAndSpendsNoTokensOtherwise) {
  dir_.write("p.md", "hi");
  for (const Json& writes : {Json::array({"a", "b"}), Json::array()}) {
    oe_node* node = create(spec("multi", "p.md", writes));
    const CallResult result = call(node, "multi");
    EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
    EXPECT_EQ(result.error, "Agent \"multi\" returned text but declares " +
                                std::to_string(writes.size()) +
                                " writes; text mode requires exactly a single write field. Use a "
                                "structured schema for multi-field output.");
  }
  EXPECT_EQ(llm_.calls(), 0U);
}

TEST_F(AgentTest, MissingHostServicesNameTheNodeAndTheService) {
  dir_.write("p.md", "hi");
  oe_node* node = create(spec("a", "p.md", {"out"}));
  host_.setExtension(OE_EXT_PROMPT, nullptr);
  CallResult result = call(node, "a");
  EXPECT_EQ(result.status, OE_FAILED_PRECONDITION);
  EXPECT_NE(result.error.find("Agent \"a\" needs the host service oe.prompt/1"), std::string::npos)
      << result.error;
  host_.setExtension(OE_EXT_LLM, nullptr);
  result = call(node, "a");
  EXPECT_EQ(result.status, OE_FAILED_PRECONDITION);
  EXPECT_NE(result.error.find("Agent \"a\" needs the host service oe.llm/1"), std::string::npos)
      << result.error;
  EXPECT_EQ(llm_.calls(), 0U);
}

TEST_F(AgentTest, InvocationsOfOneNodeRunConcurrently) {
  dir_.write("p.md", "item {{n}}");
  oe_node* node = create(spec("each", "p.md", {"out"}));
  llm_.answerText("one");
  llm_.answerText("two");
  // Each call waits inside oe.llm/1 until both are there: this only finishes if the plugin lets
  // two invocations of the same node be in flight at once (OE_NODE_KIND_REENTRANT).
  std::latch both_in_flight(2);
  llm_.onCall([&] { both_in_flight.arrive_and_wait(); });
  auto ctx1 = host_.makeContext("each");
  auto ctx2 = host_.makeContext("each");
  CallResult r1;
  CallResult r2;
  const Json none = Json::object();
  std::thread t1([&] { r1 = call(node, "each", {{"n", 1}}, none, none, ctx1.get()); });
  std::thread t2([&] { r2 = call(node, "each", {{"n", 2}}, none, none, ctx2.get()); });
  t1.join();
  t2.join();
  EXPECT_EQ(r1.status, OE_OK) << r1.error;
  EXPECT_EQ(r2.status, OE_OK) << r2.error;
  std::vector<std::string> prompts;
  for (const Json& request : llm_.requests()) {
    prompts.push_back(request["messages"][0]["content"]);
  }
  std::sort(prompts.begin(), prompts.end());
  EXPECT_EQ(prompts, (std::vector<std::string>{"item 1", "item 2"}));
}

}  // namespace
}  // namespace oe::agent::test

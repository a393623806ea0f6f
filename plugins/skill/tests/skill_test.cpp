// The skill node kind through the real ABI: upstream's dispatcher tests (reference §6.3), the
// SKILL.md front matter, and structured output with repair (an oe addition).
#include "skill_test_fixture.hpp"

namespace oe::skill::test {
namespace {

constexpr const char* kClassifySkill =
    "---\n"
    "name: classify\n"
    "description: Classifies user utterances\n"
    "---\n"
    "# Classify\n"
    "\n"
    "Label the utterance as greeting, question or other.\n";

TEST_F(SkillTest, DescribesItselfThroughTheEntryPoint) {
  const oe_plugin_entry& entry = plugin_->entry();
  EXPECT_STREQ(entry.plugin_id, "dev.oe.skill");
  EXPECT_STREQ(entry.plugin_version, OE_SKILL_EXPECTED_VERSION);
  ASSERT_EQ(entry.node_kind_count(plugin_->self()), 1U);
  EXPECT_EQ(kind_->flags & OE_NODE_KIND_REENTRANT, OE_NODE_KIND_REENTRANT);
  const auto schema = Json::parse(kind_->spec_schema_json);
  EXPECT_EQ(schema["required"], Json::array({"impl"}));
  for (const char* field :
       {"impl", "inputs", "model", "schema", "args", "max_tokens", "repair_attempts"}) {
    ASSERT_TRUE(schema["properties"].contains(field)) << field;
    EXPECT_TRUE(schema["properties"][field]["description"].is_string()) << field;
  }
}

TEST_F(SkillTest, ClassifiesWithSkillMdAsTheSystemPrompt) {
  dir_.write("skills/classify/SKILL.md", kClassifySkill);
  oe_node* node = create(spec("classify", "skills/classify", {"label"}));
  llm_.answerText("classified: greeting", 20, 4);
  const Json response =
      responseOf(call(node, "classify", {{"mode", "strict"}}, {{"utterance", "hello there"}}));

  EXPECT_EQ(response["state_delta"], Json({{"label", "classified: greeting"}}));
  EXPECT_EQ(response["metrics"], Json({{"tokens_in", 20}, {"tokens_out", 4}}));
  ASSERT_EQ(llm_.calls(), 1U);
  const Json request = llm_.requests()[0];
  const std::string system = request["system"];
  EXPECT_NE(system.find("# Classify"), std::string::npos) << system;
  EXPECT_EQ(system, "# Classify\n\nLabel the utterance as greeting, question or other.\n");
  ASSERT_EQ(request["messages"].size(), 1U);
  EXPECT_EQ(request["messages"][0]["role"], "user");
  const std::string user = request["messages"][0]["content"];
  EXPECT_NE(user.find("hello there"), std::string::npos) << user;
  // The prompt service's values_json(2), passed through unchanged. This text is the fixture's fake
  // service; the real host's is checked by LlmRunTest.SkillSendsItsInputsAsUpstreamsJson...
  EXPECT_EQ(user, "{\n  \"utterance\": \"hello there\",\n  \"mode\": \"strict\"\n}");
  EXPECT_EQ(request["max_tokens"], 4096);
  EXPECT_FALSE(request.contains("model"));
  EXPECT_FALSE(request.contains("tools"));
  EXPECT_EQ(activities(), (std::vector<std::string>{"calling the default model (skill: classify)",
                                                    "parsing text output"}));
  EXPECT_EQ(eventCount("node.tokens"), 0U);
  EXPECT_EQ(host_.outstandingBuffers(), 0);
}

TEST_F(SkillTest, NodeWithoutImplIsRejected) {
  Json node = spec("s", "x", {"out"});
  node.erase("impl");
  const CreateResult created = tryCreate(node);
  EXPECT_EQ(created.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(created.error,
            "Skill \"s\" has no impl; set impl: to the skill directory that holds SKILL.md "
            "(relative to the experience directory)");
  const CreateResult wrong_type = tryCreate(spec("s", "x", {"out"}, {{"impl", 3}}));
  EXPECT_EQ(wrong_type.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(wrong_type.error, created.error);
}

TEST_F(SkillTest, MissingSkillMdIsReportedWithTheUpstreamMessage) {
  std::filesystem::create_directories(dir_ / "skills/empty");
  const CreateResult created = tryCreate(spec("s", "skills/empty", {"out"}));
  EXPECT_EQ(created.status, OE_NOT_FOUND);
  const std::string dir = (dir_.path() / "skills/empty").string();
  EXPECT_EQ(created.error,
            "SKILL.md not found in skill directory: " + dir + " (looked for " + dir + "/SKILL.md)");
  const CreateResult nowhere = tryCreate(spec("s", "skills/none", {"out"}));
  EXPECT_EQ(nowhere.status, OE_NOT_FOUND);
}

TEST_F(SkillTest, TextModeNeedsExactlyOneWrite) {
  dir_.write("skills/classify/SKILL.md", kClassifySkill);
  oe_node* node = create(spec("classify", "skills/classify", {"label", "why"}));
  const CallResult result = call(node, "classify");
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(result.error,
            "Skill \"classify\" must declare exactly one write field for text mode; got 2. "
            "Structured-output skills land in Plan 3+.");
  EXPECT_EQ(llm_.calls(), 0U);
}

TEST_F(SkillTest, WithoutFrontMatterTheWholeFileIsTheSystemPromptAndTheIdNamesIt) {
  dir_.write("plain/SKILL.md", "# Just instructions\n");
  oe_node* node =
      create(spec("plain_skill", "plain", {"out"}, {{"model", "m-1"}, {"max_tokens", 50}}));
  llm_.answerText("done");
  responseOf(call(node, "plain_skill"));
  const Json request = llm_.requests()[0];
  EXPECT_EQ(request["system"], "# Just instructions\n");
  EXPECT_EQ(request["model"], "m-1");
  EXPECT_EQ(request["max_tokens"], 50);
  EXPECT_EQ(request["messages"][0]["content"], "{}");
  EXPECT_EQ(activities().front(), "calling m-1 (skill: plain_skill)");
}

TEST_F(SkillTest, FrontMatterOnlyMeansNoSystemPrompt) {
  dir_.write("bare/SKILL.md", "---\r\nname: bare\r\n---\r\n");
  oe_node* node = create(spec("b", "bare", {"out"}));
  llm_.answerText("done");
  responseOf(call(node, "b"));
  EXPECT_FALSE(llm_.requests()[0].contains("system"));
  EXPECT_EQ(activities().front(), "calling the default model (skill: bare)");
}

TEST_F(SkillTest, InvalidFrontMatterIsReportedWithItsLine) {
  dir_.write("bad/SKILL.md", "---\nname: bad\ndescription: [unclosed\n---\nbody\n");
  const CreateResult created = tryCreate(spec("b", "bad", {"out"}));
  EXPECT_EQ(created.status, OE_INVALID_ARGUMENT);
  const std::string prefix = "Skill \"b\": the front matter of " +
                             (dir_.path() / "bad/SKILL.md").string() + " is not valid YAML (line ";
  EXPECT_EQ(created.error.substr(0, prefix.size()), prefix) << created.error;
}

TEST_F(SkillTest, ObjectSchemaGivesStructuredOutputWithRepair) {
  dir_.write("skills/classify/SKILL.md", kClassifySkill);
  const Json schema = Json::parse(
      R"({"type":"object","required":["label","confidence"],"properties":{
          "label":{"type":"string"},"confidence":{"type":"number"}}})");
  oe_node* node =
      create(spec("classify", "skills/classify", {"label", "confidence"}, {{"schema", schema}}));
  llm_.answerTool("structured_output", {{"label", "greeting"}});
  llm_.answerTool("structured_output", {{"label", "greeting"}, {"confidence", 0.8}});
  const Json response =
      responseOf(call(node, "classify", Json::object(), {{"utterance", "hello there"}}));
  EXPECT_EQ(response["state_delta"], Json({{"label", "greeting"}, {"confidence", 0.8}}));
  ASSERT_EQ(llm_.calls(), 2U);
  EXPECT_EQ(llm_.requests()[0]["tools"][0]["input_schema"], schema);
  EXPECT_EQ(llm_.requests()[1]["system"], llm_.requests()[0]["system"]);
  const std::string repair = llm_.requests()[1]["messages"][2]["content"];
  EXPECT_NE(repair.find("- (root): must have required property 'confidence'"), std::string::npos)
      << repair;
}

TEST_F(SkillTest, StructuredFailureUsesTheSkillsName) {
  dir_.write("skills/classify/SKILL.md", kClassifySkill);
  const Json schema = Json::parse(R"({"type":"object","required":["label"]})");
  oe_node* node = create(
      spec("classify", "skills/classify", {"label"}, {{"schema", schema}, {"repair_attempts", 0}}));
  llm_.answerText("greeting");
  const CallResult result = call(node, "classify");
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(result.error, "Skill \"classify\" expected a structured_output tool call but got none");
}

TEST_F(SkillTest, BudgetExhaustionIsPropagatedWithoutRetrying) {
  dir_.write("skills/classify/SKILL.md", kClassifySkill);
  oe_node* node = create(spec("classify", "skills/classify", {"label"}));
  llm_.failWith(OE_RESOURCE_EXHAUSTED, "run budget exhausted");
  llm_.answerText("never asked");
  const CallResult result = call(node, "classify");
  EXPECT_EQ(result.status, OE_RESOURCE_EXHAUSTED);
  EXPECT_EQ(result.error, "run budget exhausted");
  EXPECT_EQ(llm_.calls(), 1U);
  EXPECT_EQ(host_.outstandingBuffers(), 0);
}

TEST_F(SkillTest, MissingLlmServiceNamesTheNodeAndTheService) {
  dir_.write("skills/classify/SKILL.md", kClassifySkill);
  oe_node* node = create(spec("classify", "skills/classify", {"label"}));
  host_.setExtension(OE_EXT_LLM, nullptr);
  const CallResult result = call(node, "classify");
  EXPECT_EQ(result.status, OE_FAILED_PRECONDITION);
  EXPECT_NE(result.error.find("Skill \"classify\" needs the host service oe.llm/1"),
            std::string::npos)
      << result.error;
}

}  // namespace
}  // namespace oe::skill::test

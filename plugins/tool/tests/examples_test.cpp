// The tool examples (examples/python-tool, examples/native-tool) driven node by node through
// the plugin, threading state and edge outputs the way the host does.
#include "tool_test_fixture.hpp"

namespace oe::tool::test {
namespace {

using ToolExamplesTest = ToolPluginTest;

TEST_F(ToolExamplesTest, PythonToolPipelineSummarizesTheInput) {
  const std::string example = std::string(OE_TOOL_EXAMPLES_DIR) + "/python-tool";
  oe_node* load = create("load_text", "./tools/load_text.py", Json::object(), example);
  oe_node* count = create("count_words", "./tools/count_words.py", Json::object(), example);
  oe_node* summarize = create("summarize", "./tools/summarize.py", Json::object(), example);

  const Json loaded = responseOf(call(load, "load_text", Json{{"path", "./input.txt"}}));
  const Json text = loaded["state_delta"]["text"];
  ASSERT_TRUE(text.is_string());
  const Json counted = responseOf(call(count, "count_words", Json{{"top", 3}}, Json{{"text", text}},
                                       Json{{"load_text", loaded["edge_output"]}}));
  EXPECT_EQ(counted["state_delta"]["word_count"], 24);
  EXPECT_EQ(counted["state_delta"]["top_words"][0], (Json{{"word", "the"}, {"count", 4}}));
  const Json summary = responseOf(call(summarize, "summarize", Json::object(),
                                       Json{{"word_count", counted["state_delta"]["word_count"]},
                                            {"top_words", counted["state_delta"]["top_words"]}},
                                       Json{{"count_words", counted["edge_output"]}}));
  EXPECT_EQ(summary["state_delta"]["summary"],
            "24 words, 13 distinct; most frequent: the (4), dog (3), fox (3)");
}

TEST_F(ToolExamplesTest, NativeChecksumToolComputesCrc32) {
  oe_node* node = create("checksum", OE_TOOL_EXAMPLE_CHECKSUM);
  const Json response = responseOf(call(node, "checksum", Json{{"text", "hello, native world"}}));
  EXPECT_EQ(response["state_delta"], (Json{{"length", 19}, {"crc32", "96c05ec1"}}));
  EXPECT_EQ(response["edge_output"], (Json{{"algorithm", "crc32"}}));
}

TEST_F(ToolExamplesTest, NativeChecksumToolDecodesJsonStringsAndSkipsNestedKeys) {
  oe_node* node = create("checksum", OE_TOOL_EXAMPLE_CHECKSUM);
  // A nested "text" (in another arg and in _state) must not be taken for args.text.
  const Json args{{"other", Json{{"text", "nested"}, {"list", Json::array({1, "]", "}"})}}},
                  {"text", "\xc3\xa9\n\xf0\x9f\x98\x80 \"q\""}};
  const Json response = responseOf(call(node, "checksum", args, Json{{"text", "state"}}));
  EXPECT_EQ(response["state_delta"], (Json{{"length", 11}, {"crc32", "4d2852d8"}}));
}

TEST_F(ToolExamplesTest, NativeChecksumToolRepeatsTheTextAndLogsWhatItDid) {
  oe_node* node = create("checksum", OE_TOOL_EXAMPLE_CHECKSUM);
  const Json once = responseOf(call(node, "checksum", Json{{"text", "abcabcabc"}}));
  const Json repeated = responseOf(call(node, "checksum", Json{{"text", "abc"}, {"repeat", 3}}));
  EXPECT_EQ(repeated["state_delta"], once["state_delta"]);
  EXPECT_EQ(repeated["state_delta"]["length"], 9);
  const std::string expected_line =
      "crc32 " + repeated["state_delta"]["crc32"].get<std::string>() + " of 9 bytes";
  int found = 0;
  for (const auto& line : host_.logs()) {
    if (line.message == expected_line) {
      EXPECT_EQ(line.node_id, "checksum");
      ++found;
    }
  }
  EXPECT_EQ(found, 2) << "one log line per call, naming the node";
  EXPECT_TRUE(host_.events().empty()) << "short jobs report no activity";
}

TEST_F(ToolExamplesTest, NativeChecksumToolReportsActivityForALongJob) {
  oe_node* node = create("checksum", OE_TOOL_EXAMPLE_CHECKSUM);
  const Json response =
      responseOf(call(node, "checksum", Json{{"text", std::string(1000, 'x')}, {"repeat", 300}}));
  EXPECT_EQ(response["state_delta"]["length"], 300000);
  const auto events = host_.events();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].node_id, "checksum");
  EXPECT_EQ(events[0].type, "node.activity");
  EXPECT_EQ(events[0].fields["activity"], "checksumming 300000 bytes");
}

TEST_F(ToolExamplesTest, NativeChecksumToolRefusesARepeatThatIsNotAPositiveInteger) {
  oe_node* node = create("checksum", OE_TOOL_EXAMPLE_CHECKSUM);
  for (const Json& repeat :
       {Json(0), Json(-2), Json(1.5), Json("3"), Json(nullptr), Json(9007199254740992LL)}) {
    const CallResult result = call(node, "checksum", Json{{"text", "a"}, {"repeat", repeat}});
    EXPECT_EQ(result.status, OE_INVALID_ARGUMENT) << repeat;
    EXPECT_NE(result.error.find("args.repeat must be a whole number"), std::string::npos)
        << repeat << ": " << result.error;
  }
  const CallResult too_long =
      call(node, "checksum", Json{{"text", "ab"}, {"repeat", 9007199254740991LL}});
  EXPECT_EQ(too_long.status, OE_INVALID_ARGUMENT);
  EXPECT_NE(too_long.error.find("more than 2^53 - 1 bytes"), std::string::npos) << too_long.error;
}

TEST_F(ToolExamplesTest, NativeChecksumToolSaysWhatIsMissing) {
  oe_node* node = create("checksum", OE_TOOL_EXAMPLE_CHECKSUM);
  const CallResult result = call(node, "checksum", Json{{"txt", "typo"}});
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_NE(result.error.find("args.text is missing"), std::string::npos) << result.error;
}

}  // namespace
}  // namespace oe::tool::test

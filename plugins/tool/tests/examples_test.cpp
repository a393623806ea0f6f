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

TEST_F(ToolExamplesTest, NativeChecksumToolSaysWhatIsMissing) {
  oe_node* node = create("checksum", OE_TOOL_EXAMPLE_CHECKSUM);
  const CallResult result = call(node, "checksum", Json{{"txt", "typo"}});
  EXPECT_EQ(result.status, OE_INVALID_ARGUMENT);
  EXPECT_NE(result.error.find("args.text is missing"), std::string::npos) << result.error;
}

}  // namespace
}  // namespace oe::tool::test

// examples/c-plugin (text-upper), built in tree and driven directly: its hand-written JSON reader
// must find args.text among look-alikes, decode every escape, and fail cleanly on bad input.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "abi/fixtures.hpp"

namespace oe::abi_test {
namespace {

using nlohmann::json;

class CPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    plugin_ = std::make_unique<DirectPlugin>(fixtureFile("c_upper", "c_upper.so"));
    ASSERT_TRUE(plugin_->loaded()) << plugin_->error();
    entry_ = plugin_->entry();
    ASSERT_NE(entry_, nullptr);
    oe_writer err;
    ASSERT_EQ(plugin_->init(err), OE_OK) << err.data;
    kind_ = plugin_->kind(0);
    ASSERT_NE(kind_, nullptr);
  }

  static std::string config(const json& writes) {
    return json{{"node", {{"id", "shout"}, {"kind", "text-upper"}, {"writes", writes}}},
                {"experience_dir", "/tmp/x"}}
        .dump();
  }
  CallResult call(const std::string& request, const json& writes = json::array({"shout"})) {
    return runNode(*plugin_, *kind_, config(writes), request);
  }
  static std::string request(const json& text, int indent = -1, bool ascii = false) {
    const json body = {{"node", {{"id", "shout"}, {"kind", "text-upper"}}},
                       {"args", {{"text", text}}},
                       {"state_view", json::object()},
                       {"edge_inputs", json::object()},
                       {"context", {{"run_id", "r1"}, {"node_id", "shout"}}}};
    return body.dump(indent, ' ', ascii);
  }

  std::unique_ptr<DirectPlugin> plugin_;
  const oe_plugin_entry* entry_ = nullptr;
  const oe_node_kind* kind_ = nullptr;
};

TEST_F(CPlugin, DescribesItself) {
  EXPECT_STREQ(entry_->plugin_id, "dev.oe.example.c-upper");
  EXPECT_EQ(entry_->abi_version, OE_ABI_VERSION);
  EXPECT_EQ(entry_->node_kind_count(plugin_->self()), 1u);
  EXPECT_STREQ(kind_->kind, "text-upper");
  EXPECT_EQ(plugin_->kind(1), nullptr);
  ASSERT_NE(kind_->spec_schema_json, nullptr);
  EXPECT_TRUE(json::accept(kind_->spec_schema_json)) << kind_->spec_schema_json;
  DirectPlugin other(fixtureFile("c_upper", "c_upper.so"));
  EXPECT_EQ(other.entry(OE_ABI_MAKE_VERSION(OE_ABI_VERSION_MAJOR + 1, 0)), nullptr);
}

TEST_F(CPlugin, UpperCasesIntoTheWritesField) {
  const CallResult result = call(request("Hello from C!"));
  ASSERT_EQ(result.status, OE_OK) << result.error;
  const json response = json::parse(result.response);
  EXPECT_EQ(response["state_delta"], (json{{"shout", "HELLO FROM C!"}}));
  EXPECT_EQ(response["edge_output"], "HELLO FROM C!");
}

TEST_F(CPlugin, DecodesEscapesAndKeepsNonAsciiBytes) {
  // Control characters, quotes, backslashes, a NUL, 2-, 3- and 4-byte UTF-8 (the last one a
  // surrogate pair when escaped as ASCII).
  const std::string text = std::string("tab\there \"quoted\" back\\slash nul") + '\0' +
                           " caf\xc3\xa9 \xe2\x98\xba \xf0\x9f\x98\x80 end/";
  const std::string expected = std::string("TAB\tHERE \"QUOTED\" BACK\\SLASH NUL") + '\0' +
                               " CAF\xc3\xa9 \xe2\x98\xba \xf0\x9f\x98\x80 END/";
  for (const bool ascii : {false, true}) {
    for (const int indent : {-1, 2}) {
      const CallResult result = call(request(text, indent, ascii));
      ASSERT_EQ(result.status, OE_OK) << result.error;
      const json response = json::parse(result.response);
      EXPECT_EQ(response["state_delta"]["shout"].get<std::string>(), expected)
          << "ascii=" << ascii << " indent=" << indent;
    }
  }
  // Escaped solidus and explicit escapes nlohmann never produces on its own.
  const CallResult slashes = call(R"({"args":{"text":"a\/b \u00e9 \ud83d\ude00 \b\f"}})");
  ASSERT_EQ(slashes.status, OE_OK) << slashes.error;
  EXPECT_EQ(json::parse(slashes.response)["state_delta"]["shout"],
            "A/B \xc3\xa9 \xf0\x9f\x98\x80 \b\f");
}

TEST_F(CPlugin, FindsArgsTextAmongLookAlikes) {
  // "text" and "args" also appear nested elsewhere and inside strings; only args.text counts.
  const std::string request_json = R"({
    "node": {"id": "shout", "prompt": "a } \" { [ \"args\": {\"text\": \"no\"}", "text": "no"},
    "state_view": {"args": {"text": "no"}, "list": [1, -2.5e3, true, false, null, {"text": "no"}]},
    "edge_inputs": {},
    "args": {"mode": {"text": "nested no"}, "text": "yes", "after": [1]},
    "context": {"run_id": "r"}
  })";
  const CallResult result = call(request_json);
  ASSERT_EQ(result.status, OE_OK) << result.error;
  EXPECT_EQ(json::parse(result.response)["state_delta"]["shout"], "YES");
}

TEST_F(CPlugin, EscapesAnOddFieldNameInTheResponse) {
  const CallResult result = call(request("x"), json::array({"we\"ird\\name"}));
  ASSERT_EQ(result.status, OE_OK) << result.error;
  EXPECT_EQ(json::parse(result.response)["state_delta"], (json{{"we\"ird\\name", "X"}}));
}

TEST_F(CPlugin, RequiresExactlyOneWritesField) {
  for (const json& writes : {json::array(), json::array({"a", "b"}), json::array({1})}) {
    const CallResult result = call(request("x"), writes);
    EXPECT_EQ(result.status, OE_INVALID_ARGUMENT) << writes;
    EXPECT_NE(result.error.find("text-upper node \"shout\""), std::string::npos) << result.error;
    EXPECT_NE(result.error.find("exactly one state field in `writes`"), std::string::npos)
        << result.error;
  }
}

TEST_F(CPlugin, RejectsMissingOrNonStringText) {
  for (const std::string& bad :
       {std::string(R"({"args":{}})"), std::string(R"({"args":{"text":42}})"),
        std::string(R"({"args":{"text":null}})"), std::string(R"({"state_view":{"text":"x"}})"),
        std::string("{}"), std::string("")}) {
    const CallResult result = call(bad);
    EXPECT_EQ(result.status, OE_INVALID_ARGUMENT) << bad;
    EXPECT_NE(result.error.find("args.text must be a string"), std::string::npos) << result.error;
    EXPECT_EQ(result.response, "") << bad;
  }
}

TEST_F(CPlugin, SurvivesMalformedJson) {
  // Truncations and bad escapes must fail the call, never read past the buffer (run under ASan).
  const std::string good = R"({"node":{"id":"n"},"args":{"text":"abc \u00e9 \ud83d\ude00"}})";
  for (size_t cut = 0; cut < good.size(); ++cut) {
    const CallResult result = call(good.substr(0, cut));
    if (result.status == OE_OK) {
      // Only a cut after the text value's closing quote can still find the member.
      EXPECT_GE(cut, good.find("\"}}")) << good.substr(0, cut);
    }
  }
  for (const std::string& bad :
       {std::string(R"({"args":{"text":"\x"}})"), std::string(R"({"args":{"text":"\u12"}})"),
        std::string(R"({"args":{"text":"\ud83d"}})"), std::string(R"({"args":{"text":"\ude00"}})"),
        std::string("{\"args\":{\"text\":\"raw\ncontrol\"}}"),
        std::string(R"({"node":{"id":[1,2},"args":{"text":"x"}})"),
        std::string(R"({"node":tru,"args":{"text":"x"}})")}) {
    const CallResult result = call(bad);
    EXPECT_EQ(result.status, OE_INVALID_ARGUMENT) << bad;
  }
  const std::string deep = std::string(10000, '[') + std::string(10000, ']');
  EXPECT_EQ(call(R"({"node":)" + deep + R"(,"args":{"text":"x"}})").status, OE_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace oe::abi_test

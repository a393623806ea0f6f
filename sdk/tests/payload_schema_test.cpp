// The JSON payload schemas (sdk/schema/*.json) are draft-07 schemas valijson compiles, and they
// say what the headers' comments say: each accepts the shape its header documents and refuses
// what the host refuses. That the host's own requests and the first-party plugins' answers fit
// them is checked where those are made (tests/abi/payload_schema_test.cpp).
#include "payload_schema.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace {

using nlohmann::json;
using oe::sdk_test::PayloadSchema;

const std::filesystem::path kSchemaDir = std::filesystem::path(OE_SDK_SOURCE_DIR) / "schema";

TEST(PayloadSchema, EverySchemaCompiles) {
  size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSchemaDir)) {
    const PayloadSchema schema(kSchemaDir, entry.path().filename().string());
    EXPECT_EQ(schema.error(), "");
    ++count;
  }
  EXPECT_GE(count, 10u);
}

TEST(PayloadSchema, InvokeRequestIsTheBundleAndTheContext) {
  const PayloadSchema schema(kSchemaDir, "invoke-request.schema.json");
  ASSERT_EQ(schema.error(), "");
  json request = json::parse(R"({"node":{"id":"n","kind":"tool","impl":"x.mjs"},"args":{"a":1},
      "state_view":{},"edge_inputs":{"prev":{"k":2}},
      "context":{"run_id":"r1","node_id":"n","experience_dir":"/tmp/x","attempt":1}})");
  EXPECT_EQ(schema.check(request), "");
  json without_context = request;
  without_context.erase("context");
  EXPECT_NE(schema.check(without_context), "");
  json attempt_zero = request;
  attempt_zero["context"]["attempt"] = 0;
  EXPECT_NE(schema.check(attempt_zero), "");
  json extra = request;
  extra["surprise"] = true;
  EXPECT_NE(schema.check(extra), "") << "a new member is a payload change";
}

TEST(PayloadSchema, InvokeResponseNeedsAStateDeltaObject) {
  const PayloadSchema schema(kSchemaDir, "invoke-response.schema.json");
  ASSERT_EQ(schema.error(), "");
  EXPECT_EQ(schema.check(json::parse(R"({"state_delta":{"x":1}})")), "");
  EXPECT_EQ(schema.check(json::parse(
                R"({"state_delta":{},"edge_output":[1],"metrics":{"tokens_in":3,"tool_ms":2}})")),
            "");
  EXPECT_NE(schema.check(json::parse(R"({"edge_output":1})")), "");
  EXPECT_NE(schema.check(json::parse(R"({"state_delta":[]})")), "");
}

TEST(PayloadSchema, EventFieldsLeaveTheHostsMembersAlone) {
  const PayloadSchema schema(kSchemaDir, "event-fields.schema.json");
  ASSERT_EQ(schema.error(), "");
  EXPECT_EQ(schema.check(json::parse(R"({"activity":"fetching"})")), "");
  EXPECT_NE(schema.check(json::parse(R"({"node_id":"other"})")), "");
  EXPECT_NE(schema.check(json::parse(R"([1])")), "");
}

TEST(PayloadSchema, HttpShapesAreWhatOeHttpTakesAndGives) {
  const PayloadSchema request(kSchemaDir, "http-request.schema.json");
  const PayloadSchema response(kSchemaDir, "http-response.schema.json");
  ASSERT_EQ(request.error(), "");
  ASSERT_EQ(response.error(), "");
  EXPECT_EQ(request.check(json::parse(
                R"({"method":"POST","url":"http://h/x","headers":{"a":"b"},"body":"{}",)"
                R"("timeout_ms":5,"stall_timeout_ms":5})")),
            "");
  EXPECT_NE(request.check(json::parse(R"({"method":"GET"})")), "");
  EXPECT_NE(request.check(json::parse(R"({"url":"http://h","timeout_ms":0})")), "");
  EXPECT_EQ(response.check(json::parse(R"({"status":429,"headers":{"retry-after":"1"},"body":""})")),
            "");
  EXPECT_NE(response.check(json::parse(R"({"status":200,"headers":{"Retry-After":"1"},"body":""})")),
            "")
      << "header names are lower case";
}

TEST(PayloadSchema, LlmShapesAreTheOnesInLlmH) {
  const PayloadSchema request(kSchemaDir, "llm-request.schema.json");
  const PayloadSchema response(kSchemaDir, "llm-response.schema.json");
  const PayloadSchema config(kSchemaDir, "llm-provider-config.schema.json");
  ASSERT_EQ(request.error(), "");
  ASSERT_EQ(response.error(), "");
  ASSERT_EQ(config.error(), "");
  EXPECT_EQ(request.check(json::parse(
                R"({"model":"m","system":"s","messages":[{"role":"user","content":"hi"}],)"
                R"("tools":[{"name":"t","description":"d","input_schema":{}}],"max_tokens":5})")),
            "");
  EXPECT_NE(request.check(json::parse(R"({"messages":[]})")), "");
  EXPECT_NE(request.check(json::parse(R"({"messages":[{"role":"system","content":"x"}]})")), "");
  EXPECT_EQ(response.check(json::parse(
                R"({"text":"","tool_calls":[{"name":"t","input":{"a":1}}],)"
                R"("usage":{"input_tokens":1,"output_tokens":2},"stop_reason":"stop","model":"m"})")),
            "");
  EXPECT_NE(response.check(json::parse(R"({"text":"hi"})")), "") << "model is always said";
  EXPECT_EQ(config.check(json::parse(R"({"provider":"openai","max_attempts":3})")), "");
  EXPECT_NE(config.check(json::parse(R"({"base_url":"x"})")), "");
}

TEST(PayloadSchema, ToolInputCarriesTheArgsTheEdgesAndTheState) {
  const PayloadSchema schema(kSchemaDir, "tool-input.schema.json");
  ASSERT_EQ(schema.error(), "");
  EXPECT_EQ(schema.check(json::parse(R"({"i":3,"_edge_inputs":{},"_state":{}})")), "");
  EXPECT_NE(schema.check(json::parse(R"({"i":3})")), "");
}

TEST(PayloadSchema, CreateConfigIsTheNodeAndTheFolder) {
  const PayloadSchema schema(kSchemaDir, "create-config.schema.json");
  ASSERT_EQ(schema.error(), "");
  EXPECT_EQ(schema.check(json::parse(R"({"node":{"id":"n","kind":"k"},"experience_dir":"/x"})")),
            "");
  EXPECT_NE(schema.check(json::parse(R"({"node":{"id":"n","kind":"k"},"experience_dir":"x"})")),
            "")
      << "the folder is absolute";
}

}  // namespace

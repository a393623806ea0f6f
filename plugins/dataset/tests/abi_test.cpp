// The dataset plugin as the host sees it: descriptor, kind table, spec schema, and the
// configuration errors reported when a node is created (reference §6.4 messages).
#include <atomic>
#include <map>
#include <thread>

#include "dataset_test_fixture.hpp"

namespace oe::dataset::test {
namespace {

using DatasetAbiTest = DatasetPluginTest;

TEST_F(DatasetAbiTest, DescribesItselfThroughTheEntryPoint) {
  const oe_plugin_entry& entry = plugin_->entry();
  EXPECT_EQ(entry.abi_version, OE_ABI_VERSION);
  EXPECT_STREQ(entry.plugin_id, "dev.oe.dataset");
  EXPECT_STREQ(entry.plugin_version, OE_DATASET_EXPECTED_VERSION);
  ASSERT_EQ(entry.node_kind_count(plugin_->self()), 1U);
  const oe_node_kind* kind = entry.node_kind_at(plugin_->self(), 0);
  ASSERT_NE(kind, nullptr);
  EXPECT_STREQ(kind->kind, "dataset");
  EXPECT_EQ(kind->flags & OE_NODE_KIND_REENTRANT, OE_NODE_KIND_REENTRANT);
  EXPECT_EQ(entry.node_kind_at(plugin_->self(), 1), nullptr);
}

TEST_F(DatasetAbiTest, SpecSchemaDescribesEachSourceType) {
  ASSERT_NE(kind_->spec_schema_json, nullptr);
  const auto schema = nlohmann::json::parse(kind_->spec_schema_json);
  EXPECT_EQ(schema["required"], nlohmann::json::array({"source", "writes"}));
  EXPECT_EQ(schema["properties"]["writes"]["maxItems"], 1);
  const auto& source = schema["properties"]["source"];
  EXPECT_EQ(source["properties"]["type"]["enum"],
            nlohmann::json::array({"file", "sqlite", "http", "mcp-resource"}));
  std::map<std::string, nlohmann::json> required;
  // One if/then per type: the host's checker reports a missing key once, where a oneOf would
  // report every branch that does not match.
  for (const auto& branch : source["allOf"]) {
    EXPECT_TRUE(branch["description"].is_string());
    required[branch["if"]["properties"]["type"]["const"]] = branch["then"]["required"];
  }
  EXPECT_EQ(required["file"], nlohmann::json::array({"uri"}));
  EXPECT_EQ(required["sqlite"], nlohmann::json::array({"uri", "query"}));
  EXPECT_EQ(required["http"], nlohmann::json::array({"url"}));
  EXPECT_EQ(required["mcp-resource"], nlohmann::json::array({"server", "uri"}));
  for (const auto& [key, property] : source["properties"].items()) {
    EXPECT_TRUE(property["description"].is_string()) << key;
  }
}

TEST_F(DatasetAbiTest, WritesMustHaveExactlyOneField) {
  const Json source{{"type", "file"}, {"uri", "data.json"}};
  dir_.write("data.json", "[]");
  const Outcome two = run(node(source, "load", Json::array({"a", "b"})));
  EXPECT_EQ(two.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(two.error, "Dataset \"load\" must declare exactly one write field; got 2");
  Json no_writes = node(source, "empty");
  no_writes.erase("writes");
  EXPECT_EQ(run(no_writes).error, "Dataset \"empty\" must declare exactly one write field; got 0");
  EXPECT_EQ(run(node(source, "none", Json::array())).error,
            "Dataset \"none\" must declare exactly one write field; got 0");
}

TEST_F(DatasetAbiTest, OutputIsOnlyTheStateDeltaOfTheOneField) {
  dir_.write("data.json", R"([{"v":1}])");
  const Outcome out =
      run(node({{"type", "file"}, {"uri", "data.json"}}, "load", Json::array({"items"})));
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.response, Json::parse(R"({"state_delta":{"items":[{"v":1}]}})"));
  EXPECT_FALSE(out.response.contains("edge_output"));
}

TEST_F(DatasetAbiTest, UnknownSourceTypeListsTheSupportedOnes) {
  const Outcome out = run(node({{"type", "ftp"}, {"uri", "x"}}));
  EXPECT_EQ(out.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(out.error,
            "Dataset \"load\": unknown source.type \"ftp\"; supported types: file, sqlite, http, "
            "mcp-resource");
  EXPECT_EQ(run(node({{"uri", "x"}})).error,
            "Dataset \"load\": unknown source.type (none); supported types: file, sqlite, http, "
            "mcp-resource");
}

TEST_F(DatasetAbiTest, MissingSourceOrRequiredKeysAreNamed) {
  Json spec = node(Json::object());
  spec.erase("source");
  EXPECT_EQ(run(spec).error,
            "Dataset \"load\" has no source; set source: {type: file, uri: ...} (or type sqlite, "
            "http, mcp-resource)");
  EXPECT_EQ(run(node({{"type", "file"}})).error,
            "Dataset \"load\": source.uri is required for a file source (a path relative to the "
            "experience directory)");
  EXPECT_EQ(run(node({{"type", "sqlite"}, {"uri", "db.sqlite"}})).error,
            "Dataset \"load\": source.query is required for a sqlite source (the SQL query whose "
            "rows are read)");
  EXPECT_EQ(run(node({{"type", "http"}})).error,
            "Dataset \"load\": source.url is required for a http source (the URL of a JSON "
            "array)");
}

TEST_F(DatasetAbiTest, TransformIsIgnoredWithAWarning) {
  dir_.write("d.json", "[1,2]");
  const Outcome out =
      run(node({{"type", "file"}, {"uri", "d.json"}, {"transform", "rows.filter(r => r)"}}));
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::parse("[1,2]"));
  bool warned = false;
  for (const auto& log : host_.logs()) {
    warned = warned || (log.level == OE_LOG_WARN &&
                        log.message.find("source.transform is ignored") != std::string::npos);
  }
  EXPECT_TRUE(warned);
}

TEST_F(DatasetAbiTest, ReadsAtInvokeSoAFileWrittenAfterCreateIsSeen) {
  const Json spec = node({{"type", "file"}, {"uri", "later.jsonl"}});
  const CreateResult created = create(spec);
  ASSERT_EQ(created.status, OE_OK) << created.error;  // the file does not exist yet
  const CallResult missing = invoke(created.node, spec);
  EXPECT_EQ(missing.status, OE_NOT_FOUND);
  dir_.write("later.jsonl", "{\"n\":1}\n");
  const CallResult first = invoke(created.node, spec);
  ASSERT_EQ(first.status, OE_OK) << first.error;
  EXPECT_EQ(Json::parse(first.response)["state_delta"]["rows"], Json::parse(R"([{"n":1}])"));
  dir_.write("later.jsonl", "{\"n\":1}\n{\"n\":2}\n");
  const CallResult second = invoke(created.node, spec);
  EXPECT_EQ(Json::parse(second.response)["state_delta"]["rows"].size(), 2U);
}

TEST_F(DatasetAbiTest, InvokesRunConcurrentlyOnOneNode) {
  std::string csv = "id,name\n";
  for (int i = 0; i < 2000; ++i) {
    csv += std::to_string(i) + ",\"n, " + std::to_string(i) + "\"\n";
  }
  dir_.write("big.csv", csv);
  const Json spec = node({{"type", "file"}, {"uri", "big.csv"}});
  const CreateResult created = create(spec);
  ASSERT_EQ(created.status, OE_OK);
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      auto ctx = host_.makeContext("load");
      const CallResult r = invoke(created.node, spec, ctx.get());
      if (r.status != OE_OK) {
        return;
      }
      const Json rows = Json::parse(r.response)["state_delta"]["rows"];
      if (rows.size() == 2000 && rows[1999]["name"] == "n, 1999") {
        ++good;
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(good.load(), 4);
}

}  // namespace
}  // namespace oe::dataset::test

// Shared fixture of the LLM-backed node kind tests (agent, skill): the BUILT plugin loaded through
// the real ABI by a FakeHost serving a scripted oe.llm/1 and a simple oe.prompt/1, plus a temp dir.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/fake_host.hpp"
#include "support/fake_llm_service.hpp"
#include "support/temp_dir.hpp"

namespace oe::test {

// `Kind` names the plugin under test: kPluginPath (the built .so), kKind (the node kind) and
// kFileField (the spec field naming the file or directory the node reads).
template <typename Kind>
class LlmKindTest : public ::testing::Test {
 public:
  using Json = nlohmann::ordered_json;

 protected:
  void SetUp() override {
    plugin_ = std::make_unique<LoadedPlugin>(Kind::kPluginPath, host_);
    kind_ = plugin_->kind(Kind::kKind);
    ASSERT_NE(kind_, nullptr);
  }
  void TearDown() override {
    for (oe_node* node : nodes_) {
      kind_->destroy(node);
    }
    nodes_.clear();
    plugin_.reset();
  }

  // A node `id` of this kind whose file field (agent: prompt, skill: impl) is `file`, writing
  // `writes`, plus `extra` fields.
  static Json spec(const std::string& id, const std::string& file, const Json& writes,
                   const Json& extra = Json::object()) {
    Json node{{"id", id}, {"kind", Kind::kKind}, {Kind::kFileField, file}, {"writes", writes}};
    node.update(extra);
    return node;
  }

  CreateResult tryCreate(const Json& node) {
    const Json config{{"node", node}, {"experience_dir", dir_.path().string()}};
    CreateResult created = plugin_->create(*kind_, config.dump());
    if (created.status == OE_OK) {
      nodes_.push_back(created.node);
    }
    return created;
  }
  oe_node* create(const Json& node) {
    CreateResult created = tryCreate(node);
    EXPECT_EQ(created.status, OE_OK) << created.error;
    return created.node;
  }

  // Invokes `node` as the host would; the prompt service sees {...state, ...edges, ...args}.
  CallResult call(oe_node* node, const std::string& id, const Json& args = Json::object(),
                  const Json& state_view = Json::object(), const Json& edge_inputs = Json::object(),
                  FakeContext* ctx = nullptr) {
    std::unique_ptr<FakeContext> own;
    if (ctx == nullptr) {
      own = host_.makeContext(id);
      ctx = own.get();
    }
    Json values = state_view;
    values.update(edge_inputs);
    values.update(args);
    prompts_.setValues(*ctx, values);
    const std::string request =
        Json{{"node", Json{{"id", id}, {"kind", Kind::kKind}}},
             {"args", args},
             {"state_view", state_view},
             {"edge_inputs", edge_inputs},
             {"context", Json{{"run_id", "run-1"}, {"node_id", id}, {"attempt", 1}}}}
            .dump();
    return LoadedPlugin::invoke(*kind_, node, request, *ctx);
  }

  static Json responseOf(const CallResult& result) {
    EXPECT_EQ(result.status, OE_OK) << result.error;
    return result.status == OE_OK ? Json::parse(result.response) : Json();
  }

  [[nodiscard]] std::vector<std::string> activities() const {
    std::vector<std::string> out;
    for (const RecordedEvent& event : host_.events()) {
      if (event.type == "node.activity") {
        out.push_back(event.fields.value("activity", std::string()));
      }
    }
    return out;
  }
  [[nodiscard]] size_t eventCount(const std::string& type) const {
    size_t n = 0;
    for (const RecordedEvent& event : host_.events()) {
      n += event.type == type ? 1 : 0;
    }
    return n;
  }

  FakeHost host_;
  FakeLlmService llm_{host_};
  FakePromptService prompts_{host_};
  TempDir dir_;
  std::unique_ptr<LoadedPlugin> plugin_;
  const oe_node_kind* kind_ = nullptr;
  std::vector<oe_node*> nodes_;
};

}  // namespace oe::test

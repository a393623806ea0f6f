// Shared fixture of the dataset plugin tests: the BUILT dataset.so loaded through the real ABI by
// a FakeHost that serves the host's real HTTP client (oe::net) as oe.http/1, a temp experience
// directory, and helpers to create a node and read its rows.
#pragma once

#include <gtest/gtest.h>
#include <oe/ext/http.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "oe/net/http_client.hpp"
#include "oe/net/http_service.hpp"
#include "support/fake_host.hpp"
#include "support/temp_dir.hpp"

namespace oe::dataset::test {

using Json = nlohmann::ordered_json;
using oe::test::CallResult;
using oe::test::CreateResult;
using oe::test::FakeContext;
using oe::test::FakeHost;
using oe::test::LoadedPlugin;
using oe::test::TempDir;

// The outcome of creating and invoking one node: the failing step's status and message, or
// the rows the node wrote.
struct Outcome {
  oe_status status = OE_UNKNOWN;
  std::string error;
  Json response;  // the whole response on success

  [[nodiscard]] bool ok() const { return status == OE_OK; }
  [[nodiscard]] const Json& rows(const std::string& field = "rows") const {
    return response["state_delta"][field];
  }
};

class DatasetPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    oe::net::initNet();
    oe::net::setHostApi(host_.api());
    host_.setExtension(OE_EXT_HTTP, oe::net::httpApi());
    plugin_ = std::make_unique<LoadedPlugin>(OE_DATASET_PLUGIN_PATH, host_);
    kind_ = plugin_->kind("dataset");
    ASSERT_NE(kind_, nullptr);
  }
  void TearDown() override {
    for (oe_node* node : nodes_) {
      kind_->destroy(node);
    }
    nodes_.clear();
    plugin_.reset();
  }

  // A node spec: {id, kind: dataset, source, writes: [field]}.
  static Json node(const Json& source, const std::string& id = "load",
                   const Json& writes = Json::array({"rows"})) {
    return Json{{"id", id}, {"kind", "dataset"}, {"source", source}, {"writes", writes}};
  }

  CreateResult create(const Json& spec) {
    const Json config{{"node", spec}, {"experience_dir", dir_.path().string()}};
    CreateResult created = plugin_->create(*kind_, config.dump());
    if (created.status == OE_OK && created.node != nullptr) {
      nodes_.push_back(created.node);
    }
    return created;
  }

  CallResult invoke(oe_node* node, const Json& spec, FakeContext* ctx = nullptr) {
    std::unique_ptr<FakeContext> own;
    if (ctx == nullptr) {
      own = host_.makeContext(spec.value("id", std::string("load")));
      ctx = own.get();
    }
    const Json request{{"node", spec},
                       {"args", Json::object()},
                       {"state_view", Json::object()},
                       {"edge_inputs", Json::object()},
                       {"context",
                        {{"run_id", "r1"},
                         {"node_id", spec.value("id", std::string())},
                         {"experience_dir", dir_.path().string()},
                         {"attempt", 1}}}};
    return LoadedPlugin::invoke(*kind_, node, request.dump(), *ctx);
  }

  // Creates the node and invokes it once.
  Outcome run(const Json& spec) {
    Outcome out;
    const CreateResult created = create(spec);
    if (created.status != OE_OK) {
      out.status = created.status;
      out.error = created.error;
      return out;
    }
    const CallResult called = invoke(created.node, spec);
    out.status = called.status;
    out.error = called.error;
    if (called.status == OE_OK) {
      out.response = Json::parse(called.response);
    }
    return out;
  }

  // A file source over `rel`, written with `content` first.
  Outcome runFile(const std::string& rel, const std::string& content,
                  const Json& extra = Json::object()) {
    dir_.write(rel, content);
    Json source{{"type", "file"}, {"uri", rel}};
    source.update(extra);
    return run(node(source));
  }

  std::string abs(const std::string& rel) const { return (dir_.path() / rel).string(); }

  TempDir dir_;
  FakeHost host_;
  std::unique_ptr<LoadedPlugin> plugin_;
  const oe_node_kind* kind_ = nullptr;
  std::vector<oe_node*> nodes_;
};

}  // namespace oe::dataset::test

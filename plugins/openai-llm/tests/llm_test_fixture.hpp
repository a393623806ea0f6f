// Shared fixture of the openai-llm plugin tests: the BUILT openai_llm.so loaded through the real
// ABI by a FakeHost that serves the host's real HTTP client (oe::net) as oe.http/1, and a fake
// provider server on an ephemeral port.
#pragma once

#include <gtest/gtest.h>
#include <oe/ext/http.h>
#include <oe/ext/llm.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "oe/net/http_client.hpp"
#include "oe/net/http_service.hpp"
#include "support/fake_host.hpp"
#include "support/scoped_env.hpp"
#include "support/fake_llm_server.hpp"

namespace oe::llm::test {

using Json = nlohmann::json;
using oe::test::CallResult;
using oe::test::FakeContext;
using oe::test::FakeHost;
using oe::test::FakeLlmServer;
using oe::test::FakeResponse;
using oe::test::FakeWriter;
using oe::test::LoadedPlugin;
using oe::test::RecordedRequest;

using oe::test::ScopedEnv;

// An oe.http/1 that never connects: every fetch fails and is counted. Tests whose request, were a
// check to regress, would go to a real provider (the default api.openai.com) install it, so the
// regression fails locally instead of reaching the network.
class OfflineHttp {
 public:
  OfflineHttp() {
    table_.struct_size = sizeof(oe_http_api);
    table_.fetch = &OfflineHttp::fetch;
    fetches().store(0);
  }
  [[nodiscard]] const oe_http_api* api() const { return &table_; }
  [[nodiscard]] static int fetchCount() { return fetches().load(); }

 private:
  static std::atomic<int>& fetches() {
    static std::atomic<int> count{0};
    return count;
  }
  static oe_status OE_ABI fetch(oe_host_ctx*, oe_str request_json, oe_host_buf* out_response,
                                oe_host_buf* out_error) {
    fetches().fetch_add(1);
    *out_response = oe_host_buf{nullptr, 0, nullptr};
    oe::giveBuffer("the test forbids the network; the request was: " +
                       std::string(request_json.ptr, request_json.len),
                   out_error);  // a host buffer of the host's kind: the host's release frees it
    return OE_UNAVAILABLE;
  }
  oe_http_api table_{};
};

class LlmPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    oe::net::initNet();
    oe::net::setHostApi(host_.api());
    host_.setExtension(OE_EXT_HTTP, oe::net::httpApi());
    plugin_ = std::make_unique<LoadedPlugin>(OE_OPENAI_LLM_PLUGIN_PATH, host_);
    provider_ = static_cast<const oe_llm_provider*>(
        plugin_->entry().get_extension(plugin_->self(), OE_EXT_LLM_PROVIDER));
    ASSERT_NE(provider_, nullptr);
  }
  void TearDown() override { plugin_.reset(); }

  // A config for `provider` pointed at the fake server, with fast retries.
  Json config(const std::string& provider, const Json& extra = Json::object()) const {
    Json c{{"provider", provider},
           {"base_url", provider == "openai" ? server_.baseUrl() + "/v1" : server_.baseUrl()},
           {"api_key", "test-key"},
           {"max_attempts", 4},
           {"base_ms", 1},
           {"timeout_ms", 30000},
           {"stall_timeout_ms", 30000}};
    c.update(extra);
    return c;
  }

  static Json userRequest(const std::string& content, const Json& extra = Json::object()) {
    Json r{{"model", "test-model"},
           {"messages", Json::array({{{"role", "user"}, {"content", content}}})}};
    r.update(extra);
    return r;
  }

  CallResult complete(const Json& cfg, const Json& request, FakeContext* ctx = nullptr) {
    std::unique_ptr<FakeContext> own;
    if (ctx == nullptr) {
      own = host_.makeContext("agent");
      ctx = own.get();
    }
    const std::string cfg_text = cfg.dump();
    const std::string req_text = request.dump();
    FakeWriter response;
    FakeWriter error;
    CallResult result;
    result.status = provider_->complete(plugin_->self(), FakeHost::context(*ctx),
                                        oe_str{cfg_text.data(), cfg_text.size()},
                                        oe_str{req_text.data(), req_text.size()},
                                        FakeHost::writer(response), FakeHost::writer(error));
    result.response = std::move(response.bytes);
    result.error = std::move(error.bytes);
    return result;
  }

  // The response JSON, failing the test when the call failed.
  static Json responseOf(const CallResult& result) {
    EXPECT_EQ(result.status, OE_OK) << result.error;
    return result.status == OE_OK ? Json::parse(result.response) : Json();
  }

  // The body of the only request the server saw.
  Json onlyRequestBody() const {
    const auto seen = server_.requests();
    EXPECT_EQ(seen.size(), 1U);
    return seen.empty() ? Json() : seen[0].json();
  }

  FakeLlmServer server_;
  FakeHost host_;
  std::unique_ptr<LoadedPlugin> plugin_;
  const oe_llm_provider* provider_ = nullptr;
};

}  // namespace oe::llm::test

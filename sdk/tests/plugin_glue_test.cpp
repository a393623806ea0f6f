// The C++ glue (oe/cpp/plugin.hpp) seen from the host's side: a small plugin class defined here
// is driven through the C tables OE_SDK_PLUGIN produces, with an in-memory host table.
#include <oe/cpp/plugin.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "local_fake_host.hpp"

namespace {

using oe::sdk::testing::LocalFakeHost;

// Test-owned counters, reached by the plugin through a host extension (as real plugins reach
// host services), so no global state is needed to observe lifetimes.
struct Counters {
  int plugins_alive = 0;
  int nodes_alive = 0;
  int cancels = 0;
};
struct CounterTable {
  Counters* counters;
};
constexpr char kCountersExt[] = "test.counters/1";
constexpr char kRefuseWithSdkErrorExt[] = "test.refuse-sdk/1";
constexpr char kRefuseWithRuntimeErrorExt[] = "test.refuse-runtime/1";

class GluePlugin {
 public:
  explicit GluePlugin(oe::sdk::Host host) {
    if (host.extension(kRefuseWithSdkErrorExt) != nullptr) {
      throw oe::sdk::Error(OE_FAILED_PRECONDITION, "no API key configured for glue");
    }
    if (host.extension(kRefuseWithRuntimeErrorExt) != nullptr) {
      throw std::runtime_error("glue config file unreadable");
    }
    counters_ = static_cast<const CounterTable*>(host.extension(kCountersExt))->counters;
    ++counters_->plugins_alive;
    host.log(OE_LOG_INFO, "glue plugin up");
  }
  ~GluePlugin() { --counters_->plugins_alive; }
  GluePlugin(const GluePlugin&) = delete;
  GluePlugin& operator=(const GluePlugin&) = delete;

  static constexpr std::span<const oe::sdk::KindSpec<GluePlugin>> kinds();

  [[nodiscard]] Counters& counters() const { return *counters_; }

 private:
  Counters* counters_ = nullptr;
};

// Behaves according to the raw request text, so each test picks one path through the glue.
class EchoNode final : public oe::sdk::Node {
 public:
  explicit EchoNode(Counters& counters) : counters_(counters) { ++counters_.nodes_alive; }
  ~EchoNode() override { --counters_.nodes_alive; }
  EchoNode(const EchoNode&) = delete;
  EchoNode& operator=(const EchoNode&) = delete;

  void invoke(oe::sdk::Call& call) override {
    const std::string_view request = call.request();
    if (request == "throw-sdk") {
      throw oe::sdk::Error(OE_INVALID_ARGUMENT, "node glue: args.text is missing");
    }
    if (request == "throw-runtime") {
      throw std::runtime_error("glue exploded at run time");
    }
    if (request == "throw-ok-status") {
      throw oe::sdk::Error(OE_OK, "an error that claims success");
    }
    if (request == "throw-int") {
      throw 42;  // NOLINT(hicpp-exception-baseclass): the glue must survive this too
    }
    if (request == "throw-bad-alloc") {
      throw std::bad_alloc();
    }
    if (request == "state") {
      call.respond("{\"state_delta\":{\"seen\":" + call.stateGet("topic") + "}}");
      return;
    }
    if (request == "state-refused") {
      call.respond(call.stateGet("secret"));
      return;
    }
    if (request == "llm") {
      const oe::sdk::LlmReply reply = call.llm().complete(R"({"messages":[]})");
      if (!reply.ok()) {
        throw oe::sdk::Error(reply.status(), reply.error());
      }
      call.respond(reply.response());
      return;
    }
    if (request == "prompt") {
      const oe::sdk::Prompt prompt = call.prompt();
      auto text = prompt.render("Hi {{name}}");
      auto values = prompt.valuesJson(2);
      if (!text || !values) {
        throw oe::sdk::Error(OE_INTERNAL, "prompt failed");
      }
      call.respond(text.value() + "|" + values.value());
      return;
    }
    if (request == "services?") {
      call.respond(std::string(call.llm() ? "llm" : "-") + (call.prompt() ? " prompt" : " -") +
                   (call.http() ? " http" : " -"));
      return;
    }
    if (request == "cancelled?") {
      call.respond(call.cancelled() ? "yes" : "no");
      return;
    }
    if (request == "event") {
      call.emitEvent("node.activity", "{\"step\":1}");
      call.log(OE_LOG_WARN, "from the call");
      call.respond("{}");
      return;
    }
    // Two writes: the glue lets a node stream its response in pieces.
    call.respond("{\"echo\":\"");
    call.respond(std::string(request) + "\",\"attempt\":" + std::to_string(call.attempt()) + "}");
  }
  void cancel(oe_host_ctx* /*call*/) noexcept override { ++counters_.cancels; }

 private:
  Counters& counters_;
};

std::unique_ptr<oe::sdk::Node> createEcho(GluePlugin& plugin, std::string_view /*config*/) {
  return std::make_unique<EchoNode>(plugin.counters());
}

// Created with the node's context: what it logs at create time names the node, not the plugin.
std::unique_ptr<oe::sdk::Node> createLogged(GluePlugin& plugin, std::string_view /*config*/,
                                            oe::sdk::Host node) {
  node.log(OE_LOG_WARN, "glue-logged: created");
  return std::make_unique<EchoNode>(plugin.counters());
}

std::unique_ptr<oe::sdk::Node> createPicky(GluePlugin& /*plugin*/, std::string_view config) {
  if (config == "sdk") {
    throw oe::sdk::Error(OE_INVALID_ARGUMENT, "node picky: field `mode` must be a string");
  }
  if (config == "runtime") {
    throw std::runtime_error("picky could not parse its config");
  }
  return nullptr;  // the glue must refuse a missing node rather than hand the host NULL
}

constexpr oe::sdk::KindSpec<GluePlugin> kGlueKinds[] = {
    {"glue-echo", "Echoes its request", "{\"type\":\"object\"}", OE_NODE_KIND_REENTRANT,
     &createEcho},
    {"glue-picky", "Refuses to be created", nullptr, 0, &createPicky},
    {"glue-logged", "Logs through its node context when created", nullptr, 0, &createLogged},
};

constexpr std::span<const oe::sdk::KindSpec<GluePlugin>> GluePlugin::kinds() { return kGlueKinds; }

// A plugin that offers services only: kinds() is empty and the table has no entries.
class ServicePlugin {
 public:
  explicit ServicePlugin(oe::sdk::Host /*host*/) {}
  static constexpr std::span<const oe::sdk::KindSpec<ServicePlugin>> kinds() { return {}; }
};

// The kind count comes from kinds() at compile time; nothing to keep in step by hand.
static_assert(oe::sdk::Binding<GluePlugin>::kindTotal() == std::size(kGlueKinds));
static_assert(oe::sdk::Binding<ServicePlugin>::kindTotal() == 0);

}  // namespace

OE_SDK_PLUGIN(GluePlugin, "dev.oe.test.glue", "1.2.3", "SDK glue test plugin")

namespace {

std::string_view sv(const char* s) { return s == nullptr ? std::string_view{} : s; }

struct Invocation {
  oe_host_ctx call;
  oe_writer response;
  oe_writer error;
};

class GlueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plugin_ctx_.extensions[kCountersExt] = &table_;
    entry_ = oe_plugin_entry_v1(OE_ABI_VERSION);
    ASSERT_NE(entry_, nullptr);
  }
  void TearDown() override {
    for (oe_node* node : nodes_) {
      entry_->node_kind_at(self_, 0)->destroy(node);
    }
    if (self_ != nullptr) {
      entry_->deinit(self_);
    }
    EXPECT_EQ(counters_.plugins_alive, 0);
    EXPECT_EQ(counters_.nodes_alive, 0);
  }

  void initPlugin() {
    oe_writer err;
    ASSERT_EQ(entry_->init(LocalFakeHost::api(), &plugin_ctx_, &self_, &err), OE_OK) << err.data;
    ASSERT_NE(self_, nullptr);
  }
  const oe_node_kind* kind(uint32_t index) const { return entry_->node_kind_at(self_, index); }
  oe_node* createEcho() {
    oe_writer err;
    oe_node* node = nullptr;
    const std::string config = R"({"node":{"id":"e","kind":"glue-echo"},"experience_dir":"/x"})";
    EXPECT_EQ(kind(0)->create(self_, kind(0), oe::sdk::toStr(config), &plugin_ctx_, &node, &err), OE_OK)
        << err.data;
    if (node != nullptr) {
      nodes_.push_back(node);
    }
    return node;
  }
  static oe_status invoke(oe_node* node, const oe_node_kind* k, std::string_view request,
                          Invocation& inv, uint32_t attempt = 1) {
    const oe_invocation call{sizeof(oe_invocation), attempt,     oe::sdk::toStr(request),
                             &inv.call,             &inv.response, &inv.error};
    return k->invoke(node, &call);
  }

  Counters counters_;
  CounterTable table_{&counters_};
  oe_host_ctx plugin_ctx_;
  const oe_plugin_entry* entry_ = nullptr;
  oe_plugin* self_ = nullptr;
  std::vector<oe_node*> nodes_;
};

TEST_F(GlueTest, EntryDescribesThePlugin) {
  EXPECT_EQ(entry_->struct_size, sizeof(oe_plugin_entry));
  EXPECT_EQ(entry_->abi_version, OE_ABI_VERSION);
  EXPECT_EQ(entry_->min_host_abi, OE_ABI_VERSION);
  EXPECT_EQ(entry_->flags, 0u);
  EXPECT_EQ(sv(entry_->plugin_id), "dev.oe.test.glue");
  EXPECT_EQ(sv(entry_->plugin_version), "1.2.3");
  EXPECT_EQ(sv(entry_->description), "SDK glue test plugin");
  EXPECT_NE(entry_->init, nullptr);
  EXPECT_NE(entry_->deinit, nullptr);
  EXPECT_NE(entry_->node_kind_count, nullptr);
  EXPECT_NE(entry_->node_kind_at, nullptr);
  EXPECT_NE(entry_->get_extension, nullptr);
  EXPECT_EQ(oe_plugin_entry_v1(OE_ABI_VERSION), entry_) << "the descriptor is static";
}

TEST_F(GlueTest, EntryRefusesAHostOfAnotherMajor) {
  EXPECT_EQ(oe_plugin_entry_v1(OE_ABI_MAKE_VERSION(OE_ABI_VERSION_MAJOR + 1, 0)), nullptr);
  EXPECT_EQ(oe_plugin_entry_v1(OE_ABI_MAKE_VERSION(9, 0)), nullptr);
}

TEST_F(GlueTest, InitBuildsThePluginAndDeinitDestroysIt) {
  initPlugin();
  EXPECT_EQ(counters_.plugins_alive, 1);
  ASSERT_EQ(plugin_ctx_.logs.size(), 1u);
  EXPECT_EQ(plugin_ctx_.logs[0].first, OE_LOG_INFO);
  EXPECT_EQ(plugin_ctx_.logs[0].second, "glue plugin up");
  EXPECT_EQ(entry_->get_extension(self_, "oe.anything/1"), nullptr);
  entry_->deinit(self_);
  self_ = nullptr;
  EXPECT_EQ(counters_.plugins_alive, 0);
}

TEST_F(GlueTest, InitMapsSdkErrorToItsStatusAndMessage) {
  plugin_ctx_.extensions[kRefuseWithSdkErrorExt] = &table_;
  oe_writer err;
  EXPECT_EQ(entry_->init(LocalFakeHost::api(), &plugin_ctx_, &self_, &err), OE_FAILED_PRECONDITION);
  EXPECT_EQ(err.data, "no API key configured for glue");
  EXPECT_EQ(self_, nullptr) << "a failed init must not hand out a plugin";
}

TEST_F(GlueTest, InitMapsStdExceptionToInternal) {
  plugin_ctx_.extensions[kRefuseWithRuntimeErrorExt] = &table_;
  oe_writer err;
  EXPECT_EQ(entry_->init(LocalFakeHost::api(), &plugin_ctx_, &self_, &err), OE_INTERNAL);
  EXPECT_EQ(err.data, "glue config file unreadable");
  EXPECT_EQ(self_, nullptr);
}

TEST_F(GlueTest, KindTableMirrorsTheKindSpecs) {
  initPlugin();
  ASSERT_EQ(entry_->node_kind_count(self_), 3u);
  const oe_node_kind* echo = kind(0);
  const oe_node_kind* picky = kind(1);
  ASSERT_NE(echo, nullptr);
  ASSERT_NE(picky, nullptr);
  EXPECT_EQ(echo->struct_size, sizeof(oe_node_kind));
  EXPECT_EQ(echo->flags, OE_NODE_KIND_REENTRANT);
  EXPECT_EQ(sv(echo->kind), "glue-echo");
  EXPECT_EQ(sv(echo->description), "Echoes its request");
  EXPECT_EQ(sv(echo->spec_schema_json), R"({"type":"object"})");
  EXPECT_EQ(picky->flags, 0u);
  EXPECT_EQ(sv(picky->kind), "glue-picky");
  EXPECT_EQ(picky->spec_schema_json, nullptr);
  for (const oe_node_kind* k : {echo, picky}) {
    EXPECT_NE(k->create, nullptr);
    EXPECT_NE(k->destroy, nullptr);
    EXPECT_NE(k->invoke, nullptr);
    EXPECT_NE(k->cancel, nullptr);
  }
  EXPECT_NE(echo->create, picky->create) << "each kind gets its own create trampoline";
  EXPECT_EQ(sv(kind(2)->kind), "glue-logged");
  EXPECT_EQ(kind(3), nullptr);
  EXPECT_EQ(kind(UINT32_MAX), nullptr);
  EXPECT_EQ(kind(0), echo) << "kind descriptors are static, valid until deinit";
}

TEST_F(GlueTest, InvokeStreamsTheResponse) {
  initPlugin();
  oe_node* node = createEcho();
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(counters_.nodes_alive, 1);
  Invocation inv;
  EXPECT_EQ(invoke(node, kind(0), "hello", inv, 2), OE_OK);
  EXPECT_EQ(inv.response.data, R"({"echo":"hello","attempt":2})");
  EXPECT_EQ(inv.error.data, "");
}

TEST_F(GlueTest, InvokeMapsSdkErrorToItsStatus) {
  initPlugin();
  oe_node* node = createEcho();
  Invocation inv;
  EXPECT_EQ(invoke(node, kind(0), "throw-sdk", inv), OE_INVALID_ARGUMENT);
  EXPECT_EQ(inv.error.data, "node glue: args.text is missing");
  EXPECT_EQ(inv.response.data, "");
}

TEST_F(GlueTest, InvokeMapsRuntimeErrorToInternalWithItsMessage) {
  initPlugin();
  oe_node* node = createEcho();
  Invocation inv;
  EXPECT_EQ(invoke(node, kind(0), "throw-runtime", inv), OE_INTERNAL);
  EXPECT_EQ(inv.error.data, "glue exploded at run time");
}

TEST_F(GlueTest, InvokeNeverReportsSuccessForAThrownError) {
  initPlugin();
  oe_node* node = createEcho();
  Invocation inv;
  EXPECT_EQ(invoke(node, kind(0), "throw-ok-status", inv), OE_UNKNOWN);
  EXPECT_EQ(inv.error.data, "an error that claims success");
}

TEST_F(GlueTest, InvokeSurvivesNonStandardExceptions) {
  initPlugin();
  oe_node* node = createEcho();
  Invocation thrown_int;
  EXPECT_EQ(invoke(node, kind(0), "throw-int", thrown_int), OE_INTERNAL);
  EXPECT_EQ(thrown_int.error.data, "unknown C++ exception in plugin");
  Invocation out_of_memory;
  EXPECT_EQ(invoke(node, kind(0), "throw-bad-alloc", out_of_memory), OE_RESOURCE_EXHAUSTED);
  EXPECT_EQ(out_of_memory.error.data, "out of memory");
}

TEST_F(GlueTest, ResponseOverTheWriterLimitFailsTheCall) {
  initPlugin();
  oe_node* node = createEcho();
  Invocation inv;
  inv.response.limit = 16;
  EXPECT_EQ(invoke(node, kind(0), "a request longer than sixteen bytes", inv),
            OE_RESOURCE_EXHAUSTED);
  EXPECT_NE(inv.error.data.find("size limit"), std::string::npos) << inv.error.data;
}

TEST_F(GlueTest, StateGetReturnsTheValueAndReleasesTheHostBuffer) {
  initPlugin();
  oe_node* node = createEcho();
  Invocation inv;
  inv.call.state["topic"] = R"("cats")";
  EXPECT_EQ(invoke(node, kind(0), "state", inv), OE_OK) << inv.error.data;
  EXPECT_EQ(inv.response.data, R"({"state_delta":{"seen":"cats"}})");
  EXPECT_EQ(inv.call.releases, 1);
  EXPECT_EQ(inv.call.outstanding_buffers, 0);
}

TEST_F(GlueTest, StateGetReleasesTheHostBufferWhenTheCopyThrows) {
  OE_SKIP_WHERE_NEW_CANNOT_THROW();
  initPlugin();
  oe_node* node = createEcho();
  Invocation inv;
  inv.call.state["topic"] = R"("cats")";
  inv.call.oversized_buffers = true;  // copying the buffer into a std::string throws
  EXPECT_EQ(invoke(node, kind(0), "state", inv), OE_RESOURCE_EXHAUSTED);
  EXPECT_FALSE(inv.error.data.empty());
  EXPECT_EQ(inv.call.releases, 1);
  EXPECT_EQ(inv.call.outstanding_buffers, 0);
}

TEST_F(GlueTest, StateGetRefusalBecomesTheCallsStatus) {
  initPlugin();
  oe_node* node = createEcho();
  Invocation inv;
  EXPECT_EQ(invoke(node, kind(0), "state-refused", inv), OE_PERMISSION_DENIED);
  EXPECT_NE(inv.error.data.find("state_get(secret)"), std::string::npos) << inv.error.data;
  EXPECT_EQ(inv.call.releases, 0);
}

TEST_F(GlueTest, CallServicesUseTheCallContextNotThePlugins) {
  initPlugin();
  oe_node* node = createEcho();
  Invocation not_cancelled;
  EXPECT_EQ(invoke(node, kind(0), "cancelled?", not_cancelled), OE_OK);
  EXPECT_EQ(not_cancelled.response.data, "no");
  Invocation cancelled;
  cancelled.call.cancelled = true;
  EXPECT_EQ(invoke(node, kind(0), "cancelled?", cancelled), OE_OK);
  EXPECT_EQ(cancelled.response.data, "yes");

  Invocation with_event;
  EXPECT_EQ(invoke(node, kind(0), "event", with_event), OE_OK);
  ASSERT_EQ(with_event.call.events.size(), 1u);
  EXPECT_EQ(with_event.call.events[0].first, "node.activity");
  EXPECT_EQ(with_event.call.events[0].second, R"({"step":1})");
  ASSERT_EQ(with_event.call.logs.size(), 1u);
  EXPECT_EQ(with_event.call.logs[0].second, "from the call");
  EXPECT_TRUE(plugin_ctx_.events.empty());
}

TEST_F(GlueTest, CallFindsNoServicesWhereTheHostOffersNone) {
  initPlugin();
  oe_node* node = createEcho();
  Invocation inv;
  EXPECT_EQ(invoke(node, kind(0), "services?", inv), OE_OK) << inv.error.data;
  EXPECT_EQ(inv.response.data, "- - -");
  Invocation llm;
  EXPECT_EQ(invoke(node, kind(0), "llm", llm), OE_UNIMPLEMENTED);
  EXPECT_EQ(llm.error.data, "this host does not offer oe.llm/1");
}

TEST_F(GlueTest, CallReachesTheLlmAndPromptServicesOfItsOwnContext) {
  initPlugin();
  oe_node* node = createEcho();
  Invocation inv;
  oe::sdk::testing::installLlmAndPrompt(inv.call);
  EXPECT_EQ(invoke(node, kind(0), "services?", inv), OE_OK) << inv.error.data;
  EXPECT_EQ(inv.response.data, "llm prompt -");

  Invocation llm;
  oe::sdk::testing::installLlmAndPrompt(llm.call);
  EXPECT_EQ(invoke(node, kind(0), "llm", llm), OE_OK) << llm.error.data;
  EXPECT_EQ(llm.response.data, R"({"text":"hello"})");
  EXPECT_EQ(llm.call.state["llm.request"], R"({"messages":[]})");
  EXPECT_EQ(llm.call.releases, 1);
  EXPECT_EQ(llm.call.outstanding_buffers, 0);

  Invocation prompt;
  oe::sdk::testing::installLlmAndPrompt(prompt.call);
  EXPECT_EQ(invoke(node, kind(0), "prompt", prompt), OE_OK) << prompt.error.data;
  EXPECT_EQ(prompt.response.data, R"(rendered: Hi {{name}}|{"indent":2})");
  EXPECT_EQ(prompt.call.releases, 2);
  EXPECT_EQ(prompt.call.outstanding_buffers, 0);
}

TEST_F(GlueTest, CreateWithTheNodeContextLogsAsTheNode) {
  initPlugin();
  const oe_node_kind* logged = kind(2);
  oe_host_ctx node_ctx;
  oe_writer err;
  oe_node* node = nullptr;
  ASSERT_EQ(logged->create(self_, logged, oe::sdk::toStr("{}"), &node_ctx, &node, &err), OE_OK)
      << err.data;
  ASSERT_NE(node, nullptr);
  nodes_.push_back(node);
  ASSERT_EQ(node_ctx.logs.size(), 1u);
  EXPECT_EQ(node_ctx.logs[0].first, OE_LOG_WARN);
  EXPECT_EQ(node_ctx.logs[0].second, "glue-logged: created");
  EXPECT_EQ(plugin_ctx_.logs.size(), 1u) << "only init's line goes to the plugin context";
}

TEST(GlueServiceOnly, APluginWithoutKindsHasAnEmptyTable) {
  const oe_plugin_entry* entry =
      oe::sdk::Binding<ServicePlugin>::entry(OE_ABI_VERSION, "dev.oe.test.svc", "1", "service");
  ASSERT_NE(entry, nullptr);
  oe_host_ctx ctx;
  oe_writer err;
  oe_plugin* self = nullptr;
  ASSERT_EQ(entry->init(LocalFakeHost::api(), &ctx, &self, &err), OE_OK) << err.data;
  EXPECT_EQ(entry->node_kind_count(self), 0u);
  EXPECT_EQ(entry->node_kind_at(self, 0), nullptr);
  entry->deinit(self);
}

TEST_F(GlueTest, CancelReachesTheNode) {
  initPlugin();
  oe_node* node = createEcho();
  Invocation inv;
  kind(0)->cancel(node, &inv.call);
  EXPECT_EQ(counters_.cancels, 1);
}

TEST_F(GlueTest, DestroyDeletesTheNode) {
  initPlugin();
  oe_node* node = createEcho();
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(counters_.nodes_alive, 1);
  kind(0)->destroy(node);
  nodes_.clear();
  EXPECT_EQ(counters_.nodes_alive, 0);
}

TEST_F(GlueTest, CreateFailuresAreStatusesWithMessages) {
  initPlugin();
  const oe_node_kind* picky = kind(1);
  struct Case {
    const char* config;
    oe_status status;
    const char* message;
  };
  const Case cases[] = {
      {"sdk", OE_INVALID_ARGUMENT, "node picky: field `mode` must be a string"},
      {"runtime", OE_INTERNAL, "picky could not parse its config"},
      {"null", OE_INTERNAL, "plugin returned no node"},
  };
  for (const Case& c : cases) {
    oe_writer err;
    oe_node* node = nullptr;
    EXPECT_EQ(picky->create(self_, picky, oe::sdk::toStr(c.config), &plugin_ctx_, &node, &err), c.status)
        << c.config;
    EXPECT_EQ(err.data, c.message) << c.config;
    EXPECT_EQ(node, nullptr) << c.config;
  }
}

}  // namespace

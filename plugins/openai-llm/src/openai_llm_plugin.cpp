// Plugin dev.oe.openai-llm: no node kinds; it serves oe.llm-provider/1 for the providers
// "openai" (chat completions, any OpenAI-compatible server) and "anthropic" (Messages). The host's
// oe.llm/1 service calls it after resolving the provider, the model and the limits (docs/llm.md).
#include <oe/ext/llm.h>

#include <cstring>
#include <oe/cpp/plugin.hpp>
#include <span>
#include <string>

#include "completion.hpp"
#include "http_port.hpp"
#include "protocol.hpp"
#include "provider_config.hpp"

#ifndef OE_OPENAI_LLM_PLUGIN_VERSION
#error "OE_OPENAI_LLM_PLUGIN_VERSION must be defined by the build"
#endif

namespace oe::llm {

class OpenAiLlmPlugin {
 public:
  explicit OpenAiLlmPlugin(sdk::Host host) : host_(host) {}

  // A service-only plugin: no node kinds.
  static constexpr std::span<const sdk::KindSpec<OpenAiLlmPlugin>> kinds() { return {}; }
  static const void* extension(OpenAiLlmPlugin& plugin, const char* id);

  // [thread-safe] One completion; throws sdk::Error with the failure's status and message.
  void complete(oe_host_ctx* call, std::string_view config_json, std::string_view request_json,
                oe_writer* response) const {
    const oe_host_api& api = *host_.api();
    auto config = parseProviderConfig(config_json, &processEnv);
    if (!config) {
      raise(std::move(config).failure());
    }
    auto request = parseLlmRequest(request_json, config->default_model);
    if (!request) {
      raise(std::move(request).failure());
    }
    oe_host_ctx* ctx_for_host = call != nullptr ? call : host_.context();
    const sdk::Http http = sdk::findHttp(api, ctx_for_host);
    if (!http) {
      throw sdk::Error(
          OE_FAILED_PRECONDITION,
          "the openai-llm plugin needs the host's HTTP service (oe.http/1 with fetch), "
          "which this host does not offer; use an oe host of the same version");
    }
    const CompletionContext ctx{api, http, call, ctx_for_host};
    auto result = llm::complete(ctx, *config, *request);
    if (!result) {
      raise(std::move(result).failure());
    }
    const std::string json = result->dump(-1, ' ', false, Json::error_handler_t::replace);
    if (api.write(response, oe_str{json.data(), json.size()}) != OE_OK) {
      throw sdk::Error(OE_RESOURCE_EXHAUSTED, "the LLM response exceeds the host's size limit");
    }
  }

  [[nodiscard]] const sdk::Host& host() const noexcept { return host_; }

 private:
  [[noreturn]] static void raise(Failure failure) {
    throw sdk::Error(failure.status, std::move(failure.message));
  }

  sdk::Host host_;
};

namespace {

using Binding = sdk::Binding<OpenAiLlmPlugin>;

constexpr const char* kProviderNames[] = {"openai", "anthropic", nullptr};

oe_status OE_ABI providerComplete(oe_plugin* self, oe_host_ctx* call, oe_str config_json,
                                  oe_str request_json, oe_writer* response,
                                  oe_writer* err) noexcept {
  if (self == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  return Binding::guard(self, err, [&] {
    Binding::pluginOf(self).complete(call, sdk::toView(config_json), sdk::toView(request_json),
                                     response);
  });
}

constexpr oe_llm_provider kProvider{sizeof(oe_llm_provider), kProviderNames, &providerComplete};

}  // namespace

const void* OpenAiLlmPlugin::extension(OpenAiLlmPlugin& /*plugin*/, const char* id) {
  return std::strcmp(id, OE_EXT_LLM_PROVIDER) == 0 ? &kProvider : nullptr;
}

}  // namespace oe::llm

OE_SDK_PLUGIN(oe::llm::OpenAiLlmPlugin, "dev.oe.openai-llm", OE_OPENAI_LLM_PLUGIN_VERSION,
              "LLM provider for OpenAI-compatible chat completions and Anthropic Messages")

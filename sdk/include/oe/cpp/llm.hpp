// Header-only C++20 wrapper of the host's oe.llm/1 for node kinds that ask the run's LLM: find
// the service for a call, complete one request, and give the host's buffers back on every path.
#pragma once

#include <oe/cpp/requires_cxx20.hpp>

#if OE_SDK_CXX20

#include <oe/ext/llm.h>
#include <oe/host.h>
#include <oe/cpp/host_buffer.hpp>

#include <string_view>

namespace oe::sdk {

// The outcome of one completion: on OE_OK, response() is the response JSON (oe/ext/llm.h: "text",
// "tool_calls", "usage", "model"), valid while the object lives; otherwise status() (e.g.
// OE_RESOURCE_EXHAUSTED when the run's budget is spent: do not retry) and error(). Owns the host's
// buffer and releases it exactly once; move-only.
using LlmReply = HostReply;

// oe.llm/1 bound to the invocation it was found for (Call::llm() or findLlm). The host resolves
// the provider and model, applies rate limits and the budget, and accounts the tokens to the
// node. Empty (false) when the host offers no LLM service. Cheap to copy; valid during the call.
class Llm {
 public:
  Llm() = default;
  Llm(const oe_host_api& host, const oe_llm_api& table, oe_host_ctx* call) noexcept
      : host_(&host), table_(&table), call_(call) {}
  explicit operator bool() const noexcept { return table_ != nullptr; }

  // [blocking] One completion of `request_json` ({"model"?, "system"?, "messages", "tools"?,
  // "max_tokens"?}). An empty Llm answers OE_UNIMPLEMENTED ("this host does not offer oe.llm/1").
  [[nodiscard]] LlmReply complete(std::string_view request_json) const {
    if (table_ == nullptr) {
      return HostReply::absent(OE_EXT_LLM);
    }
    return HostReply::call(*host_, call_, OE_EXT_LLM,
                           [&](oe_host_buf* response, oe_host_buf* error) {
                             return table_->complete(call_, toStr(request_json), response, error);
                           });
  }

 private:
  const oe_host_api* host_ = nullptr;
  const oe_llm_api* table_ = nullptr;
  oe_host_ctx* call_ = nullptr;
};

// The host's oe.llm/1 for the invocation whose context is `call`, or an empty Llm when it offers
// none (or a table too short to hold complete).
inline Llm findLlm(const oe_host_api& host, oe_host_ctx* call) {
  const auto* table = static_cast<const oe_llm_api*>(host.get_extension(call, OE_EXT_LLM));
  if (!OE_HAS_MEMBER(oe_llm_api, table, complete) || table->complete == nullptr) {
    return {};
  }
  return {host, *table, call};
}

}  // namespace oe::sdk

#endif  // OE_SDK_CXX20

// Header-only C++20 wrapper of the host's oe.prompt/1: `{{placeholder}}` rendering with the host's
// semantics, and the node's merged inputs as JSON, each copied out of a host buffer that is given
// back exactly once, on every path.
#pragma once

#include <oe/cpp/requires_cxx20.hpp>

#if OE_SDK_CXX20

#include <oe/ext/prompt.h>
#include <oe/host.h>
#include <oe/cpp/expected.hpp>
#include <oe/cpp/host_buffer.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace oe::sdk {

// oe.prompt/1 bound to the invocation it was found for (Call::prompt() or findPrompt). Empty
// (false) when the host offers no prompt service. Cheap to copy; valid during the call.
class Prompt {
 public:
  Prompt() = default;
  Prompt(const oe_host_api& host, const oe_prompt_api& table, oe_host_ctx* call) noexcept
      : host_(&host), table_(&table), call_(call) {}
  explicit operator bool() const noexcept { return table_ != nullptr; }
  // True when the host's table also has values_json (a member an older host may lack).
  [[nodiscard]] bool offersValuesJson() const noexcept {
    return OE_HAS_MEMBER(oe_prompt_api, table_, values_json) && table_->values_json != nullptr;
  }

  // `template_text` with its {{name}}, {{a.b}} and {{$item.id}} placeholders filled from the
  // call's {...state_view, ...edge_inputs, ...args}; a placeholder with no value stays as written.
  [[nodiscard]] Expected<std::string> render(std::string_view template_text) const {
    if (table_ == nullptr) {
      return absent("render");
    }
    HostBuffer text(*host_, call_);
    const oe_status status = table_->render(call_, toStr(template_text), text.out());
    if (status != OE_OK) {
      return failed("render", status);
    }
    return text.str();
  }
  // The call's merged inputs as JSON.stringify(values, null, indent) prints them (0: compact).
  [[nodiscard]] Expected<std::string> valuesJson(uint32_t indent) const {
    if (!offersValuesJson()) {
      return absent("values_json");
    }
    HostBuffer json(*host_, call_);
    const oe_status status = table_->values_json(call_, indent, json.out());
    if (status != OE_OK) {
      return failed("values_json", status);
    }
    return json.str();
  }

 private:
  static Failure absent(const char* member) {
    return fail(OE_UNIMPLEMENTED,
                "this host does not offer " OE_EXT_PROMPT " " + std::string(member));
  }
  static Failure failed(const char* member, oe_status status) {
    return fail(status, OE_EXT_PROMPT " " + std::string(member) + " failed with status " +
                            std::to_string(status));
  }

  const oe_host_api* host_ = nullptr;
  const oe_prompt_api* table_ = nullptr;
  oe_host_ctx* call_ = nullptr;
};

// The host's oe.prompt/1 for the invocation whose context is `call`, or an empty Prompt when it
// offers none (or a table too short to hold render).
inline Prompt findPrompt(const oe_host_api& host, oe_host_ctx* call) {
  const auto* table = static_cast<const oe_prompt_api*>(host.get_extension(call, OE_EXT_PROMPT));
  if (!OE_HAS_MEMBER(oe_prompt_api, table, render) || table->render == nullptr) {
    return {};
  }
  return {host, *table, call};
}

}  // namespace oe::sdk

#endif  // OE_SDK_CXX20

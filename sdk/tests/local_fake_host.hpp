// A minimal in-memory oe_host_api for the SDK's own tests: writers are strings with a size limit,
// state is a map, and every release is counted so a double or missing release shows up.
#pragma once

#include <oe/ext/llm.h>
#include <oe/ext/prompt.h>
#include <oe/oe.h>

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// The ABI leaves these opaque; a host defines them. This test host is the only one in the binary.
struct oe_writer {
  std::string data;
  size_t limit = size_t{1} << 20;
};

struct oe_host_ctx {
  std::map<std::string, std::string, std::less<>> state;            // field -> JSON
  std::map<std::string, const void*, std::less<>> extensions;       // id -> table
  std::vector<std::pair<oe_log_level, std::string>> logs;
  std::vector<std::pair<std::string, std::string>> events;          // type, fields JSON
  bool cancelled = false;
  // Buffers handed out claim a length (2^62 bytes) no allocation can satisfy, so copying one
  // throws bad_alloc: the SDK must still release them. Not max_size() + 1: with GCC 12 that is
  // 2^63, and forming the end pointer is then an overflow UBSan reports. See
  // OE_SKIP_WHERE_NEW_CANNOT_THROW.
  bool oversized_buffers = false;
  int outstanding_buffers = 0;  // buffers handed out and not yet released
  int releases = 0;
};

// The tests that make a copy throw bad_alloc need an allocation that fails by throwing. ASan and
// TSan end the process instead (they report the impossible request as out of memory), so those
// tests skip there; the release build's test job runs them.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define OE_SKIP_WHERE_NEW_CANNOT_THROW() \
  GTEST_SKIP() << "under ASan/TSan an impossible allocation aborts instead of throwing bad_alloc"
#else
#define OE_SKIP_WHERE_NEW_CANNOT_THROW() static_cast<void>(0)
#endif

namespace oe::sdk::testing {

inline std::string_view view(oe_str s) { return {s.ptr, s.len}; }

// Fills `out` with a copy of `text` as a host would; LocalFakeHost::release frees and counts it.
inline void handOut(oe_host_ctx* ctx, oe_host_buf* out, const std::string& text) {
  auto* copy = new std::string(text);  // NOLINT(cppcoreguidelines-owning-memory)
  const size_t len = ctx->oversized_buffers ? size_t{1} << 62 : copy->size();
  *out = oe_host_buf{copy->data(), len, copy};
  ++ctx->outstanding_buffers;
}

struct LocalFakeHost {
  static void OE_ABI log(oe_host_ctx* ctx, oe_log_level level, oe_str message) {
    ctx->logs.emplace_back(level, std::string(view(message)));
  }
  static oe_status OE_ABI write(oe_writer* writer, oe_str bytes) {
    if (writer->data.size() + bytes.len > writer->limit) {
      return OE_RESOURCE_EXHAUSTED;
    }
    writer->data.append(bytes.ptr, bytes.len);
    return OE_OK;
  }
  static void OE_ABI release(oe_host_ctx* ctx, oe_host_buf* buf) {
    if (buf == nullptr || buf->opaque == nullptr) {
      return;  // NULL-safe, as the ABI requires
    }
    delete static_cast<std::string*>(buf->opaque);  // NOLINT(cppcoreguidelines-owning-memory)
    buf->opaque = nullptr;
    buf->ptr = nullptr;
    buf->len = 0;
    --ctx->outstanding_buffers;
    ++ctx->releases;
  }
  static oe_status OE_ABI emitEvent(oe_host_ctx* ctx, oe_str type, oe_str fields_json) {
    ctx->events.emplace_back(std::string(view(type)), std::string(view(fields_json)));
    return OE_OK;
  }
  static oe_status OE_ABI stateGet(oe_host_ctx* ctx, oe_str field, oe_host_buf* out_json) {
    auto it = ctx->state.find(view(field));
    if (it == ctx->state.end()) {
      return OE_PERMISSION_DENIED;
    }
    handOut(ctx, out_json, it->second);
    return OE_OK;
  }
  static bool OE_ABI isCancelled(oe_host_ctx* ctx) { return ctx->cancelled; }
  static const void* OE_ABI getExtension(oe_host_ctx* ctx, const char* id) {
    auto it = ctx->extensions.find(std::string_view(id));
    return it == ctx->extensions.end() ? nullptr : it->second;
  }

  static const oe_host_api* api() {
    static constexpr oe_host_api kApi{sizeof(oe_host_api), OE_ABI_VERSION, &log,      &write,
                                      &release,            &emitEvent,     &stateGet, &isCancelled,
                                      &getExtension};
    return &kApi;
  }
};

// Scripted oe.llm/1 and oe.prompt/1, driven by the call context's state map: "llm.error" makes
// complete fail with that message, "prompt.fail" makes render and values_json fail; complete
// records its request as "llm.request". Buffers come from handOut, so releases are counted.
struct LocalFakeServices {
  static oe_status OE_ABI complete(oe_host_ctx* call, oe_str request, oe_host_buf* out_response,
                                   oe_host_buf* out_error) {
    call->state["llm.request"] = std::string(view(request));
    if (auto it = call->state.find("llm.error"); it != call->state.end()) {
      handOut(call, out_error, it->second);
      return OE_UNAVAILABLE;
    }
    handOut(call, out_response, R"({"text":"hello"})");
    return OE_OK;
  }
  static oe_status OE_ABI render(oe_host_ctx* call, oe_str text, oe_host_buf* out_text) {
    if (call->state.count("prompt.fail") != 0) {
      return OE_FAILED_PRECONDITION;
    }
    handOut(call, out_text, "rendered: " + std::string(view(text)));
    return OE_OK;
  }
  static oe_status OE_ABI valuesJson(oe_host_ctx* call, uint32_t indent, oe_host_buf* out_json) {
    if (call->state.count("prompt.fail") != 0) {
      return OE_FAILED_PRECONDITION;
    }
    handOut(call, out_json, "{\"indent\":" + std::to_string(indent) + "}");
    return OE_OK;
  }

  static const oe_llm_api* llm() {
    static constexpr oe_llm_api kLlm{sizeof(oe_llm_api), &complete};
    return &kLlm;
  }
  static const oe_prompt_api* prompt() {
    static constexpr oe_prompt_api kPrompt{sizeof(oe_prompt_api), &render, &valuesJson};
    return &kPrompt;
  }
};

inline void installLlmAndPrompt(oe_host_ctx& ctx) {
  ctx.extensions[OE_EXT_LLM] = LocalFakeServices::llm();
  ctx.extensions[OE_EXT_PROMPT] = LocalFakeServices::prompt();
}

}  // namespace oe::sdk::testing

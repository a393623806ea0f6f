// The C service table: each entry forwards to the virtual methods of the context it is given,
// and never lets a C++ exception reach the plugin.
#include "oe/plugins/host_context.hpp"

#include <oe/ext/draft/cli_replay.h>
#include <oe/ext/draft/limits.h>
#include <oe/ext/draft/subrun.h>
#include <oe/ext/http.h>
#include <oe/ext/llm.h>
#include <oe/ext/prompt.h>

#include <cstring>
#include <exception>
#include <memory>
#include <new>

#include "oe/common/host_buffer.hpp"
#include "oe/net/http_service.hpp"

namespace oe::plugins {
namespace {

std::string_view view(oe_str s) noexcept {
  return s.ptr == nullptr ? std::string_view{} : std::string_view{s.ptr, s.len};
}

void OE_ABI apiLog(oe_host_ctx* ctx, oe_log_level level, oe_str message) {
  if (ctx == nullptr) {
    return;
  }
  try {
    ctx->log(level, view(message));
  } catch (...) {  // logging must never take the host down
  }
}

oe_status OE_ABI apiWrite(oe_writer* writer, oe_str bytes) {
  if (writer == nullptr || (bytes.ptr == nullptr && bytes.len != 0)) {
    return OE_INVALID_ARGUMENT;
  }
  if (writer->data.size() + bytes.len > writer->limit) {
    return OE_RESOURCE_EXHAUSTED;
  }
  try {
    writer->data.append(bytes.ptr, bytes.len);
    return OE_OK;
  } catch (const std::bad_alloc&) {
    return OE_RESOURCE_EXHAUSTED;
  }
}

void OE_ABI apiRelease(oe_host_ctx* /*ctx*/, oe_host_buf* buf) { releaseBuffer(buf); }

oe_status OE_ABI apiEmitEvent(oe_host_ctx* ctx, oe_str type, oe_str fields_json) {
  if (ctx == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  try {
    return ctx->emitEvent(view(type), view(fields_json));
  } catch (...) {
    return OE_INTERNAL;
  }
}

oe_status OE_ABI apiStateGet(oe_host_ctx* ctx, oe_str field, oe_host_buf* out) {
  if (ctx == nullptr || out == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  try {
    std::string value;
    const oe_status status = ctx->stateGet(view(field), value);
    if (status != OE_OK) {
      return status;
    }
    giveBuffer(std::move(value), out);
    return OE_OK;
  } catch (...) {
    return OE_INTERNAL;
  }
}

bool OE_ABI apiIsCancelled(oe_host_ctx* ctx) { return ctx != nullptr && ctx->isCancelled(); }

oe_status OE_ABI llmComplete(oe_host_ctx* ctx, oe_str request_json, oe_host_buf* out_response,
                             oe_host_buf* out_error) {
  if (out_response != nullptr) {
    *out_response = oe_host_buf{nullptr, 0, nullptr};
  }
  if (out_error != nullptr) {
    *out_error = oe_host_buf{nullptr, 0, nullptr};
  }
  if (ctx == nullptr || out_response == nullptr || out_error == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  try {
    std::string out;
    const oe_status status = ctx->llmComplete(view(request_json), out);
    giveBuffer(std::move(out), status == OE_OK ? out_response : out_error);
    return status;
  } catch (const std::exception& e) {
    giveBuffer(std::string("oe.llm/1: ") + e.what(), out_error);
    return OE_INTERNAL;
  } catch (...) {
    return OE_INTERNAL;
  }
}

oe_status OE_ABI promptRender(oe_host_ctx* ctx, oe_str template_text, oe_host_buf* out_text) {
  if (ctx == nullptr || out_text == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  *out_text = oe_host_buf{nullptr, 0, nullptr};
  try {
    std::string out;
    const oe_status status = ctx->renderPrompt(view(template_text), out);
    if (status == OE_OK) {
      giveBuffer(std::move(out), out_text);
    }
    return status;
  } catch (...) {
    return OE_INTERNAL;
  }
}

oe_status OE_ABI promptValues(oe_host_ctx* ctx, uint32_t indent, oe_host_buf* out_json) {
  if (ctx == nullptr || out_json == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  *out_json = oe_host_buf{nullptr, 0, nullptr};
  try {
    std::string out;
    const oe_status status = ctx->promptValues(indent, out);
    if (status == OE_OK) {
      giveBuffer(std::move(out), out_json);
    }
    return status;
  } catch (...) {
    return OE_INTERNAL;
  }
}

oe_status OE_ABI limitsAcquire(oe_host_ctx* ctx, oe_str name, oe_host_buf* out_slot) {
  if (out_slot != nullptr) {
    *out_slot = oe_host_buf{nullptr, 0, nullptr};
  }
  if (ctx == nullptr || out_slot == nullptr || name.len == 0 || name.ptr == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  try {
    return ctx->acquireLimit(view(name), out_slot);
  } catch (...) {
    return OE_INTERNAL;
  }
}

oe_status OE_ABI cliReplayBegin(oe_host_ctx* ctx, oe_str request_json, oe_host_buf* out_recorded,
                                oe_host_buf* out_error) {
  for (oe_host_buf* out : {out_recorded, out_error}) {
    if (out != nullptr) {
      *out = oe_host_buf{nullptr, 0, nullptr};
    }
  }
  if (ctx == nullptr || out_recorded == nullptr || out_error == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  try {
    std::string out;
    const oe_status status = ctx->cliReplayBegin(view(request_json), out);
    if (status != OE_OK) {
      giveBuffer(std::move(out), out_error);
    } else if (!out.empty()) {
      giveBuffer(std::move(out), out_recorded);
    }
    return status;
  } catch (const std::exception& e) {
    giveBuffer(std::string(OE_EXT_CLI_REPLAY ": ") + e.what(), out_error);
    return OE_INTERNAL;
  } catch (...) {
    return OE_INTERNAL;
  }
}

oe_status OE_ABI cliReplayFinish(oe_host_ctx* ctx, oe_str request_json, oe_str outcome_json,
                                 oe_host_buf* out_error) {
  if (out_error != nullptr) {
    *out_error = oe_host_buf{nullptr, 0, nullptr};
  }
  if (ctx == nullptr || out_error == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  try {
    std::string message;
    const oe_status status = ctx->cliReplayFinish(view(request_json), view(outcome_json), message);
    if (status != OE_OK) {
      giveBuffer(std::move(message), out_error);
    }
    return status;
  } catch (const std::exception& e) {
    giveBuffer(std::string(OE_EXT_CLI_REPLAY ": ") + e.what(), out_error);
    return OE_INTERNAL;
  } catch (...) {
    return OE_INTERNAL;
  }
}

oe_status OE_ABI subrunRun(oe_host_ctx* ctx, oe_str request, oe_host_buf* out_result) {
  if (out_result != nullptr) {
    *out_result = oe_host_buf{nullptr, 0, nullptr};
  }
  if (ctx == nullptr || out_result == nullptr || request.ptr == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  try {
    std::string out;
    const oe_status status = ctx->runSubExperience(view(request), out);
    giveBuffer(std::move(out), out_result);
    return status;
  } catch (...) {
    return OE_INTERNAL;
  }
}

constexpr oe_llm_api kLlmApi{sizeof(oe_llm_api), &llmComplete};
constexpr oe_prompt_api kPromptApi{sizeof(oe_prompt_api), &promptRender, &promptValues};
constexpr oe_limits_api kLimitsApi{sizeof(oe_limits_api), &limitsAcquire};
constexpr oe_subrun_api kSubrunApi{sizeof(oe_subrun_api), &subrunRun};
constexpr oe_cli_replay_api kCliReplayApi{sizeof(oe_cli_replay_api), &cliReplayBegin,
                                          &cliReplayFinish};

const void* OE_ABI apiGetExtension(oe_host_ctx* ctx, const char* id) {
  if (ctx == nullptr || id == nullptr) {
    return nullptr;
  }
  // Services every context offers; the rest is up to the context.
  if (std::strcmp(id, OE_EXT_HTTP) == 0) {
    return net::httpApi();
  }
  if (std::strcmp(id, OE_EXT_LLM) == 0) {
    return &kLlmApi;
  }
  if (std::strcmp(id, OE_EXT_PROMPT) == 0) {
    return &kPromptApi;
  }
  if (std::strcmp(id, OE_EXT_LIMITS) == 0) {
    return &kLimitsApi;
  }
  if (std::strcmp(id, OE_EXT_SUBRUN) == 0) {
    return &kSubrunApi;
  }
  if (std::strcmp(id, OE_EXT_CLI_REPLAY) == 0) {
    return &kCliReplayApi;
  }
  try {
    return ctx->extension(id);
  } catch (...) {
    return nullptr;
  }
}

constexpr oe_host_api kHostApi{sizeof(oe_host_api), OE_ABI_VERSION,  &apiLog,
                               &apiWrite,           &apiRelease,     &apiEmitEvent,
                               &apiStateGet,        &apiIsCancelled, &apiGetExtension};

}  // namespace

const oe_host_api* hostApi() noexcept { return &kHostApi; }

void initHostServices() {
  net::initNet();
  net::setHostApi(&kHostApi);
}

void PluginContext::log(oe_log_level level, std::string_view message) {
  if (sink_ != nullptr) {
    sink_->write(level, id_, message);
  }
}

}  // namespace oe::plugins

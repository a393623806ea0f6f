// One completion against a provider: build the request, send it through oe.http/1, retry what is
// transient (429, 5xx, connection failures) with backoff that honours Retry-After, stop when the
// call is cancelled, and turn every failure into a message that says what to do.
#pragma once

#include <oe/cpp/http.hpp>
#include <oe/host.h>

#include "expected.hpp"
#include "protocol.hpp"
#include "provider_config.hpp"

namespace oe::llm {

struct CompletionContext {
  const oe_host_api& host;
  sdk::Http http;
  oe_host_ctx* call;     // the invocation's context (cancellation, events); may be null
  oe_host_ctx* log_ctx;  // where log lines go: `call` when given, else the plugin context
};

// The oe.llm response JSON, or the failure of the last attempt.
Expected<Json> complete(const CompletionContext& ctx, const ProviderConfig& config,
                        const LlmRequest& request);

}  // namespace oe::llm

/* LLM completion: oe.llm/1 is the host service node kinds (agent, skill, evolution) call;
 * oe.llm-provider/1 is what a provider plugin (openai-llm) offers the host. The host sits in
 * between to resolve the provider and model, enforce rate limits and budgets, account tokens,
 * and record or replay (docs/llm.md). */
#ifndef OE_EXT_LLM_H
#define OE_EXT_LLM_H

#include <stdint.h>

#include "oe/types.h"

OE_BEGIN_DECLS

#define OE_EXT_LLM "oe.llm/1"
#define OE_EXT_LLM_PROVIDER "oe.llm-provider/1"

/* Request JSON (both directions use the same shapes):
 *   {"model"?: "...", "system"?: "...", "messages": [{"role": "user"|"assistant", "content": "..."}],
 *    "tools"?: [{"name", "description", "input_schema"}], "max_tokens"?: <int>}
 * Response JSON:
 *   {"text": "...", "tool_calls"?: [{"name", "input"}], "usage"?: {"input_tokens", "output_tokens"},
 *    "stop_reason"?: "...", "model": "<model actually used>"} */

/* Host service, from host->get_extension(call, OE_EXT_LLM). */
typedef struct oe_llm_api {
  uint32_t struct_size;
  /* [any-thread, blocking] call: the invocation's call context. The host resolves the provider
   * and model, waits for the run's rate limits (runtime.limits), checks the budget before the
   * call, accounts the tokens to the node (node.tokens event, node metrics, run totals), records
   * or replays (--llm-record / --llm-replay), and honours cancellation.
   * request_json: BORROWED, the request shape above ("model" optional: the node's `model:`).
   * On return exactly one buffer is filled: out_response (the response JSON) on OE_OK, out_error
   * (the message) otherwise; both are HOST-owned, give a filled one back with host->release.
   * Statuses: OE_RESOURCE_EXHAUSTED when the run's budget would be exceeded (the run stops with
   * reason budget_exhausted; do not retry), OE_FAILED_PRECONDITION when no provider is configured
   * (the message says which env vars to set) or a replay has no recording for the request,
   * OE_CANCELLED, or the provider's status after its own retries. */
  oe_status(OE_ABI* complete)(oe_host_ctx* call, oe_str request_json, oe_host_buf* out_response,
                              oe_host_buf* out_error);
  /* Append new members here only. */
} oe_llm_api;

/* Provider, from a plugin's entry->get_extension(self, OE_EXT_LLM_PROVIDER). */
typedef struct oe_llm_provider {
  uint32_t struct_size;
  /* Static, NULL-terminated list of provider names this plugin serves ("openai", "anthropic"). */
  const char* const* providers;
  /* [any-thread, blocking] config_json: BORROWED {"provider": "openai", "base_url": "...",
   * "api_key": "...", "timeout_ms": n, "stall_timeout_ms": n, "max_attempts": n, "base_ms": n,
   * "max_delay_ms": n}; every member but "provider" is optional (defaults in docs/llm.md).
   * call: the invocation's call context (cancellation, node.activity while waiting to retry), or
   * NULL. request_json/response as above (the host has resolved "model"). Retries on
   * 429/5xx/connection errors are the provider's, honouring Retry-After. response: HOST-owned
   * writer for the response JSON; err: the message on failure (it names the provider, the model,
   * the URL and what to do). */
  oe_status(OE_ABI* complete)(oe_plugin* self, oe_host_ctx* call, oe_str config_json,
                              oe_str request_json, oe_writer* response, oe_writer* err);
  /* Append new members here only. */
} oe_llm_provider;

OE_END_DECLS

#endif /* OE_EXT_LLM_H */

/* oe.http/1: the host's HTTP client (libcurl + OpenSSL), so plugins need not ship a TLS stack.
 * Obtained with host->get_extension(ctx, OE_EXT_HTTP); NULL when the host has none. */
#ifndef OE_EXT_HTTP_H
#define OE_EXT_HTTP_H

#include <stdint.h>

#include "oe/types.h"

OE_BEGIN_DECLS

#define OE_EXT_HTTP "oe.http/1"

typedef struct oe_http_api {
  uint32_t struct_size; /* sizeof(oe_http_api) in the host's build: OE_HAS_MEMBER before use */

  /* [any-thread, blocking] Performs one HTTP request; returns when the response is complete, the
   * call is cancelled (is_cancelled), or a timeout fires. No retries: policy is the caller's.
   * ctx: the invocation's call context (cancellation), or a node or plugin context.
   * request_json: BORROWED {"method": "GET"|"POST"|..., "url": "...", "headers": {"k": "v"},
   *   "body": "<string>", "timeout_ms": <total, default 600000>,
   *   "stall_timeout_ms": <no byte sent or received for this long aborts, default 60000>}
   *   (a non-streaming LLM call sends nothing until it is done: size the stall timeout for it).
   * On return exactly one buffer is filled, the other is {NULL, 0, NULL}; both are HOST-owned:
   * give the filled one back with host->release, exactly once.
   * out_response, on OE_OK: {"status": <int>, "headers": {"lower-case-name": "v"},
   *   "body": "<string>"} for any HTTP status (a 429 or 500 is a response, not an error).
   *   Redirects are followed (up to 5); bodies are UTF-8 text (invalid bytes become U+FFFD).
   * out_error, on OE_UNAVAILABLE (connection failed), OE_DEADLINE_EXCEEDED (timeout or stall),
   *   OE_CANCELLED or OE_INVALID_ARGUMENT: a message naming the URL and the cause. */
  oe_status(OE_ABI* fetch)(oe_host_ctx* ctx, oe_str request_json, oe_host_buf* out_response,
                           oe_host_buf* out_error);

  /* Append new members here only. */
} oe_http_api;

OE_END_DECLS

#endif /* OE_EXT_HTTP_H */

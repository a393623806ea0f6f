/* oe.limits/1-draft: slots under the run's `runtime.limits.<name>` for work that is not an
 * oe.llm/1 call (a coding CLI run as a subprocess, a licence-bound tool), counted by the same
 * limiter as the LLM calls (docs/llm.md, "Rate limits").
 *
 * DRAFT: outside every promise (docs/abi.md, "Draft extensions"): not hashed, not pinned, and it
 * may change or disappear in any release. A plugin that uses it is rebuilt with each oe. */
#ifndef OE_EXT_DRAFT_LIMITS_H
#define OE_EXT_DRAFT_LIMITS_H

#include <stdint.h>

#include "oe/types.h"

OE_BEGIN_DECLS

#define OE_EXT_LIMITS "oe.limits/1-draft"

/* From host->get_extension(call, OE_EXT_LIMITS), inside an invocation. */
typedef struct oe_limits_api {
  uint32_t struct_size;
  /* [any-thread, blocking] Waits until `runtime.limits.<name>` has room (max_in_flight, and
   * requests_per_minute, which counts this start), then takes one slot of it. Waiting happens on
   * the calling thread; the first wait emits node.activity "waiting for room under
   * runtime.limits.<name>" for the call's node.
   * name: borrowed for the call; `claude-code`, say, not the full path.
   * out_slot: on OE_OK, a HOST-owned handle whose text names the limits the slot is counted
   * against ("runtime.limits.claude-code"), or empty when the run sets no such limit (nothing is
   * held). Give it back with host->release, once, when the limited work is over: that frees the
   * slot. Release it before invoke returns; the host gives back a slot still held then, with a
   * warning in the node's log. On any other status out_slot is empty.
   * Returns OE_CANCELLED when the call is cancelled while waiting, OE_INVALID_ARGUMENT for an
   * empty name, OE_FAILED_PRECONDITION outside an invocation. */
  oe_status(OE_ABI* acquire)(oe_host_ctx* call, oe_str name, oe_host_buf* out_slot);
  /* Append new members here only. */
} oe_limits_api;

OE_END_DECLS

#endif /* OE_EXT_DRAFT_LIMITS_H */

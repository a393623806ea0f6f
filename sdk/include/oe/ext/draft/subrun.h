/* oe.subrun/1-draft: runs a nested experience to its end as part of the calling node's call,
 * the service behind the `experience` kind (docs/kinds-experience.md). The host loads and
 * validates the child, runs it with the parent run's plugins, LLM service (budget, limits,
 * record/replay) and cancellation, and answers with the child's result.
 *
 * DRAFT: outside every promise (docs/abi.md, "Draft extensions"): not hashed, not pinned, and it
 * may change or disappear in any release. A plugin that uses it is rebuilt with each oe. */
#ifndef OE_EXT_DRAFT_SUBRUN_H
#define OE_EXT_DRAFT_SUBRUN_H

#include <stdint.h>

#include "oe/types.h"

OE_BEGIN_DECLS

#define OE_EXT_SUBRUN "oe.subrun/1-draft"

/* From host->get_extension(call, OE_EXT_SUBRUN), inside an invocation. */
typedef struct oe_subrun_api {
  uint32_t struct_size;
  /* [any-thread, blocking] Runs the child experience on the calling thread until it ends.
   * request_json: BORROWED {"experience": "<the child's experience.yaml or its folder, relative
   *   to the calling node's experience folder, or absolute>", "declared_as": "<as written in
   *   the node, for messages>", "args": {<the child run's args>}, "state_scope": "isolated" |
   *   "shared"}.
   *   isolated: the child gets a fresh store at <parent>/.openexpertise/sub/<node>-<run>.sqlite.
   *   shared: the child starts from the parent's state and every write of a field the parent
   *   declares goes to the parent's store too, through its type checks and merge rules.
   * out_result: on OE_OK, a HOST-owned buffer holding {"runId", "status", "finalState",
   *   "eventLog"} (status: success | partial | failed | interrupted; a failed child is still
   *   OE_OK). On any other status it holds the message. Release it with host->release.
   * Returns OE_NOT_FOUND (no such file), OE_INVALID_ARGUMENT (the child does not load or
   * validate, or the request is malformed), OE_FAILED_PRECONDITION (nested too deep, or a cycle
   * of experiences; outside an invocation), OE_CANCELLED (the call was cancelled: the child is
   * stopped first), OE_RESOURCE_EXHAUSTED (the run's LLM budget ran out inside the child). */
  oe_status(OE_ABI* run)(oe_host_ctx* call, oe_str request_json, oe_host_buf* out_result);
  /* Append new members here only. */
} oe_subrun_api;

OE_END_DECLS

#endif /* OE_EXT_DRAFT_SUBRUN_H */

/* Native tools: a shared library that a `kind: tool` node names in `impl:` and that the tool
 * plugin calls in-process (decision D13). Build one out of tree with oe_add_native_tool() from
 * the OpenExpertiseSDK CMake package (docs/tools.md). */
#ifndef OE_KINDS_TOOL_H
#define OE_KINDS_TOOL_H

#include "oe/host.h"
#include "oe/types.h"

OE_BEGIN_DECLS

/* v2 (ABI 0.2) added the call context; a library that still exports oe_tool_invoke_v1 is
 * refused with a message that says to rebuild it. */
#define OE_TOOL_ENTRY_SYMBOL "oe_tool_invoke_v2"

/* Exported by a native tool library as OE_TOOL_ENTRY_SYMBOL.
 * [node-serialized: never twice at once for one node of the graph unless its for_each runs items
 * concurrently; any worker thread]
 * host: the host table; valid during the call.
 * call: the invocation's call context, valid until the function returns. With it the tool can
 *   log (host->log, lines name the node), poll cancellation (host->is_cancelled turns true on
 *   timeout_ms, fail_run or Ctrl-C: return OE_CANCELLED soon after), emit events
 *   (host->emit_event, "node.activity") and reach host services (host->get_extension:
 *   oe.http/1, oe.llm/1, oe.prompt/1).
 * input_json: BORROWED, the same object a .mjs tool receives:
 *   {...args, "_edge_inputs": {...}, "_state": {...}}.
 * out: HOST-owned writer; append the result object {"state_delta": {...}, "edge_output"?,
 *   "metrics"?} with host->write.
 * err: HOST-owned writer; on failure append a message and return a status other than OE_OK. */
typedef oe_status(OE_ABI* oe_tool_invoke_fn)(const oe_host_api* host, oe_host_ctx* call,
                                             oe_str input_json, oe_writer* out, oe_writer* err);

/* The prototype, so a tool built with -Wmissing-prototypes needs none of its own. */
OE_EXPORT oe_status OE_ABI oe_tool_invoke_v2(const oe_host_api* host, oe_host_ctx* call,
                                             oe_str input_json, oe_writer* out, oe_writer* err);

/* Defines the entry point; its body sees host, call (may stay unused), input_json, out, err. */
#define OE_DECLARE_TOOL                                                               \
  OE_EXTERN_C OE_EXPORT oe_status OE_ABI oe_tool_invoke_v2(                           \
      const oe_host_api* host, oe_host_ctx* call OE_MAYBE_UNUSED, oe_str input_json, \
      oe_writer* out, oe_writer* err)

OE_END_DECLS

#endif /* OE_KINDS_TOOL_H */

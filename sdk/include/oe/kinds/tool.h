/* Native tools: a shared library that a `kind: tool` node names in `impl:` and that the tool
 * plugin calls in-process (decision D13). */
#ifndef OE_KINDS_TOOL_H
#define OE_KINDS_TOOL_H

#include "oe/host.h"
#include "oe/types.h"

OE_BEGIN_DECLS

#define OE_TOOL_ENTRY_SYMBOL "oe_tool_invoke_v1"

/* Exported by a native tool library as OE_TOOL_ENTRY_SYMBOL.
 * [node-serialized unless the library is reentrant; in practice any worker thread]
 * host:  the host table (use host->write to append to out/err); valid during the call.
 * input_json: BORROWED, the same object a .mjs tool receives:
 *             {...args, "_edge_inputs": {...}, "_state": {...}}.
 * out:   HOST-owned writer; append the result object {"state_delta": {...}, "edge_output"?, "metrics"?}.
 * err:   HOST-owned writer; on failure append a message and return a non-OE_OK status. */
typedef oe_status(OE_ABI* oe_tool_invoke_fn)(const oe_host_api* host, oe_str input_json,
                                             oe_writer* out, oe_writer* err);

#define OE_DECLARE_TOOL                                                                   \
  OE_EXTERN_C OE_EXPORT oe_status OE_ABI oe_tool_invoke_v1(const oe_host_api* host,       \
                                                          oe_str input_json, oe_writer* out, \
                                                          oe_writer* err)

OE_END_DECLS

#endif /* OE_KINDS_TOOL_H */

/* The services the host offers to plugins, as a table of function pointers (oe_host_api).
 * A plugin links nothing from the host: everything it needs from oe comes through this table. */
#ifndef OE_HOST_H
#define OE_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "oe/types.h"

OE_BEGIN_DECLS

/* Every function in this table is [any-thread]: it may be called from any thread, including
 * several at once, with a context that is still valid (docs/abi.md, "Host functions").
 * HOST-owned; the table stays valid from init until deinit returns. */
typedef struct oe_host_api {
  uint32_t struct_size; /* sizeof(oe_host_api) in the host's build: check before using a member */
  uint32_t abi_version; /* OE_ABI_VERSION the host was built with */

  /* Writes one line to the host log. ctx: the plugin, node or call context (a node or call
   * context names the node). message: BORROWED. */
  void(OE_ABI* log)(oe_host_ctx* ctx, oe_log_level level, oe_str message);

  /* Appends bytes to a host-owned writer. bytes: BORROWED, copied before return.
   * Returns OE_OK, or OE_RESOURCE_EXHAUSTED when the writer's size limit is hit. */
  oe_status(OE_ABI* write)(oe_writer* writer, oe_str bytes);

  /* Gives back a buffer the host handed out: the one release for every oe_host_buf (state_get,
   * oe.llm/1, oe.prompt/1, oe.http/1). Once per buffer; resets it to {NULL, 0, NULL}. A second
   * release of it, or of a copy of it, does nothing (every copy's ptr dangles after the first).
   * NULL-safe. ctx: any context, or NULL. */
  void(OE_ABI* release)(oe_host_ctx* ctx, oe_host_buf* buf);

  /* Appends an event for the current node to the run's event log. call: the call context of an
   * invocation in progress (OE_FAILED_PRECONDITION for any other context). type:
   * "node.activity", "node.tokens" or the plugin's own "<plugin-id>.<name>" (its own plugin_id,
   * then a name of [A-Za-z0-9_.-]; never in the host's run., node. or state. namespaces, whatever
   * the plugin_id). fields_json: BORROWED JSON object whose members are appended
   * after the host's own (type, run_id, node_id, ts). Returns OE_INVALID_ARGUMENT, and logs why,
   * for any other type or for fields_json that is not a JSON object; OE_RESOURCE_EXHAUSTED past
   * the caps on an event's size and a call's rate (docs/abi.md, "Caps on what one call writes"). */
  oe_status(OE_ABI* emit_event)(oe_host_ctx* call, oe_str type, oe_str fields_json);

  /* Reads a state field the node declares in `reads`, as JSON: its value when the call was
   * dispatched (the same as the request's state_view), not a live view of the store.
   * out_json: filled with a HOST-owned buffer ("null" when unset); release it.
   * Returns OE_PERMISSION_DENIED for a field the node does not read, OE_NOT_FOUND for one not in
   * state.schema. */
  oe_status(OE_ABI* state_get)(oe_host_ctx* call, oe_str field, oe_host_buf* out_json);

  /* True once the host wants the call to stop (timeout, fail_run, Ctrl-C). Cheap; poll it. */
  bool(OE_ABI* is_cancelled)(oe_host_ctx* call);

  /* Looks up an optional host service by id ("oe.http/1", "oe.llm/1", ...). Returns NULL when the
   * host does not offer it. The returned table is HOST-owned and valid until deinit. */
  const void*(OE_ABI* get_extension)(oe_host_ctx* ctx, const char* extension_id);

  /* Append new members here only. */
} oe_host_api;

OE_END_DECLS

#endif /* OE_HOST_H */

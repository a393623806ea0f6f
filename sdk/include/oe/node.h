/* Node kinds: what a plugin contributes to the graph. A kind is a string ("tool", "agent", ...,
 * or a third party's own); the host knows none of them in advance. */
#ifndef OE_NODE_H
#define OE_NODE_H

#include <stdint.h>

#include "oe/types.h"

OE_BEGIN_DECLS

/* oe_node_kind.flags */
#define OE_NODE_KIND_REENTRANT 0x1u /* invoke may run concurrently on the same oe_node */

/* One call of a node. HOST-owned; valid until invoke returns. */
typedef struct oe_invocation {
  uint32_t struct_size; /* sizeof(oe_invocation) in the host's build */
  uint32_t attempt;     /* 1-based attempt number under on_error: retry */
  /* BORROWED JSON: {"node": <spec>, "args": {...}, "state_view": {...}, "edge_inputs": {...},
   * "context": {"run_id", "node_id", "experience_dir", "attempt"}} */
  oe_str request_json;
  oe_host_ctx* call;  /* per-call context for emit_event, state_get, is_cancelled, log */
  oe_writer* response; /* the plugin writes {"state_delta": {...}, "edge_output"?, "metrics"?} */
  oe_writer* error;    /* on failure, the plugin writes a human-readable message */
  /* Append new members here only. */
} oe_invocation;

typedef struct oe_node_kind {
  uint32_t struct_size; /* sizeof(oe_node_kind) in the plugin's build */
  uint32_t flags;       /* OE_NODE_KIND_* */
  const char* kind;     /* static UTF-8, e.g. "tool"; unique among loaded plugins */
  const char* description;
  /* Static JSON Schema (draft-07) for the node's kind-specific fields, checked by `oe validate`
   * together with the common fields (id, kind, reads, writes, on_error, ...). NULL = no check. */
  const char* spec_schema_json;

  /* [control-thread] Creates a node instance. config_json: BORROWED
   * {"node": <spec as JSON>, "experience_dir": "<abs path>"}. node_ctx: HOST-owned, valid until
   * destroy. On failure returns a status and writes a message to err (it becomes the node's
   * error). */
  oe_status(OE_ABI* create)(oe_plugin* self, oe_str config_json, oe_host_ctx* node_ctx,
                            oe_node** out_node, oe_writer* err);

  /* [control-thread] Destroys a node created by create; no call is in progress. */
  void(OE_ABI* destroy)(oe_node* node);

  /* [node-serialized] Runs the node once: never concurrently on the same oe_node unless the kind
   * sets OE_NODE_KIND_REENTRANT. Runs on a host worker thread or the scheduler thread; blocking
   * is allowed. Returns OE_OK with the response written, or a status with err written. */
  oe_status(OE_ABI* invoke)(oe_node* node, const oe_invocation* invocation);

  /* [thread-safe] Asks the invocation whose call context is `call` to stop soon; invoke still
   * returns (usually OE_CANCELLED). May be NULL for kinds whose calls cannot be interrupted. */
  void(OE_ABI* cancel)(oe_node* node, oe_host_ctx* call);

  /* [thread-safe] Kind-specific interfaces by id, e.g. "oe.kind.tool/1". NULL = none. */
  const void*(OE_ABI* get_extension)(oe_node* node, const char* extension_id);

  /* Append new members here only. */
} oe_node_kind;

OE_END_DECLS

#endif /* OE_NODE_H */

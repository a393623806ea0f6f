/* Node kinds: what a plugin contributes to the graph. A kind is a string ("tool", "agent", ...,
 * or a third party's own); the host knows none of them in advance.
 *
 * Threads (docs/abi.md, "Threads and lifetimes"): the host has one coordinator thread, which
 * schedules the graph and calls create and destroy, and a pool of worker threads, which call
 * invoke. Tags name where a call comes from and what may run at the same time:
 *   [exclusive]        nothing else runs in the library meanwhile (init, deinit).
 *   [coordinator]      on the coordinator thread; other oe_nodes' invoke may be in flight on workers.
 *   [node-serialized]  on a worker or the coordinator; never twice at once on one oe_node unless
 *                      the kind is OE_NODE_KIND_REENTRANT.
 *   [any-thread]       from any thread, concurrently with anything but what the call says.
 *
 * Instances: the host creates oe_nodes lazily, when a node of the graph first needs one. A kind
 * that is not reentrant gets one oe_node per call in flight, so a for_each with concurrency 4
 * holds up to 4 oe_nodes for one node of the graph; they are reused across items, attempts,
 * pipeline items and loop iterations, and destroyed once the node can run no more (a main-pass
 * node when it finishes, the others when the run ends). A reentrant kind gets one oe_node per
 * node of the graph. */
#ifndef OE_NODE_H
#define OE_NODE_H

#include <stdint.h>

#include "oe/types.h"

OE_BEGIN_DECLS

/* oe_node_kind.flags. The host refuses a kind that sets a bit it does not know. */
#define OE_NODE_KIND_REENTRANT 0x1u /* invoke may run concurrently on the same oe_node */
/* (ABI 0.3) The host never replays a node of this kind from its node cache nor stores its
 * output: its result depends on what no cache key sees (the time, a remote service's state). */
#define OE_NODE_KIND_NOT_CACHEABLE 0x2u

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

typedef struct oe_node_kind oe_node_kind;

struct oe_node_kind {
  uint32_t struct_size; /* sizeof(oe_node_kind) in the plugin's build; the host reads members
                           up to it and treats later ones as NULL (cancel is the first optional) */
  uint32_t flags;       /* OE_NODE_KIND_*; unknown bits are refused */
  const char* kind;     /* static UTF-8, e.g. "tool"; unique among loaded plugins */
  const char* description;
  /* Static JSON Schema (draft-07) for the node's kind-specific fields, checked by `oe validate`
   * together with the common fields (id, kind, reads, writes, on_error, ...). NULL = no check. */
  const char* spec_schema_json;

  /* [coordinator] Creates a node instance, before its first invoke.
   * kind: this descriptor, the pointer node_kind_at returned (one function can serve many kinds
   *   and tell them apart by it; embed the descriptor in a larger struct to carry data).
   * config_json: BORROWED {"node": <spec as JSON>, "experience_dir": "<abs path>"}.
   * node_ctx: HOST-owned, valid until destroy returns: log (names the node), get_extension
   *   (services that need no invocation, such as oe.http/1). emit_event and state_get need a
   *   call context and return OE_FAILED_PRECONDITION here.
   * Never concurrent with another create or destroy of the same plugin. On failure returns a
   * status and writes a message to err (it becomes the node's error, and the call fails). */
  oe_status(OE_ABI* create)(oe_plugin* self, const oe_node_kind* kind, oe_str config_json,
                            oe_host_ctx* node_ctx, oe_node** out_node, oe_writer* err);

  /* [coordinator] Destroys a node created by create. No invoke or cancel of this node is in
   * progress, and none starts afterwards. */
  void(OE_ABI* destroy)(oe_node* node);

  /* [node-serialized] Runs the node once. Blocking is allowed. Returns OE_OK with the response
   * written, or a status with err written. A call the host cancels before it starts (Ctrl-C,
   * timeout_ms spent waiting for a worker) is never passed to invoke. A call still running 10 s
   * after timeout_ms cancelled it is given up: its context closes, its answer is ignored and its
   * instance is not used again (docs/abi.md, "Timeouts and calls that do not stop"). */
  oe_status(OE_ABI* invoke)(oe_node* node, const oe_invocation* invocation);

  /* [any-thread] Asks the invocation whose call context is `call` to stop soon; invoke still
   * returns (usually OE_CANCELLED). The host calls it only while that invoke is running (after it
   * started, before it returned; a cancel racing the return finishes before the host reuses or
   * destroys the node), at most once per call, and after is_cancelled(call) has turned true.
   * It must not block, and may call only log and is_cancelled. NULL for kinds whose calls cannot
   * be interrupted (they poll is_cancelled instead). Optional: a descriptor may end before it. */
  void(OE_ABI* cancel)(oe_node* node, oe_host_ctx* call);

  /* Append new members here only. */
};

OE_END_DECLS

#endif /* OE_NODE_H */

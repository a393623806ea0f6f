/* oe.cli-replay/1-draft: `oe run --llm-record` / `--llm-replay` for coding CLI runs, and their
 * tokens counted against `runtime.budget` like the oe.llm/1 calls' (docs/llm.md, "Record and
 * replay"; docs/kinds-cli-agent.md). The host keeps the recording; the plugin says what it would
 * run (the request) and what came of it (the outcome).
 *
 * DRAFT: outside every promise (docs/abi.md, "Draft extensions"): not hashed, not pinned, and it
 * may change or disappear in any release. A plugin that uses it is rebuilt with each oe. */
#ifndef OE_EXT_DRAFT_CLI_REPLAY_H
#define OE_EXT_DRAFT_CLI_REPLAY_H

#include <stdint.h>

#include "oe/types.h"

OE_BEGIN_DECLS

#define OE_EXT_CLI_REPLAY "oe.cli-replay/1-draft"

/* From host->get_extension(call, OE_EXT_CLI_REPLAY), inside an invocation.
 *
 * request_json (both functions): a JSON object saying what the plugin would run, everything a
 * replay must match and nothing that depends on the machine: {"provider": "<canonical name>",
 * "argv": [...program name first, not its path], "workdir": "<relative to the experience>",
 * "env": [...what the node adds], "stdin": "..."}. The host keys the recording by its canonical
 * JSON (sorted keys) and reads only "provider" (for messages and node.tokens).
 *
 * outcome_json: a JSON object the plugin reads back on replay as it wrote it; the host reads only
 * its "usage" member, {"input_tokens", "output_tokens", "model", "cost_usd"} (each optional). */
typedef struct oe_cli_replay_api {
  uint32_t struct_size;
  /* [any-thread] Before the CLI would start. Refuses with OE_RESOURCE_EXHAUSTED when
   * runtime.budget is already spent (a CLI's usage is known only afterwards, so it may start
   * while any budget is left); the run then stops as for a refused oe.llm/1 call.
   * Under --llm-replay: OE_OK with out_recorded filled with the recorded outcome JSON: the plugin
   * must not start the CLI; it reproduces the node's answer and events from the outcome and
   * calls finish with it, as after a live run. A request not in the recording is
   * OE_FAILED_PRECONDITION, with a message naming the node, the provider and the file.
   * Otherwise OE_OK with out_recorded empty: the plugin runs the CLI, then calls finish.
   * out_recorded, out_error: HOST-owned, given back with host->release; at most one is filled. */
  oe_status(OE_ABI* begin)(oe_host_ctx* call, oe_str request_json, oe_host_buf* out_recorded,
                           oe_host_buf* out_error);
  /* [any-thread] After a CLI run that ended on its own (an exit code or a signal; not a timeout,
   * stall or cancel, which a replay could not reproduce), or a replayed one, at the point of the
   * node's events where the run's usage became known. Accounts the outcome's usage (a
   * node.tokens event, the run's budget and totals), so a replay counts exactly as the recorded
   * run did, and, under --llm-record, appends the exchange to the recording. OE_INVALID_ARGUMENT
   * for JSON that is not an object, with out_error filled (HOST-owned, released with
   * host->release). */
  oe_status(OE_ABI* finish)(oe_host_ctx* call, oe_str request_json, oe_str outcome_json,
                            oe_host_buf* out_error);
  /* Append new members here only. */
} oe_cli_replay_api;

OE_END_DECLS

#endif /* OE_EXT_DRAFT_CLI_REPLAY_H */

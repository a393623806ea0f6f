/* oe.prompt/1: `{{placeholder}}` prompt interpolation with the host's semantics (reference §2.1
 * plus decision D3), so every node kind that renders a prompt renders it the same way. */
#ifndef OE_EXT_PROMPT_H
#define OE_EXT_PROMPT_H

#include <stdint.h>

#include "oe/types.h"

OE_BEGIN_DECLS

#define OE_EXT_PROMPT "oe.prompt/1"

/* From host->get_extension(call, OE_EXT_PROMPT), inside an invocation. */
typedef struct oe_prompt_api {
  uint32_t struct_size;
  /* [any-thread] Renders template_text against the call's value map
   * {...state_view, ...edge_inputs, ...args} (later sources win; args include the injected
   * $item, $index, $iter, $loop, $pipeline). `{{name}}`, `{{a.b.c}}` and `{{$item.id}}` are
   * replaced: strings verbatim, anything else as compact JSON (JSON.stringify). A placeholder with
   * no value stays as written (upstream's strict:false).
   * out_text: filled with a HOST-owned buffer; give it back with host->release.
   * Returns OE_FAILED_PRECONDITION outside an invocation. */
  oe_status(OE_ABI* render)(oe_host_ctx* call, oe_str template_text, oe_host_buf* out_text);
  /* [any-thread] The same value map as JSON, as JSON.stringify(values, null, indent) prints it
   * (indent 0: compact; object members sorted by key). For kinds that hand the
   * model the whole bundle (skill). out_json: HOST-owned; give it back with host->release.
   * Returns OE_FAILED_PRECONDITION outside an invocation. */
  oe_status(OE_ABI* values_json)(oe_host_ctx* call, uint32_t indent, oe_host_buf* out_json);
  /* Append new members here only. */
} oe_prompt_api;

OE_END_DECLS

#endif /* OE_EXT_PROMPT_H */

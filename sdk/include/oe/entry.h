/* The one symbol a plugin exports, and the descriptor it returns. */
#ifndef OE_ENTRY_H
#define OE_ENTRY_H

#include <stdint.h>

#include "oe/host.h"
#include "oe/node.h"
#include "oe/types.h"
#include "oe/version.h"

OE_BEGIN_DECLS

/* A versioned descriptor. The host reads members up to min(struct_size, its own sizeof) and
 * treats the rest as NULL, so a plugin built against an older minor keeps loading: init,
 * node_kind_count and node_kind_at are required, every later member is optional. */
typedef struct oe_plugin_entry {
  uint32_t struct_size;  /* = sizeof(oe_plugin_entry) in the plugin's build */
  uint32_t abi_version;  /* OE_ABI_VERSION the plugin was compiled against */
  uint32_t min_host_abi; /* lowest host ABI (same major) the plugin needs */
  uint32_t flags;        /* must be 0: the host refuses any other value */
  const char* plugin_id; /* reverse-DNS id, static UTF-8, e.g. "dev.oe.tool" */
  const char* plugin_version; /* the plugin's own version, e.g. "1.4.2" */
  const char* description;

  /* [exclusive] Called before anything else, never concurrently with any other call into the
   * library, nor with another init or deinit in the process. The host initialises a loaded
   * library once however often it is loaded, but may call init again after deinit: keep state
   * in *out_self, or count the calls (docs/abi.md, "init and deinit over a process's life").
   * host: valid until deinit returns. plugin_ctx: HOST-owned, valid until deinit.
   * On success stores the plugin's state in *out_self (may stay NULL). */
  oe_status(OE_ABI* init)(const oe_host_api* host, oe_host_ctx* plugin_ctx, oe_plugin** out_self,
                          oe_writer* err);

  /* [exclusive] Called once per successful init, after every oe_node of this plugin is destroyed
   * and no call into the library is in progress. NULL when there is nothing to free. */
  void(OE_ABI* deinit)(oe_plugin* self);

  /* [any-thread] The node kinds this plugin provides (may be 0 for service plugins).
   * Returned pointers are PLUGIN-owned and valid until deinit. */
  uint32_t(OE_ABI* node_kind_count)(const oe_plugin* self);
  const oe_node_kind*(OE_ABI* node_kind_at)(const oe_plugin* self, uint32_t index);

  /* [any-thread] Plugin-level services by id ("oe.llm-provider/1", ...). NULL = none. */
  const void*(OE_ABI* get_extension)(const oe_plugin* self, const char* extension_id);

  /* Append new members here only. */
} oe_plugin_entry;

#define OE_PLUGIN_ENTRY_SYMBOL "oe_plugin_entry_v1"

/* The entry point's type. host_abi_version: the host's OE_ABI_VERSION. Returns a descriptor with
 * static lifetime, or NULL to refuse this host. */
typedef const oe_plugin_entry*(OE_ABI* oe_plugin_entry_fn)(uint32_t host_abi_version);

/* The entry point's prototype, so a plugin built with -Wmissing-prototypes needs none of its own.
 * Every plugin defines exactly this function, with OE_DECLARE_PLUGIN_ENTRY. */
OE_EXPORT const oe_plugin_entry* OE_ABI oe_plugin_entry_v1(uint32_t host_abi_version);

#define OE_DECLARE_PLUGIN_ENTRY \
  OE_EXTERN_C OE_EXPORT const oe_plugin_entry* OE_ABI oe_plugin_entry_v1(uint32_t host_abi_version)

OE_END_DECLS

#endif /* OE_ENTRY_H */

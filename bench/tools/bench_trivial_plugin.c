/* A plugin with one kind that does nothing worth timing (bench_plugin_isolation.cpp): invoke
 * writes an empty state delta. What a call of it costs is the plugin layer's cost alone, in
 * process or across the socket to a helper process. */
#include <oe/oe.h>

#include <stdlib.h>

struct oe_node {
  const oe_host_api* host;
};

static const oe_host_api* g_host;

static oe_status OE_ABI trivial_init(const oe_host_api* host, oe_host_ctx* plugin_ctx,
                                     oe_plugin** out_self, oe_writer* err) {
  (void)plugin_ctx;
  (void)err;
  g_host = host;
  *out_self = NULL;
  return OE_OK;
}

static oe_status OE_ABI trivial_create(oe_plugin* self, const oe_node_kind* kind,
                                       oe_str config_json, oe_host_ctx* node_ctx,
                                       oe_node** out_node, oe_writer* err) {
  (void)self;
  (void)kind;
  (void)config_json;
  (void)node_ctx;
  (void)err;
  oe_node* node = (oe_node*)malloc(sizeof(oe_node));
  if (node == NULL) {
    return OE_RESOURCE_EXHAUSTED;
  }
  node->host = g_host;
  *out_node = node;
  return OE_OK;
}

static void OE_ABI trivial_destroy(oe_node* node) { free(node); }

static oe_status OE_ABI trivial_invoke(oe_node* node, const oe_invocation* invocation) {
  static const char kResponse[] = "{\"state_delta\":{}}";
  const oe_str response = {kResponse, sizeof(kResponse) - 1};
  return node->host->write(invocation->response, response);
}

static const oe_node_kind kKinds[1] = {{
    (uint32_t)sizeof(oe_node_kind),
    OE_NODE_KIND_REENTRANT,
    "bench-trivial",
    "Writes an empty state delta (the plugin layer's cost alone)",
    NULL,
    trivial_create,
    trivial_destroy,
    trivial_invoke,
    NULL,
}};

static uint32_t OE_ABI trivial_kind_count(const oe_plugin* self) {
  (void)self;
  return 1;
}

static const oe_node_kind* OE_ABI trivial_kind_at(const oe_plugin* self, uint32_t index) {
  (void)self;
  return index == 0 ? &kKinds[0] : NULL;
}

static const oe_plugin_entry kEntry = {
    (uint32_t)sizeof(oe_plugin_entry),
    OE_ABI_VERSION,
    OE_ABI_VERSION,
    0,
    "dev.oe.bench.trivial",
    "0.1.0",
    "Benchmark plugin: one kind that does nothing",
    trivial_init,
    NULL,
    trivial_kind_count,
    trivial_kind_at,
    NULL,
};

OE_DECLARE_PLUGIN_ENTRY {
  return oe_abi_compatible(host_abi_version, OE_ABI_VERSION, OE_ABI_VERSION) ? &kEntry : NULL;
}

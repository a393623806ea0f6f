/* Pins the plugin ABI's memory layout as a C11 compiler sees it: the core structs and the
 * extension tables (oe/ext/). A failing _Static_assert here means a struct changed shape: that is
 * an ABI break (docs/abi.md, "Versioning"). Draft extensions (oe/ext/draft/) are not pinned. */
#include <oe/ext/http.h>
#include <oe/ext/llm.h>
#include <oe/ext/prompt.h>
#include <oe/oe.h>

#include <stdalign.h>
#include <stddef.h>

#include "abi_layout.h"

/* The status codes and version encoding are part of the ABI too (gRPC/Abseil numbering). */
_Static_assert(OE_OK == 0 && OE_CANCELLED == 1 && OE_UNKNOWN == 2 && OE_INVALID_ARGUMENT == 3,
               "status codes follow gRPC numbering");
_Static_assert(OE_DEADLINE_EXCEEDED == 4 && OE_NOT_FOUND == 5 && OE_ALREADY_EXISTS == 6 &&
                   OE_PERMISSION_DENIED == 7 && OE_RESOURCE_EXHAUSTED == 8,
               "status codes follow gRPC numbering");
_Static_assert(OE_FAILED_PRECONDITION == 9 && OE_ABORTED == 10 && OE_OUT_OF_RANGE == 11 &&
                   OE_UNIMPLEMENTED == 12 && OE_INTERNAL == 13 && OE_UNAVAILABLE == 14 &&
                   OE_DATA_LOSS == 15 && OE_UNAUTHENTICATED == 16,
               "status codes follow gRPC numbering");
_Static_assert(sizeof(oe_status) == 4 && sizeof(oe_log_level) == 4, "int32_t enums");
_Static_assert(OE_ABI_MAKE_VERSION(1, 2) == 0x00010002u, "major in the high 16 bits");
_Static_assert(OE_ABI_VERSION_GET_MAJOR(0x00090063u) == 9, "major decodes");
_Static_assert(OE_ABI_VERSION_GET_MINOR(0x00090063u) == 99, "minor decodes");

#if defined(__x86_64__) || defined(__aarch64__)
/* LP64: 8-byte pointers and size_t. These numbers are the ABI every released plugin relies on;
 * change them only together with OE_ABI_VERSION (and, from 1.0, only by appending). */
_Static_assert(sizeof(oe_str) == 16, "oe_str size");
_Static_assert(offsetof(oe_str, ptr) == 0, "oe_str.ptr");
_Static_assert(offsetof(oe_str, len) == 8, "oe_str.len");

_Static_assert(sizeof(oe_host_buf) == 24, "oe_host_buf size");
_Static_assert(offsetof(oe_host_buf, ptr) == 0, "oe_host_buf.ptr");
_Static_assert(offsetof(oe_host_buf, len) == 8, "oe_host_buf.len");
_Static_assert(offsetof(oe_host_buf, opaque) == 16, "oe_host_buf.opaque");

_Static_assert(sizeof(oe_host_api) == 64, "oe_host_api size");
_Static_assert(offsetof(oe_host_api, struct_size) == 0, "oe_host_api.struct_size");
_Static_assert(offsetof(oe_host_api, abi_version) == 4, "oe_host_api.abi_version");
_Static_assert(offsetof(oe_host_api, log) == 8, "oe_host_api.log");
_Static_assert(offsetof(oe_host_api, write) == 16, "oe_host_api.write");
_Static_assert(offsetof(oe_host_api, release) == 24, "oe_host_api.release");
_Static_assert(offsetof(oe_host_api, emit_event) == 32, "oe_host_api.emit_event");
_Static_assert(offsetof(oe_host_api, state_get) == 40, "oe_host_api.state_get");
_Static_assert(offsetof(oe_host_api, is_cancelled) == 48, "oe_host_api.is_cancelled");
_Static_assert(offsetof(oe_host_api, get_extension) == 56, "oe_host_api.get_extension");

_Static_assert(sizeof(oe_invocation) == 48, "oe_invocation size");
_Static_assert(offsetof(oe_invocation, struct_size) == 0, "oe_invocation.struct_size");
_Static_assert(offsetof(oe_invocation, attempt) == 4, "oe_invocation.attempt");
_Static_assert(offsetof(oe_invocation, request_json) == 8, "oe_invocation.request_json");
_Static_assert(offsetof(oe_invocation, call) == 24, "oe_invocation.call");
_Static_assert(offsetof(oe_invocation, response) == 32, "oe_invocation.response");
_Static_assert(offsetof(oe_invocation, error) == 40, "oe_invocation.error");

_Static_assert(sizeof(oe_node_kind) == 64, "oe_node_kind size");
_Static_assert(offsetof(oe_node_kind, struct_size) == 0, "oe_node_kind.struct_size");
_Static_assert(offsetof(oe_node_kind, flags) == 4, "oe_node_kind.flags");
_Static_assert(offsetof(oe_node_kind, kind) == 8, "oe_node_kind.kind");
_Static_assert(offsetof(oe_node_kind, description) == 16, "oe_node_kind.description");
_Static_assert(offsetof(oe_node_kind, spec_schema_json) == 24, "oe_node_kind.spec_schema_json");
_Static_assert(offsetof(oe_node_kind, create) == 32, "oe_node_kind.create");
_Static_assert(offsetof(oe_node_kind, destroy) == 40, "oe_node_kind.destroy");
_Static_assert(offsetof(oe_node_kind, invoke) == 48, "oe_node_kind.invoke");
_Static_assert(offsetof(oe_node_kind, cancel) == 56, "oe_node_kind.cancel");

_Static_assert(sizeof(oe_plugin_entry) == 80, "oe_plugin_entry size");
_Static_assert(offsetof(oe_plugin_entry, struct_size) == 0, "oe_plugin_entry.struct_size");
_Static_assert(offsetof(oe_plugin_entry, abi_version) == 4, "oe_plugin_entry.abi_version");
_Static_assert(offsetof(oe_plugin_entry, min_host_abi) == 8, "oe_plugin_entry.min_host_abi");
_Static_assert(offsetof(oe_plugin_entry, flags) == 12, "oe_plugin_entry.flags");
_Static_assert(offsetof(oe_plugin_entry, plugin_id) == 16, "oe_plugin_entry.plugin_id");
_Static_assert(offsetof(oe_plugin_entry, plugin_version) == 24, "oe_plugin_entry.plugin_version");
_Static_assert(offsetof(oe_plugin_entry, description) == 32, "oe_plugin_entry.description");
_Static_assert(offsetof(oe_plugin_entry, init) == 40, "oe_plugin_entry.init");
_Static_assert(offsetof(oe_plugin_entry, deinit) == 48, "oe_plugin_entry.deinit");
_Static_assert(offsetof(oe_plugin_entry, node_kind_count) == 56, "oe_plugin_entry.node_kind_count");
_Static_assert(offsetof(oe_plugin_entry, node_kind_at) == 64, "oe_plugin_entry.node_kind_at");
_Static_assert(offsetof(oe_plugin_entry, get_extension) == 72, "oe_plugin_entry.get_extension");

_Static_assert(sizeof(oe_http_api) == 16, "oe_http_api size");
_Static_assert(offsetof(oe_http_api, struct_size) == 0, "oe_http_api.struct_size");
_Static_assert(offsetof(oe_http_api, fetch) == 8, "oe_http_api.fetch");

_Static_assert(sizeof(oe_llm_api) == 16, "oe_llm_api size");
_Static_assert(offsetof(oe_llm_api, struct_size) == 0, "oe_llm_api.struct_size");
_Static_assert(offsetof(oe_llm_api, complete) == 8, "oe_llm_api.complete");

_Static_assert(sizeof(oe_llm_provider) == 24, "oe_llm_provider size");
_Static_assert(offsetof(oe_llm_provider, struct_size) == 0, "oe_llm_provider.struct_size");
_Static_assert(offsetof(oe_llm_provider, providers) == 8, "oe_llm_provider.providers");
_Static_assert(offsetof(oe_llm_provider, complete) == 16, "oe_llm_provider.complete");

_Static_assert(sizeof(oe_prompt_api) == 24, "oe_prompt_api size");
_Static_assert(offsetof(oe_prompt_api, struct_size) == 0, "oe_prompt_api.struct_size");
_Static_assert(offsetof(oe_prompt_api, render) == 8, "oe_prompt_api.render");
_Static_assert(offsetof(oe_prompt_api, values_json) == 16, "oe_prompt_api.values_json");
#endif

/* The same facts as data, so the C++ test can compare the C compiler's view with its own on any
 * platform (a C/C++ disagreement would break every C++ plugin even where the numbers differ). */
#define OE_FIELD(type, member) \
  {#type "." #member, offsetof(type, member), sizeof(((type*)0)->member), 0}
#define OE_WHOLE(type) {#type, 0, sizeof(type), alignof(type)}

static const oe_test_layout kLayout[] = {
    OE_WHOLE(oe_str),
    OE_FIELD(oe_str, ptr),
    OE_FIELD(oe_str, len),
    OE_WHOLE(oe_host_buf),
    OE_FIELD(oe_host_buf, ptr),
    OE_FIELD(oe_host_buf, len),
    OE_FIELD(oe_host_buf, opaque),
    OE_WHOLE(oe_host_api),
    OE_FIELD(oe_host_api, struct_size),
    OE_FIELD(oe_host_api, abi_version),
    OE_FIELD(oe_host_api, log),
    OE_FIELD(oe_host_api, write),
    OE_FIELD(oe_host_api, release),
    OE_FIELD(oe_host_api, emit_event),
    OE_FIELD(oe_host_api, state_get),
    OE_FIELD(oe_host_api, is_cancelled),
    OE_FIELD(oe_host_api, get_extension),
    OE_WHOLE(oe_invocation),
    OE_FIELD(oe_invocation, struct_size),
    OE_FIELD(oe_invocation, attempt),
    OE_FIELD(oe_invocation, request_json),
    OE_FIELD(oe_invocation, call),
    OE_FIELD(oe_invocation, response),
    OE_FIELD(oe_invocation, error),
    OE_WHOLE(oe_node_kind),
    OE_FIELD(oe_node_kind, struct_size),
    OE_FIELD(oe_node_kind, flags),
    OE_FIELD(oe_node_kind, kind),
    OE_FIELD(oe_node_kind, description),
    OE_FIELD(oe_node_kind, spec_schema_json),
    OE_FIELD(oe_node_kind, create),
    OE_FIELD(oe_node_kind, destroy),
    OE_FIELD(oe_node_kind, invoke),
    OE_FIELD(oe_node_kind, cancel),
    OE_WHOLE(oe_plugin_entry),
    OE_FIELD(oe_plugin_entry, struct_size),
    OE_FIELD(oe_plugin_entry, abi_version),
    OE_FIELD(oe_plugin_entry, min_host_abi),
    OE_FIELD(oe_plugin_entry, flags),
    OE_FIELD(oe_plugin_entry, plugin_id),
    OE_FIELD(oe_plugin_entry, plugin_version),
    OE_FIELD(oe_plugin_entry, description),
    OE_FIELD(oe_plugin_entry, init),
    OE_FIELD(oe_plugin_entry, deinit),
    OE_FIELD(oe_plugin_entry, node_kind_count),
    OE_FIELD(oe_plugin_entry, node_kind_at),
    OE_FIELD(oe_plugin_entry, get_extension),
    OE_WHOLE(oe_http_api),
    OE_FIELD(oe_http_api, struct_size),
    OE_FIELD(oe_http_api, fetch),
    OE_WHOLE(oe_llm_api),
    OE_FIELD(oe_llm_api, struct_size),
    OE_FIELD(oe_llm_api, complete),
    OE_WHOLE(oe_llm_provider),
    OE_FIELD(oe_llm_provider, struct_size),
    OE_FIELD(oe_llm_provider, providers),
    OE_FIELD(oe_llm_provider, complete),
    OE_WHOLE(oe_prompt_api),
    OE_FIELD(oe_prompt_api, struct_size),
    OE_FIELD(oe_prompt_api, render),
    OE_FIELD(oe_prompt_api, values_json),
};

const oe_test_layout* oe_test_c_layout(size_t* count) {
  *count = sizeof(kLayout) / sizeof(kLayout[0]);
  return kLayout;
}

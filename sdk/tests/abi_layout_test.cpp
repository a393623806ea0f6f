// The ABI layout from C++: pinned for LP64 with static_assert, and compared member by member with
// what the C compiler computed (abi_layout.c), since C plugins and the C++ host must agree. The
// core structs and the extension tables of oe/ext/ (not the drafts in oe/ext/draft/).
#include <oe/ext/http.h>
#include <oe/ext/llm.h>
#include <oe/ext/prompt.h>
#include <oe/kinds/tool.h>
#include <oe/oe.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <string>
#include <type_traits>

#include "abi_layout.h"

namespace {

template <class T>
constexpr bool kAbiStruct = std::is_standard_layout_v<T> && std::is_trivially_copyable_v<T>;

static_assert(kAbiStruct<oe_str> && kAbiStruct<oe_host_buf> && kAbiStruct<oe_host_api> &&
              kAbiStruct<oe_invocation> && kAbiStruct<oe_node_kind> &&
              kAbiStruct<oe_plugin_entry> && kAbiStruct<oe_http_api> && kAbiStruct<oe_llm_api> &&
              kAbiStruct<oe_llm_provider> && kAbiStruct<oe_prompt_api>);
static_assert(std::is_same_v<oe_status, int32_t> && std::is_same_v<oe_log_level, int32_t>);

#if defined(__x86_64__) || defined(__aarch64__)
static_assert(sizeof(oe_str) == 16 && offsetof(oe_str, len) == 8);
static_assert(sizeof(oe_host_buf) == 24 && offsetof(oe_host_buf, opaque) == 16);
static_assert(sizeof(oe_host_api) == 64 && offsetof(oe_host_api, log) == 8 &&
              offsetof(oe_host_api, get_extension) == 56);
static_assert(sizeof(oe_invocation) == 48 && offsetof(oe_invocation, request_json) == 8 &&
              offsetof(oe_invocation, error) == 40);
static_assert(sizeof(oe_node_kind) == 64 && offsetof(oe_node_kind, create) == 32 &&
              offsetof(oe_node_kind, cancel) == 56);
static_assert(sizeof(oe_plugin_entry) == 80 && offsetof(oe_plugin_entry, plugin_id) == 16 &&
              offsetof(oe_plugin_entry, init) == 40 &&
              offsetof(oe_plugin_entry, get_extension) == 72);
static_assert(sizeof(oe_http_api) == 16 && offsetof(oe_http_api, fetch) == 8);
static_assert(sizeof(oe_llm_api) == 16 && offsetof(oe_llm_api, complete) == 8);
static_assert(sizeof(oe_llm_provider) == 24 && offsetof(oe_llm_provider, providers) == 8 &&
              offsetof(oe_llm_provider, complete) == 16);
static_assert(sizeof(oe_prompt_api) == 24 && offsetof(oe_prompt_api, render) == 8 &&
              offsetof(oe_prompt_api, values_json) == 16);
#endif

struct Layout {
  size_t offset;
  size_t size;
  size_t align;
};

#define OE_FIELD(type, member) \
  {#type "." #member, Layout{offsetof(type, member), sizeof(type::member), 0}}
#define OE_WHOLE(type) {#type, Layout{0, sizeof(type), alignof(type)}}

std::map<std::string, Layout> cxxLayout() {
  return {
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
}

#undef OE_FIELD
#undef OE_WHOLE

TEST(AbiLayout, CAndCxxCompilersAgreeOnEveryMember) {
  size_t count = 0;
  const oe_test_layout* c_layout = oe_test_c_layout(&count);
  const std::map<std::string, Layout> cxx = cxxLayout();
  ASSERT_EQ(count, cxx.size()) << "abi_layout.c and abi_layout_test.cpp list different members";
  for (size_t i = 0; i < count; ++i) {
    const oe_test_layout& c = c_layout[i];
    auto it = cxx.find(c.name);
    ASSERT_NE(it, cxx.end()) << c.name << " is checked in C but not in C++";
    EXPECT_EQ(c.offset, it->second.offset) << c.name << ": offset differs between C and C++";
    EXPECT_EQ(c.size, it->second.size) << c.name << ": size differs between C and C++";
    EXPECT_EQ(c.align, it->second.align) << c.name << ": alignment differs between C and C++";
  }
}

// Every ABI struct leads with its own size, so a reader can tell how much of it exists.
TEST(AbiLayout, VersionedStructsStartWithTheirSize) {
  EXPECT_EQ(offsetof(oe_host_api, struct_size), 0u);
  EXPECT_EQ(offsetof(oe_invocation, struct_size), 0u);
  EXPECT_EQ(offsetof(oe_node_kind, struct_size), 0u);
  EXPECT_EQ(offsetof(oe_plugin_entry, struct_size), 0u);
  EXPECT_EQ(offsetof(oe_http_api, struct_size), 0u);
  EXPECT_EQ(offsetof(oe_llm_api, struct_size), 0u);
  EXPECT_EQ(offsetof(oe_llm_provider, struct_size), 0u);
  EXPECT_EQ(offsetof(oe_prompt_api, struct_size), 0u);
  EXPECT_EQ(sizeof(oe_plugin_entry::struct_size), 4u);
  EXPECT_EQ(sizeof(oe_http_api::struct_size), 4u);
  // The host reads these three before it knows anything else about the plugin.
  EXPECT_EQ(offsetof(oe_plugin_entry, abi_version), 4u);
  EXPECT_EQ(offsetof(oe_plugin_entry, min_host_abi), 8u);
}

TEST(AbiLayout, VersionMacrosRoundTrip) {
  EXPECT_EQ(OE_ABI_VERSION_GET_MAJOR(OE_ABI_VERSION), static_cast<uint32_t>(OE_ABI_VERSION_MAJOR));
  EXPECT_EQ(OE_ABI_VERSION_GET_MINOR(OE_ABI_VERSION), static_cast<uint32_t>(OE_ABI_VERSION_MINOR));
  EXPECT_EQ(OE_ABI_MAKE_VERSION(0, 99), 0x63u);
  EXPECT_EQ(OE_ABI_MAKE_VERSION(9, 0), 0x90000u);
  EXPECT_STREQ(OE_PLUGIN_ENTRY_SYMBOL, "oe_plugin_entry_v1");
}

// An extension id names a table layout: a plugin built against oe.http/1 reads fetch at offset 8.
// Changing a table incompatibly is a new id (docs/abi.md, "Extensions"), never the same id.
TEST(AbiLayout, ExtensionIdsArePinned) {
  EXPECT_STREQ(OE_EXT_HTTP, "oe.http/1");
  EXPECT_STREQ(OE_EXT_LLM, "oe.llm/1");
  EXPECT_STREQ(OE_EXT_LLM_PROVIDER, "oe.llm-provider/1");
  EXPECT_STREQ(OE_EXT_PROMPT, "oe.prompt/1");
  EXPECT_STREQ(OE_TOOL_ENTRY_SYMBOL, "oe_tool_invoke_v2");
}

}  // namespace

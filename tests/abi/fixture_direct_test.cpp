// Each fixture, dlopen'ed and driven through the C ABI without the oe host: proves the fixture is
// the case its name promises (so a loading test that passes or fails means what it says), and
// that a C++ exception never crosses a real shared-library boundary.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#include "abi/fixtures.hpp"

namespace oe::abi_test {
namespace {

std::string_view sv(const char* s) { return s == nullptr ? std::string_view{} : s; }

constexpr std::string_view kConfig =
    R"({"node":{"id":"n","kind":"abi-good"},"experience_dir":"/x"})";

TEST(FixtureDirect, GoodEchoesItsRequestIntoState) {
  DirectPlugin plugin(fixtureFile("good", "good.so"));
  ASSERT_TRUE(plugin.loaded()) << plugin.error();
  const oe_plugin_entry* entry = plugin.entry();
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->struct_size, sizeof(oe_plugin_entry));
  EXPECT_EQ(entry->abi_version, OE_ABI_VERSION);
  EXPECT_EQ(sv(entry->plugin_id), "dev.oe.fixture.good");
  oe_writer err;
  ASSERT_EQ(plugin.init(err), OE_OK) << err.data;
  ASSERT_EQ(entry->node_kind_count(plugin.self()), 1u);
  const oe_node_kind* kind = plugin.kind(0);
  ASSERT_NE(kind, nullptr);
  EXPECT_EQ(sv(kind->kind), "abi-good");
  EXPECT_EQ(plugin.kind(1), nullptr);

  const std::string request = R"({"args":{"text":"hi"},"state_view":{}})";
  const CallResult call = runNode(plugin, *kind, kConfig, request);
  ASSERT_EQ(call.status, OE_OK) << call.error;
  const auto response = nlohmann::json::parse(call.response);
  EXPECT_EQ(response["state_delta"]["echo"], nlohmann::json::parse(request));
}

TEST(FixtureDirect, WrongMajorClaimsAbi9) {
  DirectPlugin plugin(fixtureFile("wrong_major", "wrong_major.so"));
  const oe_plugin_entry* entry = plugin.entry();
  ASSERT_NE(entry, nullptr) << plugin.error();
  EXPECT_EQ(OE_ABI_VERSION_GET_MAJOR(entry->abi_version), 9u);
  EXPECT_EQ(OE_ABI_VERSION_GET_MINOR(entry->abi_version), 0u);
}

TEST(FixtureDirect, WrongMinorClaimsAbi0_99) {
  DirectPlugin plugin(fixtureFile("wrong_minor", "wrong_minor.so"));
  const oe_plugin_entry* entry = plugin.entry();
  ASSERT_NE(entry, nullptr) << plugin.error();
  EXPECT_EQ(entry->abi_version, OE_ABI_MAKE_VERSION(0, 99));
}

TEST(FixtureDirect, EntryReturnsNullForThisHost) {
  DirectPlugin plugin(fixtureFile("entry_returns_null", "entry_returns_null.so"));
  ASSERT_TRUE(plugin.loaded()) << plugin.error();
  EXPECT_EQ(plugin.entry(), nullptr);
}

TEST(FixtureDirect, StructTooSmallDeclaresEightBytes) {
  DirectPlugin plugin(fixtureFile("struct_too_small", "struct_too_small.so"));
  const oe_plugin_entry* entry = plugin.entry();
  ASSERT_NE(entry, nullptr) << plugin.error();
  EXPECT_EQ(entry->struct_size, 8u);
}

TEST(FixtureDirect, BelowRequiredDescriptorsEndBeforeARequiredMember) {
  DirectPlugin entry_short(fixtureFile("entry_below_required", "entry_below_required.so"));
  const oe_plugin_entry* entry = entry_short.entry();
  ASSERT_NE(entry, nullptr) << entry_short.error();
  EXPECT_EQ(entry->struct_size, offsetof(oe_plugin_entry, node_kind_at));

  DirectPlugin kind_short(fixtureFile("kind_below_required", "kind_below_required.so"));
  ASSERT_NE(kind_short.entry(), nullptr) << kind_short.error();
  oe_writer err;
  ASSERT_EQ(kind_short.init(err), OE_OK) << err.data;
  ASSERT_NE(kind_short.kind(0), nullptr);
  EXPECT_EQ(kind_short.kind(0)->struct_size, offsetof(oe_node_kind, invoke));
}

TEST(FixtureDirect, FlagsFixturesSetFlagsThisAbiDoesNotDefine) {
  DirectPlugin entry_flags(fixtureFile("entry_flags", "entry_flags.so"));
  const oe_plugin_entry* entry = entry_flags.entry();
  ASSERT_NE(entry, nullptr) << entry_flags.error();
  EXPECT_EQ(entry->flags, 1u);

  DirectPlugin kind_flags(fixtureFile("kind_flags", "kind_flags.so"));
  ASSERT_NE(kind_flags.entry(), nullptr) << kind_flags.error();
  oe_writer err;
  ASSERT_EQ(kind_flags.init(err), OE_OK) << err.data;
  ASSERT_NE(kind_flags.kind(0), nullptr);
  EXPECT_EQ(kind_flags.kind(0)->flags, 0x80000000u);
  EXPECT_EQ(kind_flags.kind(0)->flags & OE_NODE_KIND_REENTRANT, 0u) << "only the unknown bit";
}

// The truncated contract fixture: both descriptors end where an older SDK's would, and what lies
// past their struct_size is poison (a host that read it would crash, not pass).
TEST(FixtureDirect, TruncatedDescriptorsEndBeforeTheirOptionalMembers) {
  DirectPlugin plugin(fixtureFile("truncated", "truncated.so"));
  const oe_plugin_entry* entry = plugin.entry();
  ASSERT_NE(entry, nullptr) << plugin.error();
  EXPECT_EQ(entry->struct_size, offsetof(oe_plugin_entry, get_extension));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(entry->get_extension), uintptr_t{1});
  oe_writer err;
  ASSERT_EQ(plugin.init(err), OE_OK) << err.data;
  ASSERT_EQ(entry->node_kind_count(plugin.self()), 2u);
  for (uint32_t i = 0; i < 2; ++i) {
    const oe_node_kind* kind = plugin.kind(i);
    ASSERT_NE(kind, nullptr);
    EXPECT_EQ(kind->struct_size, offsetof(oe_node_kind, cancel)) << kind->kind;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(kind->cancel), uintptr_t{1}) << kind->kind;
  }
}

TEST(FixtureDirect, InitFailsWithStatusAndMessage) {
  DirectPlugin plugin(fixtureFile("init_fails", "init_fails.so"));
  ASSERT_NE(plugin.entry(), nullptr) << plugin.error();
  oe_writer err;
  EXPECT_EQ(plugin.init(err), OE_FAILED_PRECONDITION);
  EXPECT_EQ(err.data, "fixture init refused: OE_FIXTURE_TOKEN is not set");
  EXPECT_EQ(plugin.self(), nullptr);
}

TEST(FixtureDirect, DuplicateKindPluginsShareTheKindNotTheId) {
  DirectPlugin a(fixtureFile("duplicate_kind", "dup_a.so"));
  DirectPlugin b(fixtureFile("duplicate_kind", "dup_b.so"));
  const oe_plugin_entry* entry_a = a.entry();
  const oe_plugin_entry* entry_b = b.entry();
  ASSERT_NE(entry_a, nullptr) << a.error();
  ASSERT_NE(entry_b, nullptr) << b.error();
  EXPECT_EQ(sv(entry_a->plugin_id), "dev.oe.fixture.dup-a");
  EXPECT_EQ(sv(entry_b->plugin_id), "dev.oe.fixture.dup-b");
  oe_writer err;
  ASSERT_EQ(a.init(err), OE_OK);
  ASSERT_EQ(b.init(err), OE_OK);
  EXPECT_EQ(sv(a.kind(0)->kind), "abi-good");
  EXPECT_EQ(sv(b.kind(0)->kind), "abi-good");
  EXPECT_NE(a.kind(0), b.kind(0)) << "RTLD_LOCAL keeps the two copies apart";
}

TEST(FixtureDirect, ThrowingCxxPluginReturnsInternalAcrossTheBoundary) {
  DirectPlugin plugin(fixtureFile("throws_in_invoke", "throws_in_invoke.so"));
  const oe_plugin_entry* entry = plugin.entry();
  ASSERT_NE(entry, nullptr) << plugin.error();
  EXPECT_EQ(sv(entry->plugin_id), "dev.oe.fixture.throws");
  oe_writer err;
  ASSERT_EQ(plugin.init(err), OE_OK) << err.data;
  const oe_node_kind* kind = plugin.kind(0);
  ASSERT_NE(kind, nullptr);
  EXPECT_EQ(sv(kind->kind), "abi-throws");
  const CallResult call = runNode(plugin, *kind, kConfig, "{}");
  EXPECT_EQ(call.status, OE_INTERNAL);
  EXPECT_EQ(call.error, "fixture exploded on purpose");
  EXPECT_EQ(call.response, "");
}

}  // namespace
}  // namespace oe::abi_test

// Header-only C++20 wrapper of the host's oe.limits/1-draft: a slot under runtime.limits.<name>,
// held by an object and given back (host->release) exactly once when it goes out of scope. Like
// the extension it wraps, a draft: it may change in any release (docs/abi.md).
#pragma once

#include <oe/cpp/requires_cxx20.hpp>

#if OE_SDK_CXX20

#include <oe/ext/draft/limits.h>
#include <oe/host.h>
#include <oe/cpp/expected.hpp>
#include <oe/cpp/host_buffer.hpp>

#include <string>
#include <string_view>

namespace oe::sdk::draft {

// A slot the host granted, or an empty one when the run sets no limit of that name. Move-only;
// the destructor (or reset()) gives it back. Release it before invoke returns.
class LimitSlot {
 public:
  LimitSlot() noexcept = default;
  LimitSlot(const oe_host_api& host, oe_host_ctx* call) noexcept : slot_(host, call) {}

  // True when a limit applies and the slot holds a share of it.
  [[nodiscard]] bool held() const noexcept { return slot_.filled(); }
  // The limits it counts against ("runtime.limits.claude-code"); empty when none.
  [[nodiscard]] std::string_view limits() const noexcept { return slot_.view(); }
  void reset() noexcept { slot_.reset(); }
  // For acquireLimit: the buffer the host fills.
  [[nodiscard]] oe_host_buf* out() noexcept { return slot_.out(); }

 private:
  HostBuffer slot_;
};

// Waits (on this thread) for a slot under runtime.limits.<name> for the invocation whose context
// is `call`. OE_CANCELLED when the call is cancelled meanwhile; OE_UNIMPLEMENTED when the host
// offers no oe.limits/1-draft (the caller decides whether to go on unlimited).
inline Expected<LimitSlot> acquireLimit(const oe_host_api& host, oe_host_ctx* call,
                                        std::string_view name) {
  const auto* table = static_cast<const oe_limits_api*>(host.get_extension(call, OE_EXT_LIMITS));
  if (!OE_HAS_MEMBER(oe_limits_api, table, acquire) || table->acquire == nullptr) {
    return fail(OE_UNIMPLEMENTED, "this host does not offer " OE_EXT_LIMITS);
  }
  LimitSlot slot(host, call);
  const oe_status status = table->acquire(call, toStr(name), slot.out());
  if (status == OE_CANCELLED) {
    return fail(status,
                "cancelled while waiting for room under runtime.limits." + std::string(name));
  }
  if (status != OE_OK) {
    return fail(status, OE_EXT_LIMITS " acquire(\"" + std::string(name) +
                            "\") failed with status " + std::to_string(status));
  }
  return slot;
}

}  // namespace oe::sdk::draft

#endif  // OE_SDK_CXX20

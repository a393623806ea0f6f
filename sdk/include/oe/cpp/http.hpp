// Header-only C++20 wrapper of the host's oe.http/1 for plugin authors: find the service, run one
// fetch, and give the host's buffers back on every path (RAII), with no dependency but the C ABI.
#pragma once

#include <oe/cpp/requires_cxx20.hpp>

#if OE_SDK_CXX20

#include <oe/ext/http.h>
#include <oe/host.h>
#include <oe/cpp/host_buffer.hpp>

#include <string_view>

namespace oe::sdk {

// The outcome of one fetch: status(), ok(), response() (on OE_OK, the JSON {"status": <int>,
// "headers": {...}, "body": "<string>"}, valid while the object lives; any HTTP status is a
// response) and error() (otherwise the host's message, e.g. OE_UNAVAILABLE, OE_DEADLINE_EXCEEDED,
// OE_CANCELLED). Owns the host's buffer and releases it exactly once; move-only.
using HttpFetch = HostReply;

// oe.http/1 as a host offers it: the table, the host whose release frees its buffers, and the
// context it was found with. Empty (false) when the host has no HTTP service. Cheap to copy; the
// table is valid until deinit, the context as long as the host says (a call's until it returns).
class Http {
 public:
  Http() = default;
  Http(const oe_host_api& host, const oe_http_api& table, oe_host_ctx* ctx = nullptr) noexcept
      : host_(&host), table_(&table), ctx_(ctx) {}
  explicit operator bool() const noexcept { return table_ != nullptr; }

  // One blocking request (`request` is its JSON, see oe/ext/http.h). `ctx` is the invocation's
  // call context, so cancelling the run cancels the request. An empty Http answers
  // OE_UNIMPLEMENTED ("this host does not offer oe.http/1").
  [[nodiscard]] HttpFetch fetch(oe_host_ctx* ctx, std::string_view request) const {
    if (table_ == nullptr) {
      return HostReply::absent(OE_EXT_HTTP);
    }
    return HostReply::call(*host_, ctx, OE_EXT_HTTP,
                           [&](oe_host_buf* response, oe_host_buf* error) {
                             return table_->fetch(ctx, toStr(request), response, error);
                           });
  }
  // The same with the context this Http was found with (Call::http(): the call's).
  [[nodiscard]] HttpFetch fetch(std::string_view request) const { return fetch(ctx_, request); }

 private:
  const oe_host_api* host_ = nullptr;
  const oe_http_api* table_ = nullptr;
  oe_host_ctx* ctx_ = nullptr;
};

// The host's oe.http/1, or an empty Http when it offers none (or a table too short for fetch).
inline Http findHttp(const oe_host_api& host, oe_host_ctx* ctx) {
  const auto* table = static_cast<const oe_http_api*>(host.get_extension(ctx, OE_EXT_HTTP));
  if (!OE_HAS_MEMBER(oe_http_api, table, fetch) || table->fetch == nullptr) {
    return {};
  }
  return {host, *table, ctx};
}

// The oe status for an HTTP error status: the codes every plugin maps alike (401, 403, 404, 429,
// 5xx); `otherwise` for the rest, whose meaning depends on the service called.
inline oe_status statusForHttp(int http_status, oe_status otherwise) noexcept {
  switch (http_status) {
    case 401:
      return OE_UNAUTHENTICATED;
    case 403:
      return OE_PERMISSION_DENIED;
    case 404:
      return OE_NOT_FOUND;
    case 429:
      return OE_RESOURCE_EXHAUSTED;
    default:
      return http_status >= 500 && http_status <= 599 ? OE_UNAVAILABLE : otherwise;
  }
}

}  // namespace oe::sdk

#endif  // OE_SDK_CXX20

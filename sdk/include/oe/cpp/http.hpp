// Header-only C++20 wrapper of the host's oe.http/1 for plugin authors: find the service, run one
// fetch, and give the host's buffers back on every path (RAII), with no dependency but the C ABI.
#pragma once

#include <oe/cpp/requires_cxx20.hpp>

#if OE_SDK_CXX20

#include <oe/ext/http.h>
#include <oe/host.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace oe::sdk {

class Http;

// The outcome of one fetch. Owns the host buffer it was given and releases it exactly once (with
// host->release), so the text it exposes stays valid as long as the object lives; move-only.
class HttpFetch {
 public:
  HttpFetch(const oe_host_api& host, oe_host_ctx* ctx) noexcept : host_(&host), ctx_(ctx) {}
  HttpFetch(HttpFetch&& other) noexcept
      : host_(other.host_),
        ctx_(other.ctx_),
        status_(other.status_),
        response_(std::exchange(other.response_, kEmpty)),
        error_(std::exchange(other.error_, kEmpty)) {}
  HttpFetch& operator=(HttpFetch&& other) noexcept {
    if (this != &other) {
      releaseAll();
      host_ = other.host_;
      ctx_ = other.ctx_;
      status_ = other.status_;
      response_ = std::exchange(other.response_, kEmpty);
      error_ = std::exchange(other.error_, kEmpty);
    }
    return *this;
  }
  HttpFetch(const HttpFetch&) = delete;
  HttpFetch& operator=(const HttpFetch&) = delete;
  ~HttpFetch() { releaseAll(); }

  // OE_OK when the server answered (whatever its HTTP status); else OE_UNAVAILABLE,
  // OE_DEADLINE_EXCEEDED, OE_CANCELLED, OE_INVALID_ARGUMENT, ... as oe.http/1 reports.
  [[nodiscard]] oe_status status() const noexcept { return status_; }
  [[nodiscard]] bool ok() const noexcept { return status_ == OE_OK; }
  // On OE_OK, the response JSON: {"status": <int>, "headers": {...}, "body": "<string>"}.
  [[nodiscard]] std::string_view response() const noexcept { return view(response_); }
  // Otherwise, why: the host's message, or a generic one naming the status if it gave none.
  [[nodiscard]] std::string error() const {
    std::string message(view(error_));
    if (message.empty() && status_ != OE_OK) {
      message = "oe.http/1 failed with status " + std::to_string(status_);
    }
    return message;
  }

 private:
  friend class Http;

  static constexpr oe_host_buf kEmpty{nullptr, 0, nullptr};

  static std::string_view view(const oe_host_buf& buf) noexcept {
    return buf.ptr == nullptr ? std::string_view{} : std::string_view(buf.ptr, buf.len);
  }
  static bool filled(const oe_host_buf& buf) noexcept {
    return buf.ptr != nullptr || buf.opaque != nullptr;
  }
  void releaseAll() noexcept {
    if (filled(response_)) {
      host_->release(ctx_, &response_);
    }
    if (filled(error_)) {
      host_->release(ctx_, &error_);
    }
  }

  const oe_host_api* host_;
  oe_host_ctx* ctx_;
  oe_status status_ = OE_UNKNOWN;
  oe_host_buf response_ = kEmpty;
  oe_host_buf error_ = kEmpty;
};

// oe.http/1 as a host offers it: the table plus the host whose release frees its buffers.
// Empty (false) when the host has no HTTP service. Cheap to copy; valid until deinit.
class Http {
 public:
  Http() = default;
  Http(const oe_host_api& host, const oe_http_api& table) noexcept : host_(&host), table_(&table) {}
  explicit operator bool() const noexcept { return table_ != nullptr; }

  // One blocking request (`request` is its JSON, see oe/ext/http.h). `ctx` is the invocation's
  // call context, so cancelling the run cancels the request.
  [[nodiscard]] HttpFetch fetch(oe_host_ctx* ctx, std::string_view request) const {
    HttpFetch result(*host_, ctx);
    result.status_ = table_->fetch(ctx, oe_str{request.data(), request.size()},
                                   &result.response_, &result.error_);
    return result;
  }

 private:
  const oe_host_api* host_ = nullptr;
  const oe_http_api* table_ = nullptr;
};

// The host's oe.http/1, or an empty Http when it offers none (or a table too short for fetch).
inline Http findHttp(const oe_host_api& host, oe_host_ctx* ctx) {
  const auto* table = static_cast<const oe_http_api*>(host.get_extension(ctx, OE_EXT_HTTP));
  if (!OE_HAS_MEMBER(oe_http_api, table, fetch) || table->fetch == nullptr) {
    return {};
  }
  return {host, *table};
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

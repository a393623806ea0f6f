// Header-only C++20 wrapper of the host's oe.http/1 for plugin authors: find the service, run one
// fetch, and give the host's buffers back on every path (RAII), with no dependency but the C ABI.
#pragma once

#include <oe/ext/http.h>
#include <oe/host.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace oe::sdk {

// The host's oe.http/1 table if it offers one recent enough to have fetch and release (an older
// host's table ends before them); nullptr otherwise.
inline const oe_http_api* findHttp(const oe_host_api& host, oe_host_ctx* ctx) {
  const auto* http = static_cast<const oe_http_api*>(host.get_extension(ctx, OE_EXT_HTTP));
  if (http == nullptr ||
      http->struct_size < offsetof(oe_http_api, release) + sizeof(http->release) ||
      http->fetch == nullptr || http->release == nullptr) {
    return nullptr;
  }
  return http;
}

// The outcome of one fetch. Owns the host buffer it was given and releases it exactly once, so
// the text it exposes stays valid as long as the object lives; move-only.
class HttpFetch {
 public:
  explicit HttpFetch(const oe_http_api& http) noexcept : http_(&http) {}
  HttpFetch(HttpFetch&& other) noexcept
      : http_(other.http_),
        status_(other.status_),
        response_(std::exchange(other.response_, kEmpty)),
        error_(std::exchange(other.error_, kEmpty)) {}
  HttpFetch& operator=(HttpFetch&& other) noexcept {
    if (this != &other) {
      releaseAll();
      http_ = other.http_;
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
  friend HttpFetch fetch(const oe_http_api& http, oe_host_ctx* call, std::string_view request);

  static constexpr oe_host_buf kEmpty{nullptr, 0, nullptr};

  static std::string_view view(const oe_host_buf& buf) noexcept {
    return buf.ptr == nullptr ? std::string_view{} : std::string_view(buf.ptr, buf.len);
  }
  static bool filled(const oe_host_buf& buf) noexcept {
    return buf.ptr != nullptr || buf.opaque != nullptr;
  }
  void releaseAll() noexcept {
    if (filled(response_)) {
      http_->release(&response_);
    }
    if (filled(error_)) {
      http_->release(&error_);
    }
  }

  const oe_http_api* http_;
  oe_status status_ = OE_UNKNOWN;
  oe_host_buf response_ = kEmpty;
  oe_host_buf error_ = kEmpty;
};

// One blocking request through oe.http/1 (`request` is its JSON, see oe/ext/http.h). `call` is
// the invocation's call context, so cancelling the run cancels the request.
inline HttpFetch fetch(const oe_http_api& http, oe_host_ctx* call, std::string_view request) {
  HttpFetch result(http);
  result.status_ = http.fetch(call, oe_str{request.data(), request.size()}, &result.response_,
                              &result.error_);
  return result;
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

// Host buffers (oe_host_buf) owned the C++ way: each one the host hands out is given back with
// host->release exactly once, on every path, including when copying its text throws.
#pragma once

#include <oe/cpp/requires_cxx20.hpp>

#if OE_SDK_CXX20

#include <oe/host.h>

#include <string>
#include <string_view>
#include <utility>

namespace oe::sdk {

inline oe_str toStr(std::string_view s) noexcept { return oe_str{s.data(), s.size()}; }
inline std::string_view toView(oe_str s) noexcept {
  return s.ptr == nullptr ? std::string_view{} : std::string_view{s.ptr, s.len};
}

// One host buffer slot: pass out() to the host function that fills it; the destructor (or
// reset()) releases what it holds. Move-only; the text stays valid while the object holds it.
class HostBuffer {
 public:
  HostBuffer() noexcept = default;  // no host: stays empty (never passed to a host call)
  HostBuffer(const oe_host_api& host, oe_host_ctx* ctx) noexcept : host_(&host), ctx_(ctx) {}
  HostBuffer(HostBuffer&& other) noexcept
      : host_(other.host_), ctx_(other.ctx_), buf_(std::exchange(other.buf_, kEmpty)) {}
  HostBuffer& operator=(HostBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      host_ = other.host_;
      ctx_ = other.ctx_;
      buf_ = std::exchange(other.buf_, kEmpty);
    }
    return *this;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() { reset(); }

  // The slot for the host to fill; anything held before is released first.
  [[nodiscard]] oe_host_buf* out() noexcept {
    reset();
    return &buf_;
  }
  [[nodiscard]] bool filled() const noexcept {
    return buf_.ptr != nullptr || buf_.opaque != nullptr;
  }
  [[nodiscard]] std::string_view view() const noexcept {
    return buf_.ptr == nullptr ? std::string_view{} : std::string_view(buf_.ptr, buf_.len);
  }
  // A copy of the text. If the copy throws (bad_alloc), the buffer is still released once, by
  // the destructor.
  [[nodiscard]] std::string str() const { return std::string(view()); }
  // Gives the buffer back now (once); a no-op when empty.
  void reset() noexcept {
    if (filled()) {
      host_->release(ctx_, &buf_);
      buf_ = kEmpty;
    }
  }

 private:
  static constexpr oe_host_buf kEmpty{nullptr, 0, nullptr};

  const oe_host_api* host_ = nullptr;
  oe_host_ctx* ctx_ = nullptr;
  oe_host_buf buf_ = kEmpty;
};

// What a host service with the (status, out_response, out_error) shape returned (oe.http/1
// fetch, oe.llm/1 complete): the status and the one buffer the host filled, each released once.
class HostReply {
 public:
  // Runs `fill(out_response, out_error) -> oe_status` (the host call) and keeps what it filled.
  // `service` names the service in error() when the host gave no message (static storage).
  template <class Fill>
  static HostReply call(const oe_host_api& host, oe_host_ctx* ctx, const char* service,
                        Fill&& fill) {
    HostReply reply(host, ctx, service);
    reply.status_ = std::forward<Fill>(fill)(reply.response_.out(), reply.error_.out());
    return reply;
  }
  // The reply of a service the host does not offer: OE_UNIMPLEMENTED, and error() says so.
  static HostReply absent(const char* service) noexcept {
    HostReply reply(service);
    reply.status_ = OE_UNIMPLEMENTED;
    return reply;
  }

  // OE_OK when the service answered; otherwise the service's failure status.
  [[nodiscard]] oe_status status() const noexcept { return status_; }
  [[nodiscard]] bool ok() const noexcept { return status_ == OE_OK; }
  // On OE_OK, the response text (JSON for oe.http/1 and oe.llm/1); valid while this object lives.
  [[nodiscard]] std::string_view response() const noexcept { return response_.view(); }
  // Otherwise, why: the host's message, or one naming the service and status if it gave none.
  [[nodiscard]] std::string error() const {
    std::string message(error_.view());
    if (message.empty() && status_ != OE_OK) {
      message = absent_ ? "this host does not offer " + std::string(service_)
                        : std::string(service_) + " failed with status " + std::to_string(status_);
    }
    return message;
  }
  // The host's own message only ("" when it gave none), for callers that word the fallback.
  [[nodiscard]] std::string_view hostError() const noexcept { return error_.view(); }

 private:
  HostReply(const oe_host_api& host, oe_host_ctx* ctx, const char* service) noexcept
      : service_(service), response_(host, ctx), error_(host, ctx) {}
  explicit HostReply(const char* service) noexcept : service_(service), absent_(true) {}

  const char* service_;
  bool absent_ = false;
  oe_status status_ = OE_UNKNOWN;
  HostBuffer response_;
  HostBuffer error_;
};

}  // namespace oe::sdk

#endif  // OE_SDK_CXX20

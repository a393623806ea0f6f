// The oe.http/1 table: JSON in, request(), JSON out, with the call's cancellation polled
// through the registered host table.
#include "oe/net/http_service.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <new>
#include <string>

#include "oe/common/host_buffer.hpp"
#include "oe/common/json.hpp"

namespace oe::net {
namespace {

std::atomic<const oe_host_api*>& registeredHost() noexcept {
  static std::atomic<const oe_host_api*> host{nullptr};  // constant-initialised
  return host;
}

Result<std::chrono::milliseconds> positiveMs(const Json& doc, const char* key,
                                             std::chrono::milliseconds fallback) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) {
    return fallback;
  }
  if (!it->is_number_integer() || it->get<long long>() <= 0) {
    return makeError(std::string("oe.http/1 request: \"") + key +
                     "\" must be a positive integer (milliseconds), got " + it->dump());
  }
  return std::chrono::milliseconds{it->get<long long>()};
}

// The request as JSON in, the response as JSON out (or the failure's status and message).
struct Served {
  oe_status status = OE_OK;
  std::string text;  // response JSON on OE_OK, the message otherwise
};

Served perform(const oe_host_api& host, oe_host_ctx* call, oe_str request_json) {
  auto parsed = parseHttpRequest(std::string_view(request_json.ptr, request_json.len));
  if (!parsed) {
    return {OE_INVALID_ARGUMENT, parsed.error().message};
  }
  std::function<bool()> cancelled;
  if (call != nullptr) {
    cancelled = [&host, call] { return host.is_cancelled(call); };
  }
  oe_status failure = OE_UNKNOWN;
  auto result = request(*parsed, cancelled, &failure);
  if (!result) {
    return {failure, result.error().message};
  }
  return {OE_OK, httpResponseJson(*result)};
}

oe_status OE_ABI fetch(oe_host_ctx* call, oe_str request_json, oe_host_buf* out_response,
                       oe_host_buf* out_error) noexcept {
  if (out_response == nullptr || out_error == nullptr) {
    return OE_INVALID_ARGUMENT;
  }
  *out_response = oe_host_buf{nullptr, 0, nullptr};
  *out_error = oe_host_buf{nullptr, 0, nullptr};
  const oe_host_api* host = registeredHost().load(std::memory_order_acquire);
  try {
    if (host == nullptr) {
      giveBuffer(
          "oe.http/1 is not ready: the host did not register its table (oe::net::setHostApi)",
          out_error);
      return OE_FAILED_PRECONDITION;
    }
    Served served = perform(*host, call, request_json);
    giveBuffer(std::move(served.text), served.status == OE_OK ? out_response : out_error);
    return served.status;
  } catch (const std::bad_alloc&) {
    return OE_RESOURCE_EXHAUSTED;
  } catch (const std::exception& e) {
    try {
      giveBuffer(std::string("oe.http/1 internal error: ") + e.what(), out_error);
    } catch (...) {
    }
    return OE_INTERNAL;
  }
}

// Its buffers are HostBuffers, as every host buffer: the host table's release frees them.
constexpr oe_http_api kHttpApi{sizeof(oe_http_api), &fetch};

}  // namespace

void setHostApi(const oe_host_api* host) noexcept {
  registeredHost().store(host, std::memory_order_release);
}

const oe_http_api* httpApi() noexcept { return &kHttpApi; }

Result<HttpRequest> parseHttpRequest(std::string_view request_json) {
  Json doc = Json::parse(request_json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return makeError("oe.http/1 request is not a JSON object");
  }
  HttpRequest req;
  if (auto it = doc.find("method"); it != doc.end()) {
    if (!it->is_string()) {
      return makeError("oe.http/1 request: \"method\" must be a string");
    }
    req.method = it->get<std::string>();
  }
  auto url = doc.find("url");
  if (url == doc.end() || !url->is_string() || url->get_ref<const std::string&>().empty()) {
    return makeError("oe.http/1 request: \"url\" must be a non-empty string");
  }
  req.url = url->get<std::string>();
  if (auto it = doc.find("headers"); it != doc.end() && !it->is_null()) {
    if (!it->is_object()) {
      return makeError("oe.http/1 request: \"headers\" must be an object of strings");
    }
    for (const auto& [name, value] : it->items()) {
      if (!value.is_string()) {
        return makeError("oe.http/1 request: header \"" + name + "\" must be a string");
      }
      req.headers.emplace_back(name, value.get<std::string>());
    }
  }
  if (auto it = doc.find("body"); it != doc.end() && !it->is_null()) {
    if (!it->is_string()) {
      return makeError("oe.http/1 request: \"body\" must be a string (serialise JSON first)");
    }
    req.body = it->get<std::string>();
  }
  auto timeout = positiveMs(doc, "timeout_ms", req.timeout);
  if (!timeout) {
    return timeout.error();
  }
  req.timeout = *timeout;
  auto stall = positiveMs(doc, "stall_timeout_ms", req.stall_timeout);
  if (!stall) {
    return stall.error();
  }
  req.stall_timeout = *stall;
  return req;
}

std::string httpResponseJson(const HttpResponse& response) {
  Json headers = Json::object();
  for (const auto& [name, value] : response.headers) {
    headers[name] = value;
  }
  const Json doc{
      {"status", response.status}, {"headers", std::move(headers)}, {"body", response.body}};
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace oe::net

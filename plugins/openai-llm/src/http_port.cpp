// Calls oe.http/1's fetch with the request as JSON and decodes its JSON answer.
#include "http_port.hpp"

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

namespace oe::llm {
namespace {

using Json = nlohmann::json;

// Gives a host buffer back on every path.
class HostBuffer {
 public:
  explicit HostBuffer(const oe_http_api& http) : http_(http) {}
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() {
    if (buf_.ptr != nullptr || buf_.opaque != nullptr) {
      http_.release(&buf_);
    }
  }
  oe_host_buf* get() noexcept { return &buf_; }
  [[nodiscard]] std::string_view view() const noexcept {
    return buf_.ptr == nullptr ? std::string_view{} : std::string_view(buf_.ptr, buf_.len);
  }

 private:
  const oe_http_api& http_;
  oe_host_buf buf_{nullptr, 0, nullptr};
};

}  // namespace

const oe_http_api* findHttp(const oe_host_api& host, oe_host_ctx* ctx) {
  const auto* http = static_cast<const oe_http_api*>(host.get_extension(ctx, OE_EXT_HTTP));
  if (http == nullptr ||
      http->struct_size < offsetof(oe_http_api, release) + sizeof(http->release) ||
      http->fetch == nullptr || http->release == nullptr) {
    return nullptr;
  }
  return http;
}

Expected<HttpReply> post(const oe_http_api& http, oe_host_ctx* call, const HttpPost& request) {
  Json headers = Json::object();
  for (const auto& [name, value] : request.headers) {
    headers[name] = value;
  }
  const std::string json = Json{{"method", "POST"},
                                {"url", request.url},
                                {"headers", std::move(headers)},
                                {"body", request.body},
                                {"timeout_ms", request.timeout.count()},
                                {"stall_timeout_ms", request.stall_timeout.count()}}
                               .dump(-1, ' ', false, Json::error_handler_t::replace);
  HostBuffer response(http);
  HostBuffer error(http);
  const oe_status status =
      http.fetch(call, oe_str{json.data(), json.size()}, response.get(), error.get());
  if (status != OE_OK) {
    std::string message(error.view());
    if (message.empty()) {
      message = "oe.http/1 failed with status " + std::to_string(status);
    }
    return fail(status, std::move(message));
  }
  const Json doc = Json::parse(response.view(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("status") ||
      !doc["status"].is_number_integer()) {
    return fail(OE_INTERNAL, "oe.http/1 returned a malformed response");
  }
  HttpReply reply;
  reply.status = doc["status"].get<int>();
  if (auto it = doc.find("headers"); it != doc.end() && it->is_object()) {
    for (const auto& [name, value] : it->items()) {
      if (value.is_string()) {
        reply.headers.emplace(name, value.get<std::string>());
      }
    }
  }
  if (auto it = doc.find("body"); it != doc.end() && it->is_string()) {
    reply.body = it->get<std::string>();
  }
  return reply;
}

}  // namespace oe::llm

// Calls oe.http/1's fetch with the request as JSON and decodes its JSON answer.
#include "http_port.hpp"

#include <nlohmann/json.hpp>

namespace oe::llm {
namespace {

using Json = nlohmann::json;

}  // namespace

Expected<HttpReply> post(const sdk::Http& http, oe_host_ctx* call, const HttpPost& request) {
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
  const sdk::HttpFetch fetched = http.fetch(call, json);
  if (!fetched.ok()) {
    return fail(fetched.status(), fetched.error());
  }
  const Json doc = Json::parse(fetched.response(), nullptr, false);
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

// source.type http: one request through the host's oe.http/1 (the plugin has no network code of
// its own); a 2xx response whose body is a JSON array gives the rows.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <oe/cpp/http.hpp>
#include <string_view>

#include "json_text.hpp"
#include "sources.hpp"

namespace oe::dataset {
namespace {

// The standard reason phrase: oe.http/1 reports the status code only, and upstream's message
// carries fetch's statusText, which is that phrase for every server that follows RFC 9110.
struct Reason {
  int status;
  std::string_view phrase;
};
constexpr Reason kReasons[] = {{300, "Multiple Choices"},
                               {301, "Moved Permanently"},
                               {302, "Found"},
                               {303, "See Other"},
                               {304, "Not Modified"},
                               {307, "Temporary Redirect"},
                               {308, "Permanent Redirect"},
                               {400, "Bad Request"},
                               {401, "Unauthorized"},
                               {402, "Payment Required"},
                               {403, "Forbidden"},
                               {404, "Not Found"},
                               {405, "Method Not Allowed"},
                               {406, "Not Acceptable"},
                               {407, "Proxy Authentication Required"},
                               {408, "Request Timeout"},
                               {409, "Conflict"},
                               {410, "Gone"},
                               {411, "Length Required"},
                               {412, "Precondition Failed"},
                               {413, "Content Too Large"},
                               {414, "URI Too Long"},
                               {415, "Unsupported Media Type"},
                               {416, "Range Not Satisfiable"},
                               {417, "Expectation Failed"},
                               {418, "I'm a Teapot"},
                               {421, "Misdirected Request"},
                               {422, "Unprocessable Content"},
                               {423, "Locked"},
                               {424, "Failed Dependency"},
                               {425, "Too Early"},
                               {426, "Upgrade Required"},
                               {428, "Precondition Required"},
                               {429, "Too Many Requests"},
                               {431, "Request Header Fields Too Large"},
                               {451, "Unavailable For Legal Reasons"},
                               {500, "Internal Server Error"},
                               {501, "Not Implemented"},
                               {502, "Bad Gateway"},
                               {503, "Service Unavailable"},
                               {504, "Gateway Timeout"},
                               {505, "HTTP Version Not Supported"},
                               {506, "Variant Also Negotiates"},
                               {507, "Insufficient Storage"},
                               {508, "Loop Detected"},
                               {510, "Not Extended"},
                               {511, "Network Authentication Required"}};

std::string_view reasonPhrase(int status) {
  for (const Reason& reason : kReasons) {
    if (reason.status == status) {
      return reason.phrase;
    }
  }
  return {};
}

}  // namespace

Expected<std::string> readHttpSource(const HttpSource& source, const std::string& who,
                                     const sdk::Http& http, oe_host_ctx* call) {
  if (!http) {
    return fail(OE_FAILED_PRECONDITION,
                who +
                    ": an http source needs the host's HTTP service (oe.http/1 with fetch), "
                    "which this host does not offer; use an oe host of the same version");
  }
  Json headers = Json::object();
  Json request{{"method", source.method}, {"url", source.url}};
  if (source.method == "POST" && source.body && !source.body->is_null()) {
    request["body"] = source.body->dump(-1, ' ', false, Json::error_handler_t::replace);
    headers["content-type"] = "application/json";
  }
  for (const auto& [name, value] : source.headers) {
    if (lower(name) == "content-type") {
      headers.erase("content-type");  // the node's own headers win, whatever their case
    }
    headers[name] = value;
  }
  request["headers"] = std::move(headers);
  if (source.timeout_ms) {
    request["timeout_ms"] = *source.timeout_ms;
  }
  const std::string request_text = request.dump(-1, ' ', false, Json::error_handler_t::replace);

  const sdk::HttpFetch fetched = http.fetch(call, request_text);
  if (!fetched.ok()) {
    if (fetched.status() == OE_CANCELLED) {
      return fail(OE_CANCELLED, "cancelled");
    }
    return fail(fetched.status(), who + ": " + fetched.error());
  }
  const Json reply = Json::parse(fetched.response(), nullptr, false);
  if (reply.is_discarded() || !reply.is_object() || !reply.contains("status") ||
      !reply["status"].is_number_integer()) {
    return fail(OE_INTERNAL, who + ": oe.http/1 returned a malformed response");
  }
  const int http_status = reply["status"].get<int>();
  if (http_status < 200 || http_status > 299) {
    const std::string_view reason = reasonPhrase(http_status);
    return fail(sdk::statusForHttp(http_status, OE_FAILED_PRECONDITION),
                "Dataset http source " + source.url + " returned " + std::to_string(http_status) +
                    (reason.empty() ? std::string() : " " + std::string(reason)));
  }
  const auto body = reply.find("body");
  const std::string_view text = body != reply.end() && body->is_string()
                                    ? std::string_view(body->get_ref<const std::string&>())
                                    : std::string_view();
  OrderedJson rows;
  try {
    rows = OrderedJson::parse(withoutBom(text));
  } catch (const nlohmann::json::parse_error& error_info) {
    return fail(OE_INVALID_ARGUMENT,
                "Dataset http source " + source.url +
                    " returned a body that is not valid JSON: " + parseProblem(error_info, true));
  }
  if (!rows.is_array()) {
    return fail(OE_INVALID_ARGUMENT, "Dataset http source " + source.url +
                                         " must return a top-level JSON array; got " +
                                         jsTypeOf(rows));
  }
  return rows.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

}  // namespace oe::dataset

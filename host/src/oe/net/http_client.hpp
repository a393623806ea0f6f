// The host's HTTP client (libcurl): one blocking request with a total timeout, a stall timeout
// and cooperative cancellation. Plugins reach it through oe.http/1 (http_service.hpp).
#pragma once

#include <oe/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oe/common/result.hpp"

namespace oe::net {

struct HttpRequest {
  std::string method = "GET";  // any token: GET, POST, PUT, PATCH, DELETE, HEAD, ...
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // sent as is when non-empty (or always for POST)
  // The whole exchange, connect to last byte.
  std::chrono::milliseconds timeout{600000};
  // No byte sent or received for this long aborts the request: catches a hung server long
  // before `timeout` would. Note that a non-streaming LLM call sends nothing until it is done.
  std::chrono::milliseconds stall_timeout{60000};
  size_t max_response_bytes = size_t{256} << 20;
};

struct HttpResponse {
  int status = 0;
  // Of the final response (after redirects); names lower-cased, repeated headers joined by ", ".
  std::map<std::string, std::string> headers;
  std::string body;

  // The header's value, or "" when absent. name: lower-case.
  [[nodiscard]] std::string_view header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string_view{} : std::string_view{it->second};
  }
};

// Initialises libcurl for the process (curl_global_init). Call once at start-up, before the
// first worker thread exists; later calls do nothing. request() calls it too, as a safety net.
void initNet();

// Performs `req`. Any HTTP status is a response (a 429 or 500 is not an error here: retry policy
// belongs to the caller). Fails only when no complete response arrived: connection failure
// (OE_UNAVAILABLE), timeout or stall (OE_DEADLINE_EXCEEDED), `cancelled` returned true
// (OE_CANCELLED, noticed within ~50 ms), a malformed request (OE_INVALID_ARGUMENT) or a response
// over max_response_bytes (OE_RESOURCE_EXHAUSTED); the message names the method, the URL and the
// cause. When `failure` is given it receives that status. `cancelled` may be empty; it is called
// on the calling thread. Thread-safe; each thread reuses its own connections (keep-alive).
Result<HttpResponse> request(const HttpRequest& req, const std::function<bool()>& cancelled,
                             oe_status* failure = nullptr);

}  // namespace oe::net

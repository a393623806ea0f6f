// oe.http/1 (sdk/include/oe/ext/http.h): the HTTP client offered to plugins as a C table, with
// requests and responses as JSON. Cancellation and output go through the host's own table,
// registered once with setHostApi, so this module depends on no other host module.
#pragma once

#include <oe/ext/http.h>
#include <oe/host.h>

#include <string>
#include <string_view>

#include "oe/common/result.hpp"
#include "oe/net/http_client.hpp"

namespace oe::net {

// Registers the host table whose is_cancelled (polled with the `call` context) and write (to
// fill the response and err writers) the oe.http/1 table uses. Call once at start-up with the
// table given to plugins (oe::plugins::hostApi()); a later call replaces it (tests). Thread-safe.
void setHostApi(const oe_host_api* host) noexcept;

// The oe.http/1 table. Static storage: valid for the whole process. A request made before
// setHostApi fails with OE_FAILED_PRECONDITION. Serve it from every context's get_extension
// for OE_EXT_HTTP ("oe.http/1").
const oe_http_api* httpApi() noexcept;

// The oe.http/1 request JSON as an HttpRequest; the error names the offending member.
Result<HttpRequest> parseHttpRequest(std::string_view request_json);

// The oe.http/1 response JSON: {"status", "headers", "body"}. Bytes of the body that are not
// UTF-8 are replaced by U+FFFD (the body travels as a JSON string).
std::string httpResponseJson(const HttpResponse& response);

}  // namespace oe::net

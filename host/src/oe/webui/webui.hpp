// The dashboard `oe serve` answers at `/` (docs/serve.md, "Dashboard"): its files, embedded in
// the binary at build time from host/src/oe/webui/assets, and the two public routes that serve
// them with their content type, an ETag and the headers that keep the page to its own origin.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "oe/httpd/http.hpp"
#include "oe/httpd/router.hpp"

namespace oe::webui {

// One embedded file. The views point into the binary's read-only data: valid forever.
struct Asset {
  std::string_view path;  // as under /assets/: "app.js"
  std::string_view bytes;
  std::string_view content_type;  // from the extension: "text/javascript; charset=utf-8"
  std::string_view etag;          // strong, quoted: "\"<first 32 hex digits of SHA-256>\""
};

// The asset at `path` (relative, '/'-separated, as after /assets/), or nullopt: unknown, or not a
// plain relative path (empty, absolute, a `.` or `..` or empty segment, a backslash or NUL).
[[nodiscard]] std::optional<Asset> find(std::string_view path);

// Every embedded path, sorted (the tests ask each one).
[[nodiscard]] std::vector<std::string_view> assetPaths();

// The headers every dashboard response carries: a Content-Security-Policy that allows only
// this origin's scripts, styles and requests (no inline script, no framing), nosniff, no
// referrer.
[[nodiscard]] const std::vector<std::pair<std::string, std::string>>& securityHeaders();

// The answer for one asset to a GET: 200 with the bytes, or 304 when `if_none_match` names its
// ETag (or is `*`). Both carry the ETag, `Cache-Control: no-cache` (revalidate every time, so a
// new binary's files are picked up at once and an unchanged one costs a 304) and
// securityHeaders().
[[nodiscard]] httpd::Response assetResponse(const Asset& asset,
                                            std::optional<std::string_view> if_none_match);

// GET / (index.html) and GET /assets/{path*}, both Scope::kPublic: the page and its files hold
// no data; every datum comes from the API, which asks for a token.
void addDashboardRoutes(httpd::Router& router);

}  // namespace oe::webui

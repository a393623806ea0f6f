#include "oe/webui/webui.hpp"

#include <algorithm>
#include <string>

#include "oe/webui/embedded_file.hpp"

namespace oe::webui {

namespace {

// Only this origin's scripts, styles, images and requests; no inline script or style markup
// (the page builds its DOM with createElement), no plugin content, no <base>, and no framing
// (clickjacking of the approve button). The report opens as a page of its own, not in a frame.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'";

std::string_view contentTypeOf(std::string_view path) {
  struct Known {
    std::string_view extension;
    std::string_view type;
  };
  static constexpr Known kKnown[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".json", "application/json"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".txt", "text/plain; charset=utf-8"},
      {".woff2", "font/woff2"},
  };
  for (const Known& known : kKnown) {
    if (path.size() > known.extension.size() && path.ends_with(known.extension)) {
      return known.type;
    }
  }
  return "application/octet-stream";
}

// A path the table could hold: relative, no empty, `.` or `..` segment, no backslash or NUL. The
// table holds no such path anyway; refusing them here keeps that true whatever it holds.
bool plainRelativePath(std::string_view path) {
  if (path.empty() || path.find('\\') != std::string_view::npos ||
      path.find('\0') != std::string_view::npos) {
    return false;
  }
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view segment = path.substr(start, end - start);
    if (segment.empty() || segment == "." || segment == "..") {
      return false;
    }
    start = end + 1;
  }
  return true;
}

// Whether an If-None-Match value (a comma-separated list of entity tags, or `*`) names this tag.
// Weak comparison (RFC 9110 13.1.2): W/"x" matches "x".
bool noneMatchHits(std::string_view header, std::string_view etag) {
  size_t start = 0;
  while (start < header.size()) {
    size_t end = header.find(',', start);
    if (end == std::string_view::npos) {
      end = header.size();
    }
    std::string_view tag = header.substr(start, end - start);
    while (!tag.empty() && (tag.front() == ' ' || tag.front() == '\t')) {
      tag.remove_prefix(1);
    }
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) {
      tag.remove_suffix(1);
    }
    if (tag.starts_with("W/")) {
      tag.remove_prefix(2);
    }
    if (tag == "*" || tag == etag) {
      return true;
    }
    start = end + 1;
  }
  return false;
}

httpd::Response notFound(std::string_view path) {
  httpd::Response response =
      httpd::problem(404, "asset-not-found", "No such dashboard file",
                     "the dashboard has no file \"" + std::string(path) +
                         "\"; open / for the dashboard, or see docs/serve.md for the API's routes");
  for (const auto& header : securityHeaders()) {
    response.headers.push_back(header);
  }
  return response;
}

}  // namespace

std::optional<Asset> find(std::string_view path) {
  if (!plainRelativePath(path)) {
    return std::nullopt;
  }
  const auto files = detail::embeddedFiles();
  const auto found = std::lower_bound(
      files.begin(), files.end(), path,
      [](const detail::EmbeddedFile& file, std::string_view wanted) { return file.path < wanted; });
  if (found == files.end() || found->path != path) {
    return std::nullopt;
  }
  return Asset{found->path,
               std::string_view(reinterpret_cast<const char*>(found->data), found->size),
               contentTypeOf(found->path), found->etag};
}

std::vector<std::string_view> assetPaths() {
  std::vector<std::string_view> paths;
  for (const auto& file : detail::embeddedFiles()) {
    paths.push_back(file.path);
  }
  return paths;
}

const std::vector<std::pair<std::string, std::string>>& securityHeaders() {
  static const std::vector<std::pair<std::string, std::string>> kHeaders = {
      {"Content-Security-Policy", std::string(kContentSecurityPolicy)},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
      {"X-Frame-Options", "DENY"},  // frame-ancestors for browsers that predate it
      {"Cross-Origin-Opener-Policy", "same-origin"},
  };
  return kHeaders;
}

httpd::Response assetResponse(const Asset& asset, std::optional<std::string_view> if_none_match) {
  httpd::Response response;
  response.headers = securityHeaders();
  response.headers.emplace_back("ETag", std::string(asset.etag));
  response.headers.emplace_back("Cache-Control", "no-cache");
  response.content_type = std::string(asset.content_type);
  if (if_none_match && noneMatchHits(*if_none_match, asset.etag)) {
    response.status = 304;
    return response;
  }
  response.status = 200;
  response.body = std::string(asset.bytes);
  return response;
}

void addDashboardRoutes(httpd::Router& router) {
  router.add("GET", "/", httpd::Scope::kPublic, [](const httpd::Request& request) {
    const auto asset = find("index.html");
    return asset ? assetResponse(*asset, request.header("if-none-match")) : notFound("index.html");
  });
  router.add("GET", "/assets/{path*}", httpd::Scope::kPublic, [](const httpd::Request& request) {
    const auto param = request.params.find("path");
    // Both arms a view: with "" against a std::string the ternary made a temporary string, and
    // the view outlived it (ASan: stack-use-after-scope).
    const std::string_view path = param == request.params.end() ? std::string_view()
                                                                 : std::string_view(param->second);
    const auto asset = find(path);
    return asset ? assetResponse(*asset, request.header("if-none-match")) : notFound(path);
  });
}

}  // namespace oe::webui

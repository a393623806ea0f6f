// GET /api/openapi.json: the OpenAPI 3.1 document of every route of docs/serve.md's table, built
// in code from one table (documentedRoutes), so that the document, the router and the test that
// compares them read the same list. In code rather than a JSON file embedded at build time: the
// parameters, the problem+json error responses and the security of 30 routes come from a few
// helpers instead of being repeated by hand, and there is no build step to keep.
#pragma once

#include <string>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/httpd/router.hpp"

namespace oe::service {

// One route of docs/serve.md's table. `pattern` is the router's ("{path*}" takes the rest).
struct RouteDoc {
  std::string method;
  std::string pattern;
  httpd::Scope scope;
  std::string summary;
};

// Every route the server answers, as docs/serve.md lists them.
[[nodiscard]] const std::vector<RouteDoc>& documentedRoutes();

// A router pattern as an OpenAPI path template: "{path*}" -> "{path}".
[[nodiscard]] std::string openApiPath(const std::string& pattern);

// The document (parsed once).
[[nodiscard]] const Json& openApiDocument();

void addOpenApiRoute(httpd::Router& router);

}  // namespace oe::service

// The routes `oe serve` answers: method and path pattern ("/api/runs/{id}/state/{field}"), the
// scope each needs, and its handler. The server asks match() for every request; the OpenAPI test
// compares routes() with the document (docs/serve.md).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "oe/httpd/http.hpp"

namespace oe::httpd {

// Handlers run on the server's worker pool (never its I/O thread), so they may read files and
// wait on a store; they must not wait for a run to finish.
using Handler = std::function<Response(const Request&)>;

struct Route {
  std::string method;   // GET, POST, DELETE, PUT, PATCH
  std::string pattern;  // literal segments and {name} segments; a trailing {name*} takes the rest
  Scope scope = Scope::kRead;
  Handler handler;
};

class Router {
 public:
  // Adds a route. A pattern that repeats an existing method+pattern is a programmer error
  // (std::logic_error).
  void add(std::string method, std::string pattern, Scope scope, Handler handler);

  struct Match {
    const Route* route = nullptr;  // null: no route
    std::map<std::string, std::string> params;
    // When no route matched: whether the path matched under another method (405, with Allow)
    std::vector<std::string> allowed_methods;
  };
  // The route for a method and the path AS SENT (still percent-encoded, without the query):
  // segments are split first and each captured one decoded once after, so an encoded slash
  // ("a%2Fb") stays inside one {name} (an experience in a subfolder), and nothing is decoded
  // twice. A rest parameter {name*} is its segments decoded and joined with '/'; a segment with
  // a bad escape, or one that decodes to contain '/' inside a rest parameter, matches nothing.
  // Literal segments beat {name} segments at the same position, so "/api/runs/stream" is not
  // taken for "/api/runs/{id}".
  [[nodiscard]] Match match(std::string_view method, std::string_view raw_path) const;

  [[nodiscard]] const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Route> routes_;
};

}  // namespace oe::httpd

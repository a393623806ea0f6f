// The HTTP types `oe serve`'s server and its handlers share: a parsed request, a response (whole,
// or a stream of Server-Sent Events), the access scopes, and problem+json errors (RFC 9457).
// Handlers see only these, never Beast or a socket, so they are tested by calling them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oe/common/json.hpp"

namespace oe::httpd {

// What a caller may do. A route names the least scope it needs; the server grants one per
// request from its bearer token (docs/serve.md, "Tokens"). kPublic routes need no token
// (health, the dashboard's static files, webhooks, which carry their own signature).
enum class Scope : uint8_t { kPublic = 0, kRead = 1, kAdmin = 2 };

std::string_view scopeName(Scope scope);


struct Request {
  std::string method;  // upper case: GET, POST, DELETE, ...
  std::string target;  // as sent: path and query
  std::string path;    // percent-decoded path, without the query (for logs and messages;
                       // routing splits the raw path first, see Router::match)
  std::multimap<std::string, std::string> query;  // percent-decoded, in order
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
  std::map<std::string, std::string> params;  // the route's {name} segments, decoded
  Scope granted = Scope::kPublic;             // what the caller's token allows
  std::string token_name;                     // the token's name, for logs ("" without one)
  std::string remote;                         // "ip:port" of the peer

  // The first header of that (lower-case) name, or nullopt.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const;
  // The first query parameter of that name, or nullopt.
  [[nodiscard]] std::optional<std::string_view> queryParam(std::string_view name) const;
};

// A subscriber of a Server-Sent Events response, as its producer sees it. The server owns it; a
// producer keeps a shared_ptr and pushes frames from any thread.
class EventSink {
 public:
  virtual ~EventSink() = default;
  // [thread-safe, never blocks] Queues one SSE frame ("id: ...\ndata: ...\n\n", see sseFrame).
  // False when the client is gone or has fallen too far behind (the server then closes the
  // connection; the client reconnects with Last-Event-ID and misses nothing): stop pushing.
  virtual bool push(std::string frame) = 0;
  // [thread-safe] False once the connection is closed; a producer polls it to stop early.
  [[nodiscard]] virtual bool open() const = 0;
  // [thread-safe] Ends the stream after the frames already queued.
  virtual void finish() = 0;
};

// The producer behind an SSE response. The server calls start() once, after it has sent the
// headers, on a thread of its own pool; start() returns at once and produces from elsewhere
// (a shared tailer, a timer), keeping the sink until push() says false or it calls finish().
class EventSource {
 public:
  virtual ~EventSource() = default;
  virtual void start(std::shared_ptr<EventSink> sink) = 0;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  std::string body;
  // Set for text/event-stream: the body is ignored and the source produces the events.
  std::shared_ptr<EventSource> events;
};

// One SSE frame: `id:` (when not empty), `event:` (when not empty), the data split into `data:`
// lines, and the blank line that ends it.
std::string sseFrame(std::string_view id, std::string_view event, std::string_view data);

Response jsonResponse(int status, const Json& body);

// An RFC 9457 problem: {"type", "title", "status", "detail"} as application/problem+json. `type`
// is a short slug made into "https://oe.dev/problems/<slug>" (a name, never fetched); `detail`
// says what happened and what to do.
Response problem(int status, std::string_view slug, std::string_view title, std::string_view detail);

}  // namespace oe::httpd

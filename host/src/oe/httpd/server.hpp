// `oe serve`'s HTTP/1.1 server: Boost.Beast over Asio, plain or TLS, answering a Router's routes
// (docs/serve.md). It owns the sockets, the limits and the tokens; handlers run on its worker
// pool and see only Request/Response.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/httpd/router.hpp"

namespace oe::httpd {

struct ServerOptions {
  std::string listen = "127.0.0.1:8420";  // host:port; port 0 picks a free one (tests)
  std::optional<std::filesystem::path> token_file;
  std::optional<std::filesystem::path> tls_cert;  // PEM; with tls_key
  std::optional<std::filesystem::path> tls_key;
  bool insecure_http = false;  // a non-loopback address without TLS, on purpose
  std::string cors_origin;     // empty: no CORS headers
  size_t max_body_bytes = 8 << 20;
  size_t max_header_bytes = 16 << 10;
  size_t max_connections = 4096;
  size_t max_sse_connections = 2048;
  size_t max_sse_queue_bytes = 1 << 20;  // per subscriber; beyond it the subscriber is dropped
  std::chrono::seconds idle_timeout{60};     // a connection with no request in flight
  std::chrono::seconds request_timeout{30};  // reading one whole request (slow clients)
  unsigned worker_threads = 4;               // handlers run here
  // A comment frame (": ping") on every SSE stream this often, so that proxies keep it open and
  // a client that went away is noticed by the failed write.
  std::chrono::milliseconds sse_ping_interval{15000};
  // One line per request on stderr: peer, method, path (never the query), status, bytes, time
  // and the token's name (never the token).
  bool access_log = false;
};

class Server {
 public:
  // Checks the options (a non-loopback address without a token file, or without TLS and
  // --insecure-http, is refused with what to do), reads the token file and the TLS files, binds
  // and starts serving on threads of its own (one I/O thread, `worker_threads` for handlers).
  // The error names the option or file at fault. `router` is used by reference: it must outlive
  // the Server and not change while it runs.
  static Result<std::unique_ptr<Server>> start(ServerOptions options, const Router& router);

  virtual ~Server() = default;
  // The port bound (the chosen one when listen asked for 0).
  [[nodiscard]] virtual uint16_t port() const = 0;
  // "http://127.0.0.1:8420" or "https://...".
  [[nodiscard]] virtual std::string url() const = 0;
  // Stops accepting, closes every connection (SSE ones included) and joins its threads.
  // Idempotent; the destructor calls it. Handlers already running are waited for; call it from
  // neither a handler nor an EventSource (it would wait for itself).
  virtual void stop() = 0;
};

}  // namespace oe::httpd

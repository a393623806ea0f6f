// The host side of a sandboxed node's network: an HTTP proxy on a Unix socket that lets a
// CONNECT tunnel or a plain-HTTP request through only to the hosts of the node's network.allow.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/result.hpp"

namespace oe::sandbox {

// One entry of a policy's network.allow. `host` is kept normalized: lower case, no trailing dot;
// "*.github.com" stands for any subdomain of github.com (never github.com itself, never an IP
// literal). An IPv6 literal is kept without its brackets.
struct ProxyRule {
  std::string host;
  std::optional<uint16_t> port;  // none: 443 and 80 only

  [[nodiscard]] bool wildcard() const { return host.starts_with("*."); }
};

// Parses "host", "host:port", "*.suffix", "*.suffix:port", "[v6]" and "[v6]:port". The error
// names the entry and says what is wrong with it.
Result<ProxyRule> parseProxyRule(std::string_view text);

// Whether `rule` lets a connection to host:port through. `host` is compared without case and
// without a trailing dot; an IP literal matches only a rule that spells the same literal.
bool ruleAllows(const ProxyRule& rule, std::string_view host, uint16_t port);
// Whether any of `rules` does.
bool rulesAllow(const std::vector<ProxyRule>& rules, std::string_view host, uint16_t port);

// One request head a client sent the proxy (up to and without the blank line): where it goes
// and, for plain HTTP, the head to send the origin.
struct ProxyRequest {
  bool tunnel = false;  // CONNECT
  std::string host;     // normalized as the rules are
  uint16_t port = 0;
  bool ip_literal = false;
  // Plain HTTP only: the head for the origin, origin-form target, the client's end-to-end
  // headers, "Host" and "Connection: close", blank line included.
  std::string origin_head;
};

// Reads "CONNECT host:port HTTP/1.x" or "METHOD http://host[:port]/path HTTP/1.x" with its
// header lines, CRLF-separated. The error says what is wrong, for the client's 400.
Result<ProxyRequest> parseProxyRequest(std::string_view head);

struct ProxyDenial {
  std::string host;  // normalized as the rules are
  uint16_t port = 0;
  std::string reason;
};

struct ProxyOptions {
  std::string socket_path;  // where to listen; created by start(), removed by stop()
  std::vector<ProxyRule> allow;
  // Host name -> IP literal, consulted before DNS (tests map names to 127.0.0.1).
  std::map<std::string, std::string> resolve_overrides;
  // Both run on the proxy's thread; they must not call stop(). An exception they throw is
  // swallowed (it must not end the proxy's thread).
  std::function<void(const ProxyDenial&)> on_denied;
  // Called when the policy lets host:port through, before the upstream connection is tried.
  std::function<void(const std::string& host, uint16_t port)> on_allowed;
  // How long a client has to send its whole request head, and how long resolving and connecting
  // upstream may take, before the proxy gives up (408 and 504).
  std::chrono::milliseconds head_timeout{10000};
  std::chrono::milliseconds connect_timeout{10000};
};

// Serves one Unix socket on one thread of its own (Boost.Asio, every connection asynchronous on
// it). start() returns once the socket listens; stop() (or the destructor) closes the socket,
// every open connection and tunnel, joins the thread and removes the socket file.
class ConnectProxy {
 public:
  struct Counts {
    // Tunnels and forwarded requests whose upstream connection was made.
    uint64_t allowed = 0;
    // Refused by the policy (403).
    uint64_t denied = 0;
    // Allowed, but resolving or connecting upstream failed (502, 504).
    uint64_t failed = 0;
    // Not a request the proxy understands, or too slow to arrive (400, 408).
    uint64_t malformed = 0;
  };

  // Fails (as a value) when an override is not an IP literal, the path is too long for a Unix
  // socket, the path exists and is not a socket, or the socket cannot be bound. A socket file left
  // at the path by an earlier run is replaced.
  static Result<std::unique_ptr<ConnectProxy>> start(ProxyOptions options);

  ~ConnectProxy();
  ConnectProxy(const ConnectProxy&) = delete;
  ConnectProxy& operator=(const ConnectProxy&) = delete;

  // Idempotent; returns without waiting for the peers of open tunnels. Not from a callback.
  void stop();
  [[nodiscard]] Counts counts() const;
  [[nodiscard]] const std::string& socketPath() const;

  struct Impl;
  // Only start() can make one: the constructor is public for std::make_unique alone.
  class Private {
    friend class ConnectProxy;
    Private() = default;
  };
  ConnectProxy(Private /*unused*/, std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace oe::sandbox

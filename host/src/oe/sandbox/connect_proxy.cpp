// The sandbox's filtering HTTP proxy: parses one request head per connection, checks its target
// against network.allow, and then relays bytes between the client and the upstream, or refuses.
#include "oe/sandbox/connect_proxy.hpp"

// clang-format off
// Boost 1.74's asio/awaitable.hpp uses std::exchange without including <utility> (C++20 mode).
#include <utility>
#include <boost/asio.hpp>
// clang-format on

#include <arpa/inet.h>
#include <sys/un.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <filesystem>
#include <mutex>
#include <thread>

namespace oe::sandbox {

namespace asio = boost::asio;
using Tcp = asio::ip::tcp;
using Local = asio::local::stream_protocol;
using ErrorCode = boost::system::error_code;

namespace {

constexpr size_t kMaxHead = size_t{8} * 1024;
constexpr size_t kTunnelBuffer = size_t{64} * 1024;
// What an error reply's connection may still read of the client's request, and for how long,
// so that closing it does not reset the connection before the client has read the reply.
constexpr size_t kMaxLingerBytes = size_t{64} * 1024;
constexpr std::chrono::seconds kLinger{1};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// inet_pton reads a C string: a NUL inside `text` would let "::1<NUL>anything" pass as ::1.
bool isIpv4(const std::string& text) {
  in_addr addr{};
  return text.find('\0') == std::string::npos && inet_pton(AF_INET, text.c_str(), &addr) == 1;
}

bool isIpv6(const std::string& text) {
  in6_addr addr{};
  return text.find('\0') == std::string::npos && inet_pton(AF_INET6, text.c_str(), &addr) == 1;
}

struct NormalHost {
  std::string text;
  bool ip_literal = false;
};

// Lower case, one trailing dot dropped, then a DNS name of letters, digits, '-' and '_' or an IP
// literal. A name whose last label is all digits is refused: the system resolver would read
// "10.1" as the address 10.0.0.1, which no rule written as text would expect.
Result<NormalHost> normalizeHost(std::string_view raw, bool bracketed) {
  std::string host = lower(raw);
  if (bracketed) {
    if (!isIpv6(host)) {
      return makeError("\"[" + std::string(raw) + "]\" is not an IPv6 address");
    }
    return NormalHost{std::move(host), true};
  }
  if (host.ends_with('.')) {
    host.pop_back();
  }
  if (host.empty()) {
    return makeError("the host name is empty");
  }
  if (isIpv4(host)) {
    return NormalHost{std::move(host), true};
  }
  if (host.size() > 253) {
    return makeError("the host name is longer than 253 characters");
  }
  size_t start = 0;
  std::string_view last_label;
  while (start <= host.size()) {
    size_t dot = host.find('.', start);
    if (dot == std::string::npos) {
      dot = host.size();
    }
    const std::string_view label = std::string_view(host).substr(start, dot - start);
    if (label.empty() || label.size() > 63) {
      return makeError("\"" + std::string(raw) + "\" has an empty or over-long label");
    }
    for (const char c : label) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) {
        return makeError("\"" + std::string(raw) + "\" has a character a host name cannot have");
      }
    }
    last_label = label;
    start = dot + 1;
  }
  if (std::all_of(last_label.begin(), last_label.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
    return makeError("\"" + std::string(raw) + "\" is neither an IP address nor a host name");
  }
  return NormalHost{std::move(host), false};
}

std::optional<uint16_t> parsePort(std::string_view text) {
  if (text.empty() || text.size() > 5) {
    return std::nullopt;
  }
  uint32_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value == 0 || value > 65535) {
    return std::nullopt;
  }
  return static_cast<uint16_t>(value);
}

struct SplitHostPort {
  std::string_view host;
  std::optional<std::string_view> port;  // the text after ':', when there is one
  bool bracketed = false;
};

// "host", "host:port", "[v6]", "[v6]:port". A bare IPv6 address (more than one ':') is refused:
// its last group could be read as a port.
Result<SplitHostPort> splitHostPort(std::string_view text) {
  SplitHostPort out;
  if (text.starts_with('[')) {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) {
      return makeError("'[' without a closing ']'");
    }
    out.host = text.substr(1, close - 1);
    out.bracketed = true;
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (!rest.starts_with(':')) {
        return makeError("only \":port\" may follow ']'");
      }
      out.port = rest.substr(1);
    }
    return out;
  }
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    out.host = text;
    return out;
  }
  if (text.find(':', colon + 1) != std::string_view::npos) {
    return makeError("an IPv6 address must be written in brackets, as [::1]:443");
  }
  out.host = text.substr(0, colon);
  out.port = text.substr(colon + 1);
  return out;
}

std::string_view trim(std::string_view text) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!text.empty() && space(text.front())) {
    text.remove_prefix(1);
  }
  while (!text.empty() && space(text.back())) {
    text.remove_suffix(1);
  }
  return text;
}

std::string errorReply(int status, std::string_view reason, std::string_view body) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) + "\r\n";
  out += "Content-Type: text/plain; charset=utf-8\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += "Connection: close\r\n\r\n";
  out += body;
  return out;
}

bool isToken(std::string_view text) {
  if (text.empty()) {
    return false;
  }
  return std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 ||
           std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

// Hop-by-hop headers (RFC 9110 7.6.1) a proxy must not pass on, besides those Connection names.
bool hopByHop(const std::string& name) {
  return name == "connection" || name == "proxy-connection" || name == "keep-alive" ||
         name == "proxy-authorization" || name == "proxy-authenticate" || name == "te" ||
         name == "trailer" || name == "upgrade" || name == "host";
}

}  // namespace

Result<ProxyRequest> parseProxyRequest(std::string_view head) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < head.size()) {
    size_t end = head.find("\r\n", start);
    if (end == std::string_view::npos) {
      end = head.size();
    }
    lines.push_back(head.substr(start, end - start));
    start = end + 2;
  }
  if (lines.empty()) {
    return makeError("the request is empty");
  }
  // A bare CR or LF inside a line would reach the origin as a line break of its own (a header
  // smuggled past this parser), and a NUL ends a line early for some servers: refuse them all.
  for (const std::string_view each : lines) {
    if (each.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos) {
      return makeError("a line holds a bare CR, LF or NUL");
    }
  }
  const std::string_view line = lines[0];
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return makeError("the request line is not \"METHOD target HTTP/1.x\"");
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!isToken(method) || target.empty() || (version != "HTTP/1.1" && version != "HTTP/1.0")) {
    return makeError("the request line is not \"METHOD target HTTP/1.x\"");
  }
  std::vector<std::pair<std::string, std::string_view>> headers;  // lower-case name, whole line
  std::vector<std::string> named_by_connection;
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == std::string_view::npos || !isToken(lines[i].substr(0, colon))) {
      return makeError("a header line is malformed");
    }
    std::string name = lower(lines[i].substr(0, colon));
    if (name == "connection" || name == "proxy-connection") {
      std::string_view value = lines[i].substr(colon + 1);
      while (!value.empty()) {
        const size_t comma = value.find(',');
        named_by_connection.push_back(lower(trim(value.substr(0, comma))));
        value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
      }
    }
    headers.emplace_back(std::move(name), lines[i]);
  }

  ProxyRequest request;
  std::string_view authority;
  std::string_view path;
  if (method == "CONNECT") {
    request.tunnel = true;
    authority = target;
  } else {
    const std::string scheme = lower(target.substr(0, std::min<size_t>(target.size(), 8)));
    if (scheme.starts_with("https://")) {
      return makeError("an https:// URL goes through CONNECT, not a plain request");
    }
    if (!scheme.starts_with("http://")) {
      return makeError("a proxy request names an absolute http:// URL or is a CONNECT");
    }
    const std::string_view rest = target.substr(7);
    const size_t end = rest.find_first_of("/?#");
    authority = rest.substr(0, end);
    path = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
    if (path.starts_with('#')) {
      path = {};
    }
  }
  if (authority.find('@') != std::string_view::npos) {
    return makeError("the target names a user (user@host)");
  }
  auto split = splitHostPort(authority);
  if (!split) {
    return makeError("the target \"" + std::string(authority) + "\": " + split.error().message);
  }
  auto host = normalizeHost(split->host, split->bracketed);
  if (!host) {
    return makeError("the target \"" + std::string(authority) + "\": " + host.error().message);
  }
  request.host = std::move(host->text);
  request.ip_literal = host->ip_literal;
  if (split->port) {
    const auto port = parsePort(*split->port);
    if (!port) {
      return makeError("the target \"" + std::string(authority) + "\" has a bad port");
    }
    request.port = *port;
  } else if (request.tunnel) {
    return makeError("a CONNECT target is host:port; \"" + std::string(authority) +
                     "\" has no port");
  } else {
    request.port = 80;
  }

  if (!request.tunnel) {
    std::string out = std::string(method) + " ";
    if (path.empty() || path.starts_with('?')) {  // "http://host?q" asks for "/?q"
      out += "/";
    }
    out += std::string(path) + " " + std::string(version) + "\r\n";
    out += "Host: " + std::string(authority) + "\r\n";
    for (const auto& [name, whole] : headers) {
      if (hopByHop(name) || std::find(named_by_connection.begin(), named_by_connection.end(),
                                      name) != named_by_connection.end()) {
        continue;
      }
      out += std::string(whole) + "\r\n";
    }
    out += "Connection: close\r\n\r\n";
    request.origin_head = std::move(out);
  }
  return request;
}

Result<ProxyRule> parseProxyRule(std::string_view text) {
  const std::string_view entry = trim(text);
  const auto fail = [&](const std::string& why) {
    return makeError("network.allow entry \"" + std::string(text) + "\": " + why);
  };
  if (entry.empty()) {
    return fail("it is empty; write a host, host:port or *.domain");
  }
  if (entry.find("://") != std::string_view::npos || entry.find('/') != std::string_view::npos) {
    return fail("write a host (api.example.com) or host:port, not a URL");
  }
  auto split = splitHostPort(entry);
  if (!split) {
    return fail(split.error().message);
  }
  ProxyRule rule;
  if (split->port) {
    rule.port = parsePort(*split->port);
    if (!rule.port) {
      return fail("the port \"" + std::string(*split->port) + "\" is not a number from 1 to 65535");
    }
  }
  std::string_view host = split->host;
  const bool wildcard = host.starts_with("*.");
  if (wildcard) {
    host.remove_prefix(2);
  }
  if (host.find('*') != std::string_view::npos) {
    return fail("'*' may only open the entry, as in *.github.com");
  }
  auto normal = normalizeHost(host, split->bracketed);
  if (!normal) {
    return fail(normal.error().message);
  }
  if (wildcard && normal->ip_literal) {
    return fail("a wildcard names a domain, not an IP address");
  }
  rule.host = wildcard ? "*." + normal->text : std::move(normal->text);
  return rule;
}

bool ruleAllows(const ProxyRule& rule, std::string_view host, uint16_t port) {
  if (rule.port ? port != *rule.port : (port != 443 && port != 80)) {
    return false;
  }
  std::string name = lower(host);
  if (name.ends_with('.')) {
    name.pop_back();
  }
  if (name.starts_with('[') && name.ends_with(']')) {
    name = name.substr(1, name.size() - 2);
  }
  if (!rule.wildcard()) {
    return !name.empty() && name == rule.host;
  }
  if (isIpv4(name) || isIpv6(name)) {
    return false;
  }
  const std::string_view suffix = std::string_view(rule.host).substr(1);  // ".github.com"
  return name.size() > suffix.size() && name.ends_with(suffix);
}

bool rulesAllow(const std::vector<ProxyRule>& rules, std::string_view host, uint16_t port) {
  return std::any_of(rules.begin(), rules.end(),
                     [&](const ProxyRule& rule) { return ruleAllows(rule, host, port); });
}

namespace detail {
// What stop() needs of a session; the session itself lives in this file's anonymous namespace.
class Closable {
 public:
  virtual ~Closable() = default;
  virtual void close() = 0;
};
}  // namespace detail

struct ConnectProxy::Impl {
  // First, so that it goes last: destroying it destroys the handlers that own the sessions.
  asio::io_context io;
  Local::acceptor acceptor{io};
  asio::steady_timer accept_retry{io};
  ProxyOptions options;
  std::map<std::string, asio::ip::address> overrides;  // normalized host -> address
  std::atomic<uint64_t> allowed{0};
  std::atomic<uint64_t> denied{0};
  std::atomic<uint64_t> failed{0};
  std::atomic<uint64_t> malformed{0};
  std::vector<std::weak_ptr<detail::Closable>> sessions;  // proxy thread only; for stop()
  std::mutex stop_mutex;
  bool stopped = false;
  bool listening = false;  // the socket file is ours to remove
  std::thread thread;

  void accept();
  void closeAll();

  // A callback's exception must not end the proxy's thread.
  template <class F, class... Args>
  static void notify(const F& callback, Args&&... args) {
    if (!callback) {
      return;
    }
    try {
      callback(std::forward<Args>(args)...);
    } catch (...) {  // NOLINT(bugprone-empty-catch): the callback's failure is its own
    }
  }
};

namespace {

// One client connection: the request head, the decision, then the relay or the refusal. Owned by
// its pending handlers; it never touches the proxy after the proxy's thread is gone.
class Session final : public detail::Closable, public std::enable_shared_from_this<Session> {
 public:
  Session(ConnectProxy::Impl& proxy, Local::socket client)
      : proxy_(proxy),
        client_(std::move(client)),
        upstream_(proxy.io),
        resolver_(proxy.io),
        deadline_(proxy.io) {}

  void start() {
    phase_ = Phase::kHead;
    deadline_.expires_after(proxy_.options.head_timeout);
    deadline_.async_wait([self = shared_from_this()](const ErrorCode& ec) {
      if (!ec && self->phase_ == Phase::kHead) {
        self->timed_out_ = true;
        ErrorCode ignored;
        self->client_.cancel(ignored);
      }
    });
    readHead();
  }

  void close() override {
    phase_ = Phase::kClosed;
    ErrorCode ignored;
    deadline_.cancel();
    resolver_.cancel();
    client_.close(ignored);
    upstream_.close(ignored);
  }

 private:
  enum class Phase { kHead, kConnecting, kRelay, kReplying, kClosed };

  void readHead() {
    client_.async_read_some(
        asio::buffer(up_buf_),
        [self = shared_from_this()](const ErrorCode& ec, size_t n) { self->onHeadData(ec, n); });
  }

  void onHeadData(const ErrorCode& ec, size_t n) {
    if (phase_ != Phase::kHead) {
      return;
    }
    if (ec) {
      if (timed_out_) {
        refuse(408, "Request Timeout",
               "oe sandbox proxy: the request head did not arrive in time\n");
      } else {
        close();  // the client left before finishing its request
      }
      return;
    }
    head_.append(up_buf_.data(), n);
    const size_t end = head_.find("\r\n\r\n");
    if (end == std::string::npos || end + 4 > kMaxHead) {
      if (head_.size() >= kMaxHead) {
        refuse(400, "Bad Request", "oe sandbox proxy: the request head is larger than 8 KiB\n");
      } else {
        readHead();
      }
      return;
    }
    deadline_.cancel();
    leftover_ = head_.substr(end + 4);
    auto request = parseProxyRequest(std::string_view(head_).substr(0, end));
    if (!request) {
      refuse(400, "Bad Request", "oe sandbox proxy: " + request.error().message + "\n");
      return;
    }
    request_ = std::move(request).value();
    decide();
  }

  void decide() {
    const std::string target = request_.host.find(':') == std::string::npos
                                   ? request_.host + ":" + std::to_string(request_.port)
                                   : "[" + request_.host + "]:" + std::to_string(request_.port);
    if (!rulesAllow(proxy_.options.allow, request_.host, request_.port)) {
      proxy_.denied.fetch_add(1, std::memory_order_relaxed);
      ConnectProxy::Impl::notify(
          proxy_.options.on_denied,
          ProxyDenial{request_.host, request_.port, "not in the node's policy network.allow"});
      refuse(403, "Forbidden",
             "oe sandbox proxy: " + target + " is not in the node's policy network.allow\n");
      return;
    }
    ConnectProxy::Impl::notify(proxy_.options.on_allowed, request_.host, request_.port);
    phase_ = Phase::kConnecting;
    timed_out_ = false;  // the head deadline may have fired just as the head arrived
    target_ = target;
    deadline_.expires_after(proxy_.options.connect_timeout);
    deadline_.async_wait([self = shared_from_this()](const ErrorCode& ec) {
      if (!ec && self->phase_ == Phase::kConnecting) {
        self->timed_out_ = true;
        ErrorCode ignored;
        self->resolver_.cancel();
        self->upstream_.close(ignored);
      }
    });

    asio::ip::address address;
    if (auto it = proxy_.overrides.find(request_.host); it != proxy_.overrides.end()) {
      connect({Tcp::endpoint(it->second, request_.port)});
      return;
    }
    if (request_.ip_literal) {
      ErrorCode ec;
      address = asio::ip::make_address(request_.host, ec);
      if (!ec) {
        connect({Tcp::endpoint(address, request_.port)});
        return;
      }
    }
    resolver_.async_resolve(
        request_.host, std::to_string(request_.port), Tcp::resolver::numeric_service,
        [self = shared_from_this()](const ErrorCode& ec, const Tcp::resolver::results_type& found) {
          if (self->phase_ != Phase::kConnecting) {
            return;
          }
          if (ec) {
            self->upstreamFailed("cannot resolve " + self->request_.host + ": " + ec.message());
            return;
          }
          std::vector<Tcp::endpoint> endpoints;
          for (const auto& entry : found) {
            endpoints.push_back(entry.endpoint());
          }
          self->connect(std::move(endpoints));
        });
  }

  void connect(std::vector<Tcp::endpoint> endpoints) {
    endpoints_ = std::move(endpoints);
    asio::async_connect(
        upstream_, endpoints_,
        [self = shared_from_this()](const ErrorCode& ec, const Tcp::endpoint&) {
          if (self->phase_ != Phase::kConnecting) {
            return;
          }
          if (ec) {
            self->upstreamFailed("cannot connect to " + self->target_ + ": " + ec.message());
            return;
          }
          self->connected();
        });
  }

  void upstreamFailed(const std::string& why) {
    proxy_.failed.fetch_add(1, std::memory_order_relaxed);
    if (timed_out_) {
      refuse(504, "Gateway Timeout", "oe sandbox proxy: " + target_ + " did not answer in time\n");
    } else {
      refuse(502, "Bad Gateway", "oe sandbox proxy: " + why + "\n");
    }
  }

  void connected() {
    deadline_.cancel();
    phase_ = Phase::kRelay;
    proxy_.allowed.fetch_add(1, std::memory_order_relaxed);
    ErrorCode ignored;
    upstream_.set_option(Tcp::no_delay(true), ignored);
    auto self = shared_from_this();
    if (request_.tunnel) {
      out_ = "HTTP/1.1 200 Connection established\r\n\r\n";
      asio::async_write(client_, asio::buffer(out_), [self](const ErrorCode& ec, size_t) {
        if (ec) {
          self->close();
          return;
        }
        self->writeLeftoverThenRelay();
      });
    } else {
      out_ = std::move(request_.origin_head);
      out_ += leftover_;
      leftover_.clear();
      asio::async_write(upstream_, asio::buffer(out_), [self](const ErrorCode& ec, size_t) {
        if (ec) {
          self->close();
          return;
        }
        self->relay();
      });
    }
  }

  // Bytes a client sent right behind its CONNECT head (a TLS ClientHello) belong upstream.
  void writeLeftoverThenRelay() {
    if (leftover_.empty()) {
      relay();
      return;
    }
    asio::async_write(upstream_, asio::buffer(leftover_),
                      [self = shared_from_this()](const ErrorCode& ec, size_t) {
                        if (ec) {
                          self->close();
                          return;
                        }
                        self->relay();
                      });
  }

  void relay() {
    pumpUp();
    pumpDown();
  }

  // client -> upstream; at the client's EOF, half-close upstream and let the answer come back.
  void pumpUp() {
    client_.async_read_some(
        asio::buffer(up_buf_), [self = shared_from_this()](const ErrorCode& ec, size_t n) {
          if (self->phase_ != Phase::kRelay) {
            return;
          }
          if (ec == asio::error::eof) {
            ErrorCode ignored;
            self->upstream_.shutdown(Tcp::socket::shutdown_send, ignored);
            self->up_done_ = true;
            self->finishIfDone();
            return;
          }
          if (ec) {
            self->close();
            return;
          }
          asio::async_write(self->upstream_, asio::buffer(self->up_buf_.data(), n),
                            [self](const ErrorCode& wec, size_t) {
                              if (wec) {
                                self->close();
                                return;
                              }
                              self->pumpUp();
                            });
        });
  }

  // upstream -> client, the same the other way.
  void pumpDown() {
    upstream_.async_read_some(
        asio::buffer(down_buf_), [self = shared_from_this()](const ErrorCode& ec, size_t n) {
          if (self->phase_ != Phase::kRelay) {
            return;
          }
          if (ec == asio::error::eof) {
            ErrorCode ignored;
            self->client_.shutdown(Local::socket::shutdown_send, ignored);
            self->down_done_ = true;
            self->finishIfDone();
            return;
          }
          if (ec) {
            self->close();
            return;
          }
          asio::async_write(self->client_, asio::buffer(self->down_buf_.data(), n),
                            [self](const ErrorCode& wec, size_t) {
                              if (wec) {
                                self->close();
                                return;
                              }
                              self->pumpDown();
                            });
        });
  }

  void finishIfDone() {
    if (up_done_ && down_done_) {
      close();
    }
  }

  // An error reply, then a lingering close: the rest of what the client sent is read and dropped
  // (for a while, up to a limit) so that closing does not reset the connection under the reply.
  void refuse(int status, std::string_view reason, const std::string& body) {
    if (status == 400 || status == 408) {
      proxy_.malformed.fetch_add(1, std::memory_order_relaxed);
    }
    phase_ = Phase::kReplying;
    deadline_.cancel();
    ErrorCode ignored;
    upstream_.close(ignored);
    out_ = errorReply(status, reason, body);
    asio::async_write(client_, asio::buffer(out_),
                      [self = shared_from_this()](const ErrorCode& ec, size_t) {
                        if (ec || self->phase_ != Phase::kReplying) {
                          self->close();
                          return;
                        }
                        ErrorCode ignored_shutdown;
                        self->client_.shutdown(Local::socket::shutdown_send, ignored_shutdown);
                        self->deadline_.expires_after(kLinger);
                        self->deadline_.async_wait([self](const ErrorCode& wec) {
                          if (!wec) {
                            self->close();
                          }
                        });
                        self->drain();
                      });
  }

  void drain() {
    client_.async_read_some(
        asio::buffer(up_buf_), [self = shared_from_this()](const ErrorCode& ec, size_t n) {
          self->drained_ += n;
          if (ec || self->drained_ > kMaxLingerBytes || self->phase_ != Phase::kReplying) {
            self->close();
            return;
          }
          self->drain();
        });
  }

  ConnectProxy::Impl& proxy_;
  Local::socket client_;
  Tcp::socket upstream_;
  Tcp::resolver resolver_;
  asio::steady_timer deadline_;
  Phase phase_ = Phase::kHead;
  bool timed_out_ = false;
  bool up_done_ = false;
  bool down_done_ = false;
  size_t drained_ = 0;
  std::string head_;
  std::string leftover_;
  std::string out_;
  std::string target_;
  ProxyRequest request_;
  std::vector<Tcp::endpoint> endpoints_;
  std::array<char, kTunnelBuffer> up_buf_{};
  std::array<char, kTunnelBuffer> down_buf_{};
};

}  // namespace

void ConnectProxy::Impl::accept() {
  acceptor.async_accept([this](const ErrorCode& ec, Local::socket client) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) {
      return;  // stop()
    }
    if (ec) {
      // Out of descriptors, most likely: wait a little instead of spinning on the error.
      accept_retry.expires_after(std::chrono::milliseconds(100));
      accept_retry.async_wait([this](const ErrorCode& wec) {
        if (!wec) {
          accept();
        }
      });
      return;
    }
    std::erase_if(sessions, [](const std::weak_ptr<detail::Closable>& s) { return s.expired(); });
    auto session = std::make_shared<Session>(*this, std::move(client));
    sessions.push_back(session);
    session->start();
    accept();
  });
}

void ConnectProxy::Impl::closeAll() {
  ErrorCode ignored;
  acceptor.close(ignored);
  accept_retry.cancel();
  for (auto& weak : sessions) {
    if (auto session = weak.lock()) {
      session->close();
    }
  }
  sessions.clear();
  // A system DNS lookup in flight cannot be interrupted; stop() does not wait for it.
  io.stop();
}

ConnectProxy::ConnectProxy(Private /*unused*/, std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

ConnectProxy::~ConnectProxy() { stop(); }

Result<std::unique_ptr<ConnectProxy>> ConnectProxy::start(ProxyOptions options) {
  auto impl = std::make_unique<Impl>();
  const std::string path = options.socket_path;
  for (const auto& [name, literal] : options.resolve_overrides) {
    ErrorCode ec;
    const auto address = asio::ip::make_address(literal, ec);
    auto host = normalizeHost(name, false);
    if (ec || !host) {
      return makeError("sandbox proxy: the resolve override \"" + name + "\" -> \"" + literal +
                       "\" is not a host name mapped to an IP address");
    }
    impl->overrides[host->text] = address;
  }
  if (path.empty() || path.size() >= sizeof(sockaddr_un::sun_path)) {
    return makeError("sandbox proxy: the socket path \"" + path + "\" is empty or longer than " +
                     std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes");
  }
  std::error_code fs_ec;
  const auto status = std::filesystem::symlink_status(path, fs_ec);
  if (std::filesystem::exists(status)) {
    if (!std::filesystem::is_socket(status)) {
      return makeError("sandbox proxy: " + path + " exists and is not a socket; remove it or " +
                       "choose another path");
    }
    std::filesystem::remove(path, fs_ec);  // left by an earlier run that did not stop cleanly
  }
  ErrorCode ec;
  impl->acceptor.open(Local(), ec);
  if (!ec) {
    impl->acceptor.bind(Local::endpoint(path), ec);
  }
  if (!ec) {
    impl->listening = true;
    impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    if (impl->listening) {
      std::filesystem::remove(path, fs_ec);
    }
    return makeError("sandbox proxy: cannot listen on " + path + ": " + ec.message());
  }
  impl->options = std::move(options);
  impl->accept();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] {
    for (;;) {
      try {
        raw->io.run();
        return;
      } catch (...) {  // NOLINT(bugprone-empty-catch): one handler's failure must not end the rest
      }
    }
  });
  return std::make_unique<ConnectProxy>(Private{}, std::move(impl));
}

void ConnectProxy::stop() {
  std::lock_guard lock(impl_->stop_mutex);
  if (impl_->stopped) {
    return;
  }
  impl_->stopped = true;
  if (impl_->thread.joinable()) {
    asio::post(impl_->io, [impl = impl_.get()] { impl->closeAll(); });
    impl_->thread.join();
  }
  if (impl_->listening) {
    std::error_code ignored;
    std::filesystem::remove(impl_->options.socket_path, ignored);
  }
}

ConnectProxy::Counts ConnectProxy::counts() const {
  return Counts{impl_->allowed.load(std::memory_order_relaxed),
                impl_->denied.load(std::memory_order_relaxed),
                impl_->failed.load(std::memory_order_relaxed),
                impl_->malformed.load(std::memory_order_relaxed)};
}

const std::string& ConnectProxy::socketPath() const { return impl_->options.socket_path; }

}  // namespace oe::sandbox

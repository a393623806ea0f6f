// The HTTP/1.1 server behind `oe serve`: one I/O thread runs every socket (accept, TLS, reading
// and writing, timeouts), handlers run on a worker pool, and Server-Sent Events streams write
// from a bounded per-subscriber queue. Limits and their answers are in docs/serve.md, "Limits".
#include "oe/httpd/server.hpp"

// clang-format off
// Boost 1.74's asio/awaitable.hpp uses std::exchange without including <utility> (C++20 mode).
#include <utility>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
// clang-format on

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "oe/httpd/target.hpp"
#include "oe/httpd/tokens.hpp"

namespace oe::httpd {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using Tcp = asio::ip::tcp;
using ErrorCode = beast::error_code;

// How long a connection closed after an error answer (413, 431, 400) keeps reading what the
// client still sends, so that closing does not reset the connection before the client has read
// the answer; and how much it reads at most.
constexpr auto kLingerTime = std::chrono::seconds(1);
constexpr size_t kLingerBytes = size_t{4} << 20;
// After an accept fails for want of file descriptors, the next try waits this long instead of
// spinning on the I/O thread.
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);

const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
const char kPing[] = ": ping\n\n";

// Beast 1.74 hands out boost::string_view.
std::string_view view(beast::string_view text) { return {text.data(), text.size()}; }

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && lower(a) == lower(b);
}

// Headers a handler may not set: framing and connection management are the server's, and oe
// never sets cookies (docs/serve.md, "Tokens": no cookies, so no CSRF). Content-Type comes from
// Response::content_type.
bool reservedHeader(std::string_view name) {
  const std::string key = lower(name);
  return key == "content-length" || key == "transfer-encoding" || key == "connection" ||
         key == "keep-alive" || key == "upgrade" || key == "set-cookie" || key == "set-cookie2" ||
         key == "content-type";
}

std::string endpointText(const Tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  const std::string host = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return host + ":" + std::to_string(endpoint.port());
}

// The subscriber side of one SSE response: a byte-capped queue the producer fills from any
// thread and the connection drains on the I/O thread. `wake` posts the drain to the I/O thread;
// it is only called under the mutex and never once the sink is closed, and the server closes
// every sink before its I/O context goes away, so a producer that outlives the server is safe.
class SseSink final : public EventSink {
 public:
  SseSink(size_t cap, std::function<void()> wake) : cap_(cap), wake_(std::move(wake)) {}

  bool push(std::string frame) override {
    std::lock_guard lock(mutex_);
    if (closed_ || finished_) {
      return false;
    }
    if (pending_.size() + in_flight_ + frame.size() > cap_) {
      // Too far behind: drop the subscriber rather than grow or block the producer.
      closed_ = true;
      wakeLocked();
      return false;
    }
    pending_ += frame;
    wakeLocked();
    return true;
  }

  [[nodiscard]] bool open() const override {
    std::lock_guard lock(mutex_);
    return !closed_ && !finished_;
  }

  void finish() override {
    std::lock_guard lock(mutex_);
    if (closed_ || finished_) {
      return;
    }
    finished_ = true;
    wakeLocked();
  }

  struct Taken {
    std::string bytes;
    bool finished = false;
    bool closed = false;
  };
  // [I/O thread] Everything queued, now counted as in flight until written().
  Taken take() {
    std::lock_guard lock(mutex_);
    wake_posted_ = false;
    Taken taken{std::move(pending_), finished_, closed_};
    pending_.clear();
    in_flight_ += taken.bytes.size();
    return taken;
  }
  void written(size_t bytes) {
    std::lock_guard lock(mutex_);
    in_flight_ -= std::min(bytes, in_flight_);
  }
  // [I/O thread] The connection is gone: no more frames, no more wakes.
  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    pending_.clear();
  }

 private:
  void wakeLocked() {
    if (!wake_posted_) {
      wake_posted_ = true;
      wake_();
    }
  }

  mutable std::mutex mutex_;
  const size_t cap_;
  std::function<void()> wake_;
  std::string pending_;
  size_t in_flight_ = 0;
  bool closed_ = false;
  bool finished_ = false;
  bool wake_posted_ = false;
};

class ConnectionBase : public std::enable_shared_from_this<ConnectionBase> {
 public:
  virtual ~ConnectionBase() = default;
  // [I/O thread] Closes the socket at once (stop(), or the end of the connection).
  virtual void close() = 0;
};

class ServerImpl;

template <class Stream>
class Connection final : public ConnectionBase {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  Connection(ServerImpl& server, Stream stream, std::string remote);
  ~Connection() override;

  void start();
  void close() override;

 private:
  auto& lowest() { return beast::get_lowest_layer(stream_); }
  std::shared_ptr<Connection> self() {
    return std::static_pointer_cast<Connection>(shared_from_this());
  }

  void readRequest();
  void readHeader();
  void onHeader(ErrorCode ec);
  void onRequest(ErrorCode ec);
  void readError(ErrorCode ec);
  void respond(Response response);
  void writeResponse(Response response, bool keep_alive, bool linger);
  void endConnection(bool linger);
  void drain();
  void startEvents(Response response);
  void sseWake();
  void schedulePing();
  void logRequest(int status, size_t bytes);

  ServerImpl& server_;
  Stream stream_;
  asio::any_io_executor executor_;
  std::string remote_;
  uint64_t id_ = 0;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  std::string method_;
  std::string log_path_;    // the target without its query, for the access log
  std::string origin_;      // the request's Origin, for CORS
  std::string token_name_;  // the request's token's name, for the access log
  std::chrono::steady_clock::time_point started_;
  bool keep_alive_ = true;
  bool closed_ = false;
  std::array<char, 16384> drain_buffer_{};
  size_t drained_ = 0;
  // Server-Sent Events
  std::shared_ptr<SseSink> sink_;
  std::shared_ptr<EventSource> source_;
  http::response<http::empty_body> sse_header_;
  std::optional<http::response_serializer<http::empty_body>> sse_serializer_;
  std::string sse_out_;
  bool sse_writing_ = false;
  bool sse_counted_ = false;
  asio::steady_timer ping_timer_;
};

class ServerImpl final : public Server {
 public:
  ServerImpl(ServerOptions options, const Router& router, std::optional<TokenTable> tokens,
             std::unique_ptr<ssl::context> tls, ListenAddress address)
      : options_(std::move(options)),
        router_(router),
        tokens_(std::move(tokens)),
        tls_(std::move(tls)),
        address_(std::move(address)),
        acceptor_(io_),
        accept_retry_(io_),
        pool_(std::max(1U, options_.worker_threads)) {}

  ~ServerImpl() override { stop(); }

  Result<void> listen() {
    ErrorCode ec;
    const auto ip = asio::ip::make_address(address_.host, ec);
    const Tcp::endpoint endpoint(ip, address_.port);
    const std::string where = "--listen " + options_.listen + ": ";
    if (ec || acceptor_.open(endpoint.protocol(), ec)) {
      return makeError(where + "cannot open a socket: " + ec.message());
    }
    acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (acceptor_.bind(endpoint, ec)) {
      return makeError(where + "cannot bind: " + ec.message() +
                       " (is another server on that port? pick another with --listen)");
    }
    if (acceptor_.listen(asio::socket_base::max_listen_connections, ec)) {
      return makeError(where + "cannot listen: " + ec.message());
    }
    port_ = acceptor_.local_endpoint(ec).port();
    accept();
    io_thread_ = std::thread([this] { io_.run(); });
    return {};
  }

  [[nodiscard]] uint16_t port() const override { return port_; }

  [[nodiscard]] std::string url() const override {
    const bool v6 = address_.host.find(':') != std::string::npos;
    const std::string host = v6 ? "[" + address_.host + "]" : address_.host;
    return std::string(tls_ ? "https" : "http") + "://" + host + ":" + std::to_string(port_);
  }

  void stop() override {
    if (stopped_.exchange(true)) {
      return;
    }
    if (io_thread_.joinable()) {
      // Every connection's state lives on the I/O thread: close them there, and wait.
      std::promise<void> closed;
      asio::post(io_, [this, &closed] {
        closeAll();
        closed.set_value();
      });
      closed.get_future().wait();
    }
    // Handlers already running finish; queued ones are dropped with their (closed) connection.
    pool_.stop();
    pool_.join();
    work_.reset();
    io_.stop();
    if (io_thread_.joinable()) {
      io_thread_.join();
    }
  }

  // --- used by connections ---

  const ServerOptions& options() const { return options_; }
  asio::thread_pool& pool() { return pool_; }
  bool stopping() const { return stopped_.load(); }

  uint64_t add(const std::shared_ptr<ConnectionBase>& connection) {
    std::lock_guard lock(registry_mutex_);
    const uint64_t id = ++next_id_;
    connections_.emplace(id, connection);
    return id;
  }
  void remove(uint64_t id) {
    std::lock_guard lock(registry_mutex_);
    connections_.erase(id);
  }
  size_t connectionCount() {
    std::lock_guard lock(registry_mutex_);
    return connections_.size();
  }

  // [I/O thread] Whether one more SSE stream may open; counts it when so.
  bool acquireSse() {
    if (sse_streams_ >= options_.max_sse_connections) {
      return false;
    }
    ++sse_streams_;
    return true;
  }
  void releaseSse() { --sse_streams_; }

  // The CORS headers for a request from `origin` (none unless --cors-origin names it).
  void addCors(std::string_view origin, const std::function<void(const char*, std::string)>& set) {
    if (options_.cors_origin.empty() || origin != options_.cors_origin) {
      return;
    }
    set("Access-Control-Allow-Origin", options_.cors_origin);
    set("Vary", "Origin");
    set("Access-Control-Expose-Headers", "Mcp-Session-Id, Location, Retry-After");
  }

  // [worker] Everything between a parsed request and its response: CORS preflight, the Host
  // check, routing, the token and its scope, the handler.
  Response dispatch(Request& request);

  void log(const std::string& line) {
    const std::string text = "oe serve: " + line + "\n";
    std::lock_guard lock(log_mutex_);
    std::fwrite(text.data(), 1, text.size(), stderr);
  }

 private:
  void accept();
  template <class Stream>
  void launch(Stream stream, std::string remote);

  void closeAll() {
    ErrorCode ec;
    acceptor_.close(ec);
    accept_retry_.cancel();
    std::vector<std::weak_ptr<ConnectionBase>> all;
    {
      std::lock_guard lock(registry_mutex_);
      for (const auto& [id, connection] : connections_) {
        all.push_back(connection);
      }
    }
    for (const auto& weak : all) {
      if (auto connection = weak.lock()) {
        connection->close();
      }
    }
  }

  ServerOptions options_;
  const Router& router_;
  std::optional<TokenTable> tokens_;
  std::unique_ptr<ssl::context> tls_;
  ListenAddress address_;
  uint16_t port_ = 0;
  std::atomic<bool> stopped_{false};
  std::mutex log_mutex_;

  // Declared before the I/O context: connections leave the registry in their destructors, the
  // last of which may run while the context is destroyed.
  std::mutex registry_mutex_;
  std::unordered_map<uint64_t, std::weak_ptr<ConnectionBase>> connections_;
  uint64_t next_id_ = 0;
  size_t sse_streams_ = 0;  // I/O thread only

  asio::io_context io_;
  // Keeps io_.run() going until stop(), whatever is pending.
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  Tcp::acceptor acceptor_;
  asio::steady_timer accept_retry_;
  asio::thread_pool pool_;
  std::thread io_thread_;
};

// --- Connection ---

template <class Stream>
Connection<Stream>::Connection(ServerImpl& server, Stream stream, std::string remote)
    : server_(server),
      stream_(std::move(stream)),
      executor_(stream_.get_executor()),
      remote_(std::move(remote)),
      ping_timer_(executor_) {}

template <class Stream>
Connection<Stream>::~Connection() {
  if (sink_) {
    sink_->close();
  }
  server_.remove(id_);
}

template <class Stream>
void Connection<Stream>::start() {
  id_ = server_.add(shared_from_this());
  if constexpr (kTls) {
    lowest().expires_after(server_.options().request_timeout);
    stream_.async_handshake(ssl::stream_base::server, [self = self()](ErrorCode ec) {
      if (ec) {
        self->close();
        return;
      }
      self->readRequest();
    });
  } else {
    readRequest();
  }
}

template <class Stream>
void Connection<Stream>::close() {
  if (closed_) {
    return;
  }
  closed_ = true;
  ping_timer_.cancel();
  if (sink_) {
    sink_->close();
  }
  if (sse_counted_) {
    sse_counted_ = false;
    server_.releaseSse();
  }
  ErrorCode ec;
  lowest().socket().shutdown(Tcp::socket::shutdown_both, ec);
  lowest().close();
}

template <class Stream>
void Connection<Stream>::readRequest() {
  if (closed_) {
    return;
  }
  parser_.emplace();
  method_.clear();  // an error answered before this request's head is read is not a HEAD's
  parser_->header_limit(static_cast<uint32_t>(server_.options().max_header_bytes));
  parser_->body_limit(server_.options().max_body_bytes);
  if (buffer_.size() > 0) {
    readHeader();
    return;
  }
  // Between requests only the idle timeout runs; the request timeout starts with its first byte.
  lowest().expires_after(server_.options().idle_timeout);
  stream_.async_read_some(buffer_.prepare(4096), [self = self()](ErrorCode ec, size_t bytes) {
    self->buffer_.commit(bytes);
    if (ec) {
      self->close();
      return;
    }
    self->readHeader();
  });
}

template <class Stream>
void Connection<Stream>::readHeader() {
  started_ = std::chrono::steady_clock::now();
  // One deadline for the whole request, head and body: a client sending a byte at a time is
  // cut off at request_timeout however it spreads them.
  lowest().expires_after(server_.options().request_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = self()](ErrorCode ec, size_t) { self->onHeader(ec); });
}

template <class Stream>
void Connection<Stream>::readError(ErrorCode ec) {
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
    writeResponse(problem(431, "headers-too-large", "Request headers too large",
                          "The request's headers exceed " +
                              std::to_string(server_.options().max_header_bytes) +
                              " bytes; send fewer or shorter headers."),
                  false, true);
  } else if (ec == http::error::body_limit) {
    writeResponse(
        problem(413, "body-too-large", "Request body too large",
                "The request's body exceeds " + std::to_string(server_.options().max_body_bytes) +
                    " bytes; send a smaller one."),
        false, true);
  } else if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
             ec != http::error::end_of_stream && ec != http::error::partial_message) {
    writeResponse(problem(400, "bad-request", "Malformed request",
                          "The request is not valid HTTP/1.1 (" + ec.message() + ")."),
                  false, true);
  } else {
    // The client left, or was too slow (the stream closed itself on the timeout).
    close();
  }
}

template <class Stream>
void Connection<Stream>::onHeader(ErrorCode ec) {
  if (ec) {
    readError(ec);
    return;
  }
  const auto length = parser_->content_length();
  if (length && *length > server_.options().max_body_bytes) {
    // Refused from the head: the body is never read into memory.
    readError(http::error::body_limit);
    return;
  }
  if (parser_->is_done()) {
    onRequest({});
    return;
  }
  const auto read_body = [self = self()] {
    http::async_read(self->stream_, self->buffer_, *self->parser_,
                     [self](ErrorCode error, size_t) { self->onRequest(error); });
  };
  const auto expect = view(parser_->get()[http::field::expect]);
  if (iequals(expect, "100-continue")) {
    asio::async_write(stream_, asio::buffer(kContinue, sizeof(kContinue) - 1),
                      [self = self(), read_body](ErrorCode error, size_t) {
                        if (error) {
                          self->close();
                          return;
                        }
                        read_body();
                      });
    return;
  }
  read_body();
}

template <class Stream>
void Connection<Stream>::onRequest(ErrorCode ec) {
  if (ec) {
    readError(ec);
    return;
  }
  auto& message = parser_->get();
  Request request;
  request.method = std::string(view(message.method_string()));
  request.target = std::string(view(message.target()));
  request.remote = remote_;
  method_ = request.method;
  log_path_ = request.target.substr(0, request.target.find('?'));
  keep_alive_ = message.keep_alive();
  origin_.clear();
  token_name_.clear();
  for (const auto& field : message) {
    request.headers.emplace_back(lower(view(field.name_string())),
                                 std::string(view(field.value())));
    if (request.headers.back().first == "origin" && origin_.empty()) {
      origin_ = request.headers.back().second;
    }
  }
  request.body = std::move(message.body());
  parser_.reset();
  auto decoded = decodeTarget(request.target);
  if (!decoded) {
    respond(problem(400, "bad-target", "Malformed request target",
                    "The request target could not be read: " + decoded.error().message +
                        "; percent-encode the path and query."));
    return;
  }
  request.path = std::move(decoded->path);
  request.query = std::move(decoded->query);
  if (server_.stopping()) {
    close();
    return;
  }
  // The handler runs on the worker pool; its answer comes back to the I/O thread to be written.
  asio::post(server_.pool(), [self = self(), request = std::move(request)]() mutable {
    Response response;
    try {
      response = self->server_.dispatch(request);
    } catch (...) {
      response = problem(500, "internal", "Internal server error",
                         "The server could not answer; its log says why.");
    }
    auto executor = self->executor_;
    asio::post(executor, [self = std::move(self), response = std::move(response),
                          token_name = std::move(request.token_name)]() mutable {
      self->token_name_ = std::move(token_name);
      self->respond(std::move(response));
    });
  });
}

template <class Stream>
void Connection<Stream>::respond(Response response) {
  if (closed_) {
    return;
  }
  if (response.events && method_ == "HEAD") {
    Response head;
    head.status = response.status;
    head.content_type = "text/event-stream";
    writeResponse(std::move(head), keep_alive_, false);
    return;
  }
  if (response.events) {
    if (!server_.acquireSse()) {
      writeResponse(problem(503, "too-many-streams", "Too many event streams",
                            "The server already serves " +
                                std::to_string(server_.options().max_sse_connections) +
                                " event streams; retry later or close another."),
                    keep_alive_, false);
      return;
    }
    sse_counted_ = true;
    startEvents(std::move(response));
    return;
  }
  writeResponse(std::move(response), keep_alive_, false);
}

template <class Stream>
void Connection<Stream>::writeResponse(Response response, bool keep_alive, bool linger) {
  if (closed_) {
    return;
  }
  response_ = {};
  response_.version(11);
  response_.result(static_cast<unsigned>(response.status));
  if (!response.content_type.empty()) {
    response_.set(http::field::content_type, response.content_type);
  }
  bool cache_set = false;
  for (const auto& [name, value] : response.headers) {
    if (reservedHeader(name)) {
      continue;
    }
    cache_set = cache_set || iequals(name, "cache-control");
    response_.insert(name, value);
  }
  if (!cache_set) {
    response_.set(http::field::cache_control, "no-store");
  }
  response_.set("X-Content-Type-Options", "nosniff");
  server_.addCors(origin_, [this](const char* name, std::string value) {
    response_.set(name, std::move(value));
  });
  response_.body() = std::move(response.body);
  response_.keep_alive(keep_alive);
  response_.prepare_payload();
  const size_t bytes = response_.body().size();
  if (method_ == "HEAD") {
    response_.body().clear();  // Content-Length stays the GET's
  }
  logRequest(response.status, bytes);
  lowest().expires_after(server_.options().idle_timeout);
  http::async_write(stream_, response_, [self = self(), keep_alive, linger](ErrorCode ec, size_t) {
    if (ec) {
      self->close();
      return;
    }
    if (keep_alive) {
      self->readRequest();
    } else {
      self->endConnection(linger);
    }
  });
}

template <class Stream>
void Connection<Stream>::endConnection(bool linger) {
  if (closed_) {
    return;
  }
  if constexpr (kTls) {
    (void)linger;
    lowest().expires_after(kLingerTime);
    stream_.async_shutdown([self = self()](ErrorCode) { self->close(); });
  } else {
    ErrorCode ec;
    lowest().socket().shutdown(Tcp::socket::shutdown_send, ec);
    if (!linger || ec) {
      close();
      return;
    }
    drained_ = 0;
    lowest().expires_after(kLingerTime);
    drain();
  }
}

template <class Stream>
void Connection<Stream>::drain() {
  // Read and drop what the client still sends (the body of a refused request) until it closes,
  // the linger time ends or kLingerBytes were read: closing with unread data would reset the
  // connection, and the client could lose the answer it has not read yet.
  stream_.async_read_some(asio::buffer(drain_buffer_), [self = self()](ErrorCode ec, size_t n) {
    self->drained_ += n;
    if (ec || self->drained_ >= kLingerBytes) {
      self->close();
      return;
    }
    self->drain();
  });
}

template <class Stream>
void Connection<Stream>::startEvents(Response response) {
  source_ = std::move(response.events);
  std::weak_ptr<Connection> weak = self();
  auto executor = executor_;
  sink_ = std::make_shared<SseSink>(server_.options().max_sse_queue_bytes, [weak, executor] {
    asio::post(executor, [weak] {
      if (auto connection = weak.lock()) {
        connection->sseWake();
      }
    });
  });
  sse_header_ = {};
  sse_header_.version(11);
  sse_header_.result(static_cast<unsigned>(response.status));
  for (const auto& [name, value] : response.headers) {
    if (!reservedHeader(name) && !iequals(name, "cache-control")) {
      sse_header_.insert(name, value);
    }
  }
  sse_header_.set(http::field::content_type, "text/event-stream");
  sse_header_.set(http::field::cache_control, "no-store");
  sse_header_.set("X-Accel-Buffering", "no");  // nginx: pass each frame on at once
  sse_header_.set("X-Content-Type-Options", "nosniff");
  server_.addCors(origin_, [this](const char* name, std::string value) {
    sse_header_.set(name, std::move(value));
  });
  // The stream ends with the connection: a client reconnects with Last-Event-ID.
  sse_header_.keep_alive(false);
  sse_header_.chunked(true);
  sse_serializer_.emplace(sse_header_);
  logRequest(response.status, 0);
  lowest().expires_after(server_.options().idle_timeout);
  http::async_write_header(stream_, *sse_serializer_, [self = self()](ErrorCode ec, size_t) {
    if (ec) {
      self->close();
      return;
    }
    // Nothing is read while streaming (a client sends nothing more); a client that left is
    // noticed by the next write, at the latest the next ping's.
    self->lowest().expires_never();
    asio::post(self->server_.pool(),
               [source = self->source_, sink = self->sink_, server = &self->server_] {
                 try {
                   source->start(sink);
                 } catch (const std::exception& error) {
                   server->log(std::string("an event stream failed to start: ") + error.what());
                   sink->finish();
                 } catch (...) {
                   sink->finish();
                 }
               });
    self->schedulePing();
    self->sseWake();
  });
}

template <class Stream>
void Connection<Stream>::schedulePing() {
  ping_timer_.expires_after(server_.options().sse_ping_interval);
  // The pending wait holds the connection: while it streams nothing else may (it reads nothing
  // and writes only when there are frames). close() cancels the wait, which lets it go.
  ping_timer_.async_wait([self = self()](ErrorCode ec) {
    if (ec || self->closed_) {
      return;
    }
    self->sink_->push(kPing);
    self->schedulePing();
  });
}

template <class Stream>
void Connection<Stream>::sseWake() {
  if (closed_ || sse_writing_ || !sse_serializer_ || !sse_serializer_->is_header_done()) {
    return;
  }
  auto taken = sink_->take();
  if (taken.closed) {
    close();
    return;
  }
  if (taken.bytes.empty()) {
    if (taken.finished) {
      sse_writing_ = true;
      lowest().expires_after(server_.options().idle_timeout);
      asio::async_write(stream_, http::make_chunk_last(), [self = self()](ErrorCode ec, size_t) {
        self->sse_writing_ = false;
        if (ec) {
          self->close();
          return;
        }
        self->endConnection(false);
      });
    }
    return;
  }
  sse_out_ = std::move(taken.bytes);
  sse_writing_ = true;
  // A client that reads nothing for idle_timeout is dropped even when it stays under the cap.
  lowest().expires_after(server_.options().idle_timeout);
  asio::async_write(stream_, http::make_chunk(asio::buffer(sse_out_)),
                    [self = self()](ErrorCode ec, size_t) {
                      self->sse_writing_ = false;
                      self->sink_->written(self->sse_out_.size());
                      self->sse_out_.clear();
                      if (ec) {
                        self->close();
                        return;
                      }
                      self->lowest().expires_never();
                      self->sseWake();
                    });
}

template <class Stream>
void Connection<Stream>::logRequest(int status, size_t bytes) {
  if (!server_.options().access_log) {
    return;
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - started_)
                      .count();
  server_.log(remote_ + " \"" + method_ + " " + log_path_ + "\" " + std::to_string(status) + " " +
              std::to_string(bytes) + " " + std::to_string(ms) + "ms" +
              (token_name_.empty() ? "" : " token=" + token_name_));
}

// --- ServerImpl ---

void ServerImpl::accept() {
  acceptor_.async_accept([this](ErrorCode ec, Tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) {
      return;
    }
    if (ec) {
      // Out of file descriptors (or a transient error): wait instead of spinning, so that the
      // connections already open keep being served.
      accept_retry_.expires_after(kAcceptRetry);
      accept_retry_.async_wait([this](ErrorCode error) {
        if (!error) {
          accept();
        }
      });
      return;
    }
    if (connectionCount() >= options_.max_connections) {
      // Over the limit: refused at once, so that it costs the open ones nothing.
      ErrorCode ignored;
      socket.close(ignored);
    } else {
      ErrorCode ignored;
      std::string remote = endpointText(socket.remote_endpoint(ignored));
      if (tls_) {
        launch(beast::ssl_stream<beast::tcp_stream>(std::move(socket), *tls_), std::move(remote));
      } else {
        launch(beast::tcp_stream(std::move(socket)), std::move(remote));
      }
    }
    accept();
  });
}

template <class Stream>
void ServerImpl::launch(Stream stream, std::string remote) {
  auto connection =
      std::make_shared<Connection<Stream>>(*this, std::move(stream), std::move(remote));
  connection->start();
}

Response ServerImpl::dispatch(Request& request) {
  if (!tokens_) {
    const auto host = request.header("host");
    if (!host || !isLoopbackHost(*host)) {
      return problem(403, "host-not-allowed", "Host not allowed",
                     "Without --token-file this server answers only requests addressed to "
                     "localhost, 127.0.0.1 or [::1]; use one of those in the URL.");
    }
  }
  const auto origin = request.header("origin");
  if (request.method == "OPTIONS" && origin && request.header("access-control-request-method") &&
      !options_.cors_origin.empty()) {
    if (*origin != options_.cors_origin) {
      return problem(403, "cors-origin", "Origin not allowed",
                     "This server answers cross-origin requests only from --cors-origin.");
    }
    // A preflight carries no token: it only asks what the real request may send.
    Response preflight;
    preflight.status = 204;
    preflight.content_type.clear();
    preflight.headers = {
        {"Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE"},
        {"Access-Control-Allow-Headers",
         "Authorization, Content-Type, Last-Event-ID, Mcp-Session-Id, Mcp-Protocol-Version"},
        {"Access-Control-Max-Age", "600"}};
    return preflight;
  }
  // HEAD is GET without the body (RFC 9110 9.3.2): the GET handler answers, the connection
  // writes only the head.
  if (request.method == "HEAD") {
    request.method = "GET";
  }
  // The path as sent: the router splits it before decoding each segment (router.hpp).
  const auto match =
      router_.match(request.method, std::string_view(request.target).substr(0, request.target.find('?')));
  if (match.route == nullptr) {
    if (!match.allowed_methods.empty()) {
      std::string allow;
      for (const auto& method : match.allowed_methods) {
        allow.append(allow.empty() ? "" : ", ").append(method);
        if (method == "GET") {
          allow.append(", HEAD");
        }
      }
      Response response = problem(405, "method-not-allowed", "Method not allowed",
                                  request.method + " is not allowed here; use " + allow + ".");
      response.headers.emplace_back("Allow", allow);
      return response;
    }
    return problem(404, "not-found", "Not found",
                   "No route answers this path; GET /api/openapi.json lists them.");
  }
  const Route& route = *match.route;
  request.params = match.params;
  if (!tokens_) {
    request.granted = Scope::kAdmin;
  } else {
    const auto authorization = request.header("authorization");
    const Token* token = nullptr;
    if (authorization && authorization->size() > 7 &&
        iequals(authorization->substr(0, 7), "bearer ")) {
      std::string_view presented = authorization->substr(7);
      while (!presented.empty() && presented.front() == ' ') {
        presented.remove_prefix(1);
      }
      token = tokens_->find(presented);
    }
    if (token != nullptr) {
      request.granted = token->scope;
      request.token_name = token->name;
    }
    if (route.scope != Scope::kPublic) {
      if (token == nullptr) {
        const bool sent = authorization.has_value();
        Response response =
            problem(401, "unauthorized", "Unauthorized",
                    sent ? "The bearer token is not one of --token-file's; check it."
                         : "This route needs a token: send `Authorization: Bearer <token>`.");
        response.headers.emplace_back(
            "WWW-Authenticate",
            sent ? R"(Bearer realm="oe", error="invalid_token")" : R"(Bearer realm="oe")");
        return response;
      }
      if (static_cast<int>(token->scope) < static_cast<int>(route.scope)) {
        Response response = problem(
            403, "forbidden", "Forbidden",
            "The token '" + token->name + "' has the " + std::string(scopeName(token->scope)) +
                " scope; this route needs " + std::string(scopeName(route.scope)) + ".");
        response.headers.emplace_back("WWW-Authenticate",
                                      R"(Bearer realm="oe", error="insufficient_scope")");
        return response;
      }
    }
  }
  try {
    return route.handler(request);
  } catch (const std::exception& error) {
    log(request.method + " " + request.path + ": the handler failed: " + error.what());
  } catch (...) {
    log(request.method + " " + request.path + ": the handler failed");
  }
  // The reason stays in the server's log: it may name files or data the caller may not see.
  return problem(500, "internal", "Internal server error",
                 "The server failed to answer this request; its log says why.");
}

Result<std::unique_ptr<ssl::context>> tlsContext(const std::filesystem::path& cert,
                                                 const std::filesystem::path& key) {
  auto context = std::make_unique<ssl::context>(ssl::context::tls_server);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                       ssl::context::single_dh_use);
  if (SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION) != 1) {
    return makeError("OpenSSL refused TLS 1.2 as the minimum version");
  }
  ErrorCode ec;
  context->use_certificate_chain_file(cert.string(), ec);
  if (ec) {
    return makeError("--tls-cert " + cert.string() +
                     ": not a readable PEM certificate (chain): " + ec.message());
  }
  context->use_private_key_file(key.string(), ssl::context::pem, ec);
  if (ec && ec.category() == asio::error::get_ssl_category() &&
      ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH) {
    return makeError("--tls-key " + key.string() + " does not match --tls-cert " + cert.string() +
                     ": give the key the certificate was made for");
  }
  if (ec) {
    return makeError("--tls-key " + key.string() +
                     ": not a readable PEM private key: " + ec.message());
  }
  if (SSL_CTX_check_private_key(context->native_handle()) != 1) {
    return makeError("--tls-key " + key.string() + " does not match --tls-cert " + cert.string() +
                     ": give the key the certificate was made for");
  }
  return context;
}

}  // namespace

Result<std::unique_ptr<Server>> Server::start(ServerOptions options, const Router& router) {
  auto address = parseListenAddress(options.listen);
  if (!address) {
    return address.error();
  }
  if (options.tls_cert.has_value() != options.tls_key.has_value()) {
    return makeError("--tls-cert and --tls-key go together: give both, or neither");
  }
  const bool tls = options.tls_cert.has_value();
  if (tls && options.insecure_http) {
    return makeError("--insecure-http with --tls-cert: choose one (TLS, or plain HTTP on purpose)");
  }
  if (!address->loopback) {
    if (!options.token_file) {
      return makeError("--listen " + options.listen +
                       " is not a loopback address: other machines could reach it, so it needs "
                       "--token-file FILE (and TLS); or listen on 127.0.0.1");
    }
    if (!tls && !options.insecure_http) {
      return makeError("--listen " + options.listen +
                       " is not a loopback address: give --tls-cert and --tls-key, or "
                       "--insecure-http when a TLS proxy in front of oe terminates TLS");
    }
  }
  if (options.max_connections == 0 || options.max_body_bytes == 0 ||
      options.max_header_bytes == 0 || options.max_sse_queue_bytes == 0) {
    return makeError("the server's limits must be positive");
  }
  std::optional<TokenTable> tokens;
  if (options.token_file) {
    auto loaded = TokenTable::load(*options.token_file);
    if (!loaded) {
      return loaded.error();
    }
    tokens = std::move(*loaded);
  }
  std::unique_ptr<ssl::context> context;
  if (tls) {
    auto made = tlsContext(*options.tls_cert, *options.tls_key);
    if (!made) {
      return made.error();
    }
    context = std::move(*made);
  }
  auto server = std::make_unique<ServerImpl>(std::move(options), router, std::move(tokens),
                                             std::move(context), std::move(*address));
  auto listening = server->listen();
  if (!listening) {
    return listening.error();
  }
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace oe::httpd

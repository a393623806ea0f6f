#include "oe/service/mcp_http.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>

#include "oe/mcp/framing.hpp"

namespace oe::service {

namespace {

using httpd::problem;
using httpd::Request;
using httpd::Response;

std::string newSessionId() {
  // libstdc++'s random_device reads the kernel's generator: 128 unpredictable bits.
  std::random_device random;
  static const char kHex[] = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 4; ++i) {
    uint32_t word = random();
    for (int j = 0; j < 8; ++j) {
      id.push_back(kHex[word & 15U]);
      word >>= 4U;
    }
  }
  return id;
}

// The SSE response of one POSTed request: the progress notifications for it and its answer.
// The server may answer before the stream has started (most answers are written inline), so
// frames wait here until start().
class PendingAnswer final : public httpd::EventSource {
 public:
  void start(std::shared_ptr<httpd::EventSink> sink) override {
    std::lock_guard lock(mutex_);
    sink_ = std::move(sink);
    for (auto& frame : early_) {
      sink_->push(std::move(frame));
    }
    early_.clear();
    if (done_) {
      sink_->finish();
    }
  }

  void deliver(std::string frame, bool last) {
    std::lock_guard lock(mutex_);
    done_ = done_ || last;
    if (sink_) {
      sink_->push(std::move(frame));
      if (last) {
        sink_->finish();
      }
    } else {
      early_.push_back(std::move(frame));
    }
  }

  // The session ended before the answer came.
  void end() {
    std::lock_guard lock(mutex_);
    done_ = true;
    if (sink_) {
      sink_->finish();
    }
  }

 private:
  std::mutex mutex_;
  std::shared_ptr<httpd::EventSink> sink_;
  std::vector<std::string> early_;
  bool done_ = false;
};

// One MCP session: an mcp::Server whose LineWriter writes into a pipe, and a thread that reads
// the pipe and hands each message to the stream of the request it answers.
class Session {
 public:
  Session(std::string id, std::string token_name, const McpHttpOptions& options)
      : id_(std::move(id)), token_name_(std::move(token_name)) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      throw std::runtime_error("cannot create a pipe for an MCP session");
    }
    read_fd_ = fds[0];
    write_fd_ = fds[1];
    out_ = std::make_unique<mcp::LineWriter>(write_fd_);
    server_ = std::make_unique<mcp::Server>(
        options.info, options.tools ? options.tools() : std::vector<mcp::Tool>{},
        options.resources ? options.resources() : mcp::Resources{}, *out_);
    reader_ = std::thread([this] { readLoop(); });
  }
  ~Session() { close(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  [[nodiscard]] const std::string& id() const { return id_; }
  [[nodiscard]] const std::string& tokenName() const { return token_name_; }

  // [under McpHttp's mutex] When it was last used, and whether a request awaits its answer.
  void touch() { last_used_ = std::chrono::steady_clock::now(); }
  [[nodiscard]] std::chrono::steady_clock::time_point lastUsed() const { return last_used_; }
  [[nodiscard]] bool busy() {
    std::lock_guard lock(mutex_);
    return !pending_.empty();
  }

  // Registers the stream for request `id_key` (its id's JSON text) and the progress token it
  // carries, before the message is handled.
  void expect(const std::string& id_key, const std::optional<std::string>& progress_key,
              std::shared_ptr<PendingAnswer> pending) {
    std::lock_guard lock(mutex_);
    if (progress_key) {
      progress_[*progress_key] = id_key;
    }
    pending_[id_key] = std::move(pending);
  }

  // mcp::Server reads its lines from one thread: requests of one session are fed one at a time.
  void handle(const std::string& line) {
    std::lock_guard lock(handle_mutex_);
    if (server_) {
      server_->handleLine(line);
    }
  }

  // Cancels the calls in flight, waits for them, ends every stream. Idempotent.
  void close() {
    std::call_once(closed_, [this] {
      {
        std::lock_guard lock(handle_mutex_);
        server_->shutdown();
        server_.reset();
        out_.reset();
      }
      ::close(write_fd_);
      reader_.join();
      ::close(read_fd_);
      std::lock_guard lock(mutex_);
      for (auto& [key, pending] : pending_) {
        pending->end();
      }
      pending_.clear();
    });
  }

 private:
  void readLoop() {
    mcp::LineReader in(read_fd_);
    bool overlong = false;
    while (auto line = in.next(overlong)) {
      route(*line);
    }
  }

  void route(const std::string& line) {
    const Json message = Json::parse(line, nullptr, false);
    if (!message.is_object()) {
      return;
    }
    std::string frame = httpd::sseFrame("", "message", line);
    std::lock_guard lock(mutex_);
    if (message.contains("id") && !message.contains("method")) {
      const auto it = pending_.find(message["id"].dump());
      if (it != pending_.end()) {
        it->second->deliver(std::move(frame), true);
        for (auto p = progress_.begin(); p != progress_.end();) {
          p = p->second == it->first ? progress_.erase(p) : std::next(p);
        }
        pending_.erase(it);
      }
      return;
    }
    if (message.value("method", "") == "notifications/progress" && message.contains("params") &&
        message["params"].is_object() && message["params"].contains("progressToken")) {
      const auto token = progress_.find(message["params"]["progressToken"].dump());
      if (token != progress_.end()) {
        const auto it = pending_.find(token->second);
        if (it != pending_.end()) {
          it->second->deliver(std::move(frame), false);
        }
      }
    }
    // Other server-initiated messages would go on a GET stream, which this server does not
    // offer (GET /mcp is 405, as the transport allows): oe's MCP server sends none.
  }

  std::string id_;
  std::string token_name_;
  int read_fd_ = -1;
  int write_fd_ = -1;
  std::mutex handle_mutex_;
  std::unique_ptr<mcp::LineWriter> out_;
  std::unique_ptr<mcp::Server> server_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<PendingAnswer>> pending_;  // by request id
  std::map<std::string, std::string> progress_;                    // progress token -> request id
  std::thread reader_;
  std::once_flag closed_;
  std::chrono::steady_clock::time_point last_used_ = std::chrono::steady_clock::now();
};

class McpHttp {
 public:
  explicit McpHttp(McpHttpOptions options) : options_(std::move(options)) {}
  ~McpHttp() {
    std::map<std::string, std::shared_ptr<Session>> sessions;
    {
      std::lock_guard lock(mutex_);
      sessions.swap(sessions_);
    }
    for (auto& [id, session] : sessions) {
      session->close();
    }
  }
  McpHttp(const McpHttp&) = delete;
  McpHttp& operator=(const McpHttp&) = delete;

  Response post(const Request& request) {
    const Json message = Json::parse(request.body, nullptr, false);
    if (!message.is_object() || !message.contains("jsonrpc")) {
      return problem(400, "mcp-bad-message", "Not a JSON-RPC message",
                     "POST /mcp takes one JSON-RPC 2.0 message (an object); batches are not "
                     "supported.");
    }
    const std::string method = message.contains("method") && message["method"].is_string()
                                   ? message["method"].get<std::string>()
                                   : std::string();
    const bool is_request = !method.empty() && message.contains("id");
    std::shared_ptr<Session> session;
    if (method == "initialize" && is_request) {
      std::shared_ptr<Session> evicted;
      std::lock_guard lock(mutex_);
      if (sessions_.size() >= options_.max_sessions) {
        evicted = evictIdleLocked();
        if (!evicted) {
          return problem(503, "mcp-too-many-sessions", "Too many MCP sessions",
                         "End a session (DELETE /mcp with its Mcp-Session-Id) or retry later.");
        }
      }
      const std::string id = newSessionId();
      session = std::make_shared<Session>(id, request.token_name, options_);
      sessions_[id] = session;
      if (evicted) {
        evicted->close();  // idle, nothing in flight: closes at once
      }
    } else {
      auto found = find(request);
      if (!found) {
        return found.error();
      }
      session = std::move(*found);
    }
    if (method == "tools/call" && request.granted != httpd::Scope::kAdmin &&
        message.contains("params") && message["params"].is_object()) {
      const std::string tool = message["params"].value("name", "");
      if (options_.admin_tools.count(tool) != 0) {
        return problem(403, "forbidden", "Forbidden",
                       "The tool " + tool + " starts or changes runs: it needs an admin token.");
      }
    }
    const std::string line = message.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (!is_request) {
      // A notification or a response to the server: nothing comes back for it.
      session->handle(line);
      Response accepted;
      accepted.status = 202;
      accepted.content_type.clear();
      return accepted;
    }
    std::optional<std::string> progress_key;
    if (message.contains("params") && message["params"].is_object()) {
      const Json& params = message["params"];
      if (params.contains("_meta") && params["_meta"].is_object() &&
          params["_meta"].contains("progressToken")) {
        progress_key = params["_meta"]["progressToken"].dump();
      }
    }
    auto pending = std::make_shared<PendingAnswer>();
    session->expect(message["id"].dump(), progress_key, pending);
    session->handle(line);
    Response response;
    response.events = pending;
    if (method == "initialize") {
      response.headers.emplace_back("Mcp-Session-Id", session->id());
    }
    return response;
  }

  Response remove(const Request& request) {
    auto found = find(request);
    if (!found) {
      return found.error();
    }
    {
      std::lock_guard lock(mutex_);
      sessions_.erase((*found)->id());
    }
    (*found)->close();
    Response response;
    response.status = 204;
    response.content_type.clear();
    return response;
  }

 private:
  // The session a request names; a session is only reachable with the token that opened it.
  class Found {
   public:
    Found(std::shared_ptr<Session> session) : session_(std::move(session)) {}  // NOLINT
    Found(Response error) : error_(std::move(error)) {}                        // NOLINT
    explicit operator bool() const { return session_ != nullptr; }
    std::shared_ptr<Session>& operator*() { return session_; }
    [[nodiscard]] Response error() const { return error_; }

   private:
    std::shared_ptr<Session> session_;
    Response error_;
  };

  Found find(const Request& request) {
    const auto header = request.header("mcp-session-id");
    if (!header) {
      return problem(400, "mcp-session-required", "No MCP session",
                     "Send the Mcp-Session-Id header of the initialize response, or initialize.");
    }
    std::lock_guard lock(mutex_);
    const auto it = sessions_.find(std::string(*header));
    if (it == sessions_.end() || it->second->tokenName() != request.token_name) {
      return problem(404, "mcp-session-not-found", "MCP session not found",
                     "The session ended or never existed: initialize a new one.");
    }
    it->second->touch();
    return it->second;
  }

  // Takes the least recently used session out of the table when it is idle enough and has no
  // request in flight; its client gets 404 next time and initializes again.
  std::shared_ptr<Session> evictIdleLocked() {
    const auto now = std::chrono::steady_clock::now();
    auto oldest = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (now - it->second->lastUsed() >= options_.session_idle && !it->second->busy() &&
          (oldest == sessions_.end() || it->second->lastUsed() < oldest->second->lastUsed())) {
        oldest = it;
      }
    }
    if (oldest == sessions_.end()) {
      return nullptr;
    }
    auto session = oldest->second;
    sessions_.erase(oldest);
    return session;
  }

  McpHttpOptions options_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;
};

}  // namespace

void addMcpRoutes(httpd::Router& router, McpHttpOptions options) {
  auto mcp = std::make_shared<McpHttp>(std::move(options));
  router.add("POST", "/mcp", httpd::Scope::kRead,
             [mcp](const Request& request) { return mcp->post(request); });
  router.add("DELETE", "/mcp", httpd::Scope::kRead,
             [mcp](const Request& request) { return mcp->remove(request); });
  // The transport lets a server offer no stream of its own: 405 tells the client so.
  router.add("GET", "/mcp", httpd::Scope::kRead, [](const Request&) {
    Response response = problem(405, "method-not-allowed", "Method not allowed",
                                "This server sends every message on the stream of the request "
                                "it answers; there is no GET stream.");
    response.headers.emplace_back("Allow", "POST, DELETE");
    return response;
  });
}

}  // namespace oe::service

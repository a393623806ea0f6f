// A real HTTP/1.1 server on 127.0.0.1:<ephemeral port> standing in for an LLM provider: it answers
// from a script (or a handler), records every request, and can misbehave on purpose (429 with
// Retry-After, 500, stalls, malformed JSON, overload above K requests in flight). An answer can be
// held until N requests arrived or M answers were sent, which orders clients without sleeps.
// Builders below produce OpenAI chat-completions and Anthropic Messages response bodies.
//
// Threading: one Boost.Asio thread serves every connection; handlers run on it. Test code may call
// any public member from any thread. Framing: Content-Length only, keep-alive honoured.
#pragma once

// clang-format off
// Boost 1.74's asio/awaitable.hpp uses std::exchange without including <utility> (C++20 mode).
#include <utility>
#include <boost/asio.hpp>
// clang-format on

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace oe::test {

struct RecordedRequest {
  std::string method;
  std::string path;  // request target as sent, e.g. "/v1/chat/completions"
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  int connection = 0;  // 1-based id of the TCP connection it came on (keep-alive checks)
  std::chrono::steady_clock::time_point received;

  [[nodiscard]] std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string{} : it->second;
  }
  // The body parsed as JSON (discarded value when it is not JSON).
  [[nodiscard]] nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
};

struct FakeResponse {
  enum class Stall {
    kNone,
    kBeforeHeaders,  // read the request, then send nothing at all
    kAfterHeaders,   // send the status line and headers (with a Content-Length), then nothing
  };
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // added to Content-Length/-Type
  std::string body;
  std::string content_type = "application/json";
  std::chrono::milliseconds delay{0};  // wait this long before answering (request stays in flight)
  // Hold the answer (request in flight) until at least this many requests have arrived, then
  // apply `delay`. A count, not a clock: it makes overlap between clients certain, not likely.
  size_t until_requests = 0;
  // ... and until at least this many answers were sent (an order between answers, no sleeps).
  size_t until_answers = 0;
  Stall stall = Stall::kNone;          // a stalled connection stays open until the client leaves
  bool close = false;                  // close the connection after this response
};

class FakeLlmServer {
 public:
  using Handler = std::function<FakeResponse(const RecordedRequest&)>;

  FakeLlmServer()
      : acceptor_(io_,
                  boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~FakeLlmServer() { stop(); }
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  [[nodiscard]] uint16_t port() const noexcept { return port_; }
  // "http://127.0.0.1:<port>", no trailing slash.
  [[nodiscard]] std::string baseUrl() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Appends a response to the script; requests consume the script in order.
  void enqueue(FakeResponse response) {
    std::lock_guard lock(mutex_);
    script_.push_back(std::move(response));
  }
  // Answers every request the script does not (called on the server thread).
  void setHandler(Handler handler) {
    std::lock_guard lock(mutex_);
    handler_ = std::move(handler);
  }
  // Overload mode: a request that arrives while `max_in_flight` others are being answered gets
  // `rejection` (by default a 429 with Retry-After: 1) at once instead of a scripted answer.
  void rejectAbove(size_t max_in_flight, std::optional<FakeResponse> rejection = std::nullopt) {
    std::lock_guard lock(mutex_);
    max_in_flight_ = max_in_flight;
    rejection_ = rejection ? std::move(*rejection) : rateLimited("1");
  }

  [[nodiscard]] std::vector<RecordedRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  [[nodiscard]] size_t requestCount() const {
    std::lock_guard lock(mutex_);
    return requests_.size();
  }
  [[nodiscard]] size_t connectionCount() const {
    std::lock_guard lock(mutex_);
    return static_cast<size_t>(connections_);
  }
  // Most requests ever being answered at once (rejected ones excluded), and how many were
  // rejected by overload mode.
  [[nodiscard]] size_t peakInFlight() const {
    std::lock_guard lock(mutex_);
    return peak_in_flight_;
  }
  [[nodiscard]] size_t rejectedCount() const {
    std::lock_guard lock(mutex_);
    return rejected_;
  }
  // Blocks until at least `count` requests arrived; false after `limit` (a safety net only).
  bool waitForRequests(size_t count,
                       std::chrono::milliseconds limit = std::chrono::milliseconds{30000}) const {
    std::unique_lock lock(mutex_);
    return arrived_.wait_for(lock, limit, [&] { return requests_.size() >= count; });
  }

  // Closes every connection (stalled ones included) and joins the server thread. Idempotent.
  void stop() {
    if (!thread_.joinable()) {
      return;
    }
    boost::asio::post(io_, [this] {
      boost::system::error_code ignored;
      acceptor_.close(ignored);
      for (auto& weak : sessions_) {
        if (auto session = weak.lock()) {
          session->close();
        }
      }
      sessions_.clear();
      parked_.clear();
    });
    thread_.join();
  }

  // ---- Response builders -----------------------------------------------------------------

  static FakeResponse json(int status, const nlohmann::json& body) {
    FakeResponse r;
    r.status = status;
    r.body = body.dump();
    return r;
  }

  // OpenAI chat completion with text content. usage {prompt_tokens, completion_tokens}.
  static FakeResponse openAiText(const std::string& text, int prompt_tokens = 7,
                                 int completion_tokens = 3, const std::string& finish = "stop",
                                 const std::string& model = "gpt-4o-2024-11-20") {
    return json(200, openAiBody(nlohmann::json{{"role", "assistant"}, {"content", text}}, finish,
                                prompt_tokens, completion_tokens, model));
  }

  struct ToolCall {
    std::string name;
    std::string arguments;  // raw: may be invalid JSON on purpose
  };
  // OpenAI chat completion whose message carries function tool calls (content null).
  static FakeResponse openAiToolCalls(const std::vector<ToolCall>& calls, int prompt_tokens = 7,
                                      int completion_tokens = 3,
                                      const std::string& finish = "tool_calls") {
    nlohmann::json tool_calls = nlohmann::json::array();
    int n = 0;
    for (const ToolCall& call : calls) {
      tool_calls.push_back({{"id", "call_" + std::to_string(++n)},
                            {"type", "function"},
                            {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    }
    return json(200, openAiBody(nlohmann::json{{"role", "assistant"},
                                               {"content", nullptr},
                                               {"tool_calls", std::move(tool_calls)}},
                                finish, prompt_tokens, completion_tokens, "gpt-4o-2024-11-20"));
  }

  // Anthropic Messages response: `text` as one text block (none when empty), then tool_use
  // blocks for `tool_uses` (name, input).
  static FakeResponse anthropicMessage(
      const std::string& text, int input_tokens = 12, int output_tokens = 7,
      const std::string& stop_reason = "end_turn",
      const std::vector<std::pair<std::string, nlohmann::json>>& tool_uses = {},
      const std::string& model = "claude-sonnet-4-6") {
    nlohmann::json content = nlohmann::json::array();
    if (!text.empty()) {
      content.push_back({{"type", "text"}, {"text", text}});
    }
    int n = 0;
    for (const auto& [name, input] : tool_uses) {
      content.push_back({{"type", "tool_use"},
                         {"id", "toolu_" + std::to_string(++n)},
                         {"name", name},
                         {"input", input}});
    }
    return json(200,
                {{"id", "msg_1"},
                 {"type", "message"},
                 {"role", "assistant"},
                 {"model", model},
                 {"content", std::move(content)},
                 {"stop_reason", stop_reason},
                 {"stop_sequence", nullptr},
                 {"usage", {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}}}});
  }

  // 429; retry_after is sent verbatim as Retry-After (seconds or an HTTP date) unless empty.
  static FakeResponse rateLimited(const std::string& retry_after = "1") {
    FakeResponse r = json(
        429,
        {{"error", {{"type", "rate_limit_error"}, {"message", "Rate limit reached, slow down"}}}});
    if (!retry_after.empty()) {
      r.headers.emplace_back("Retry-After", retry_after);
    }
    return r;
  }
  static FakeResponse serverError(int status = 500,
                                  const std::string& message = "internal server error") {
    return json(status, {{"error", {{"type", "server_error"}, {"message", message}}}});
  }
  // Status 200 whose body is not JSON.
  static FakeResponse malformedJson() {
    FakeResponse r;
    r.body = "{\"id\": \"chatcmpl-1\", \"choices\": [ this is not json";
    return r;
  }
  static FakeResponse stalled(FakeResponse::Stall where = FakeResponse::Stall::kAfterHeaders) {
    FakeResponse r = openAiText("never delivered");
    r.stall = where;
    return r;
  }
  static FakeResponse delayed(FakeResponse response, std::chrono::milliseconds delay) {
    response.delay = delay;
    return response;
  }
  static FakeResponse heldUntil(FakeResponse response, size_t requests, size_t answers = 0) {
    response.until_requests = requests;
    response.until_answers = answers;
    return response;
  }

 private:
  using Tcp = boost::asio::ip::tcp;

  static nlohmann::json openAiBody(nlohmann::json message, const std::string& finish,
                                   int prompt_tokens, int completion_tokens,
                                   const std::string& model) {
    return {{"id", "chatcmpl-1"},
            {"object", "chat.completion"},
            {"created", 1700000000},
            {"model", model},
            {"choices",
             nlohmann::json::array(
                 {{{"index", 0}, {"message", std::move(message)}, {"finish_reason", finish}}})},
            {"usage",
             {{"prompt_tokens", prompt_tokens},
              {"completion_tokens", completion_tokens},
              {"total_tokens", prompt_tokens + completion_tokens}}}};
  }

  static std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
  }
  static std::string trim(std::string_view text) {
    const size_t b = text.find_first_not_of(" \t");
    const size_t e = text.find_last_not_of(" \t\r");
    return b == std::string_view::npos ? std::string{} : std::string(text.substr(b, e - b + 1));
  }
  static const char* reason(int status) {
    switch (status) {
      case 200:
        return "OK";
      case 400:
        return "Bad Request";
      case 401:
        return "Unauthorized";
      case 403:
        return "Forbidden";
      case 404:
        return "Not Found";
      case 429:
        return "Too Many Requests";
      case 500:
        return "Internal Server Error";
      case 502:
        return "Bad Gateway";
      case 503:
        return "Service Unavailable";
      case 529:
        return "Overloaded";
      default:
        return "Status";
    }
  }
  static std::string head(const FakeResponse& r) {
    std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + reason(r.status) + "\r\n";
    out += "Content-Type: " + r.content_type + "\r\n";
    out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
    for (const auto& [name, value] : r.headers) {
      out += name + ": " + value + "\r\n";
    }
    if (r.close) {
      out += "Connection: close\r\n";
    }
    return out + "\r\n";
  }

  // What to answer `req` with; records it. `admitted`: counted in flight until answered.
  FakeResponse respondTo(RecordedRequest req, bool& admitted) {
    std::unique_lock lock(mutex_);
    requests_.push_back(req);
    arrived_.notify_all();
    boost::asio::post(io_, [this] { wakeParked(); });  // after the caller parked, if it does
    if (max_in_flight_ && in_flight_ >= *max_in_flight_) {
      ++rejected_;
      admitted = false;
      return rejection_;
    }
    admitted = true;
    ++in_flight_;
    peak_in_flight_ = std::max(peak_in_flight_, in_flight_);
    if (!script_.empty()) {
      FakeResponse next = std::move(script_.front());
      script_.pop_front();
      return next;
    }
    if (handler_) {
      Handler handler = handler_;
      lock.unlock();  // the handler may call back into the server (requestCount, ...)
      return handler(req);
    }
    return json(
        500,
        {{"error",
          {{"type", "fake_server"},
           {"message", "fake server: no scripted response for " + req.method + " " + req.path}}}});
  }
  void answered() {
    {
      std::lock_guard lock(mutex_);
      --in_flight_;
      ++answers_;
    }
    boost::asio::post(io_, [this] { wakeParked(); });
  }
  [[nodiscard]] bool gateOpen(const FakeResponse& r) const {
    std::lock_guard lock(mutex_);
    return r.until_requests <= requests_.size() && r.until_answers <= answers_;
  }

  class Session : public std::enable_shared_from_this<Session> {
   public:
    Session(FakeLlmServer& server, Tcp::socket socket, int id)
        : server_(server), socket_(std::move(socket)), timer_(server.io_), id_(id) {}

    void start() { readHead(); }
    [[nodiscard]] const FakeResponse& response() const { return response_; }
    void close() {
      boost::system::error_code ignored;
      timer_.cancel();
      socket_.shutdown(Tcp::socket::shutdown_both, ignored);
      socket_.close(ignored);
    }

   private:
    void readHead() {
      auto self = shared_from_this();
      boost::asio::async_read_until(socket_, buffer_, "\r\n\r\n",
                                    [self](boost::system::error_code ec, size_t n) {
                                      if (!ec) {
                                        self->onHead(n);
                                      }
                                    });
    }

    void onHead(size_t n) {
      std::string text(boost::asio::buffers_begin(buffer_.data()),
                       boost::asio::buffers_begin(buffer_.data()) + static_cast<std::ptrdiff_t>(n));
      buffer_.consume(n);
      request_ = RecordedRequest{};
      request_.connection = id_;
      size_t pos = text.find("\r\n");
      const std::string line = text.substr(0, pos);
      const size_t sp1 = line.find(' ');
      const size_t sp2 = line.find(' ', sp1 + 1);
      if (sp1 == std::string::npos || sp2 == std::string::npos) {
        close();
        return;
      }
      request_.method = line.substr(0, sp1);
      request_.path = line.substr(sp1 + 1, sp2 - sp1 - 1);
      pos += 2;
      while (pos < text.size()) {
        const size_t end = text.find("\r\n", pos);
        if (end == std::string::npos || end == pos) {
          break;
        }
        const std::string header = text.substr(pos, end - pos);
        const size_t colon = header.find(':');
        if (colon != std::string::npos) {
          request_.headers[lower(trim(header.substr(0, colon)))] = trim(header.substr(colon + 1));
        }
        pos = end + 2;
      }
      size_t length = 0;
      if (auto it = request_.headers.find("content-length"); it != request_.headers.end()) {
        try {
          length = static_cast<size_t>(std::stoull(it->second));
        } catch (const std::exception&) {
          close();  // an exception must not escape into io_context::run
          return;
        }
      }
      if (request_.header("expect") == "100-continue" && buffer_.size() < length) {
        auto self = shared_from_this();
        auto cont = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
        boost::asio::async_write(socket_, boost::asio::buffer(*cont),
                                 [self, cont, length](boost::system::error_code ec, size_t) {
                                   if (!ec) {
                                     self->readBody(length);
                                   }
                                 });
        return;
      }
      readBody(length);
    }

    void readBody(size_t length) {
      if (buffer_.size() >= length) {
        onBody(length);
        return;
      }
      auto self = shared_from_this();
      boost::asio::async_read(socket_, buffer_,
                              boost::asio::transfer_exactly(length - buffer_.size()),
                              [self, length](boost::system::error_code ec, size_t) {
                                if (!ec) {
                                  self->onBody(length);
                                }
                              });
    }

    void onBody(size_t length) {
      request_.body.assign(
          boost::asio::buffers_begin(buffer_.data()),
          boost::asio::buffers_begin(buffer_.data()) + static_cast<std::ptrdiff_t>(length));
      buffer_.consume(length);
      request_.received = std::chrono::steady_clock::now();
      close_after_ = lower(request_.header("connection")) == "close";
      response_ = server_.respondTo(request_, admitted_);
      if (!server_.gateOpen(response_)) {
        server_.parked_.push_back(shared_from_this());
        return;  // wakeParked() calls answer() once enough requests arrived
      }
      answer();
    }

   public:
    void answer() {
      if (response_.delay.count() > 0) {
        auto self = shared_from_this();
        timer_.expires_after(response_.delay);
        timer_.async_wait([self](boost::system::error_code ec) {
          if (!ec) {
            self->send();
          } else {
            self->finish();
          }
        });
        return;
      }
      send();
    }

   private:
    void send() {
      auto self = shared_from_this();
      switch (response_.stall) {
        case FakeResponse::Stall::kBeforeHeaders:
          idle();
          return;
        case FakeResponse::Stall::kAfterHeaders: {
          auto bytes = std::make_shared<std::string>(head(response_));
          boost::asio::async_write(socket_, boost::asio::buffer(*bytes),
                                   [self, bytes](boost::system::error_code ec, size_t) {
                                     if (!ec) {
                                       self->idle();
                                     } else {
                                       self->finish();
                                     }
                                   });
          return;
        }
        case FakeResponse::Stall::kNone:
        default:
          break;
      }
      auto bytes = std::make_shared<std::string>(head(response_) + response_.body);
      boost::asio::async_write(socket_, boost::asio::buffer(*bytes),
                               [self, bytes](boost::system::error_code ec, size_t) {
                                 self->finish();
                                 if (ec || self->response_.close || self->close_after_) {
                                   self->close();
                                 } else {
                                   self->readHead();
                                 }
                               });
    }

    // A stalled answer: keep the connection open, ignoring input, until the peer or stop()
    // closes it.
    void idle() {
      auto self = shared_from_this();
      socket_.async_read_some(boost::asio::buffer(sink_),
                              [self](boost::system::error_code ec, size_t) {
                                if (ec) {
                                  self->finish();
                                } else {
                                  self->idle();
                                }
                              });
    }

    void finish() {
      if (admitted_) {
        admitted_ = false;
        server_.answered();
      }
    }

    FakeLlmServer& server_;
    Tcp::socket socket_;
    boost::asio::steady_timer timer_;
    boost::asio::streambuf buffer_;
    std::array<char, 4096> sink_{};
    int id_;
    RecordedRequest request_;
    FakeResponse response_;
    bool admitted_ = false;
    bool close_after_ = false;
  };

  // Server thread: answers the parked requests whose request-count gate is now open.
  void wakeParked() {
    std::vector<std::shared_ptr<Session>> ready;
    std::erase_if(parked_, [&](const std::shared_ptr<Session>& session) {
      if (!gateOpen(session->response())) {
        return false;
      }
      ready.push_back(session);
      return true;
    });
    for (auto& session : ready) {
      session->answer();
    }
  }

  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, Tcp::socket socket) {
      if (ec) {
        return;  // closed by stop()
      }
      int id = 0;
      {
        std::lock_guard lock(mutex_);
        id = ++connections_;
      }
      auto session = std::make_shared<Session>(*this, std::move(socket), id);
      std::erase_if(sessions_, [](const std::weak_ptr<Session>& w) { return w.expired(); });
      sessions_.push_back(session);
      session->start();
      accept();
    });
  }

  boost::asio::io_context io_;
  Tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::vector<std::weak_ptr<Session>> sessions_;  // server thread only
  std::vector<std::shared_ptr<Session>> parked_;   // server thread only: held by until_requests

  mutable std::mutex mutex_;
  mutable std::condition_variable arrived_;
  std::deque<FakeResponse> script_;
  Handler handler_;
  std::vector<RecordedRequest> requests_;
  int connections_ = 0;
  std::optional<size_t> max_in_flight_;
  FakeResponse rejection_;
  size_t in_flight_ = 0;
  size_t peak_in_flight_ = 0;
  size_t rejected_ = 0;
  size_t answers_ = 0;  // admitted answers fully sent (or abandoned)
};

// The environment of an `oe` run against `server` as an OpenAI-compatible provider: only its
// OPENAI_* set, the Anthropic key and both default models unset.
inline std::map<std::string, std::string> openAiServerEnv(const FakeLlmServer& server) {
  return {{"OPENAI_BASE_URL", server.baseUrl() + "/v1"},
          {"OPENAI_API_KEY", "test-key"},
          {"ANTHROPIC_API_KEY", ""},
          {"OE_OPENAI_MODEL", ""},
          {"OE_ANTHROPIC_MODEL", ""}};
}

// The environment of an `oe` run with no provider configured at all.
inline std::map<std::string, std::string> noProviderEnv() {
  return {{"OPENAI_BASE_URL", ""},
          {"OPENAI_API_KEY", ""},
          {"ANTHROPIC_API_KEY", ""},
          {"ANTHROPIC_BASE_URL", ""}};
}

}  // namespace oe::test

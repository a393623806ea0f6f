// The server on a real socket (port 0), driven by Beast's client side and raw Asio sockets, and
// by curl for TLS: routing, decoding, tokens, the Host check, CORS, limits, timeouts, SSE.
#include "oe/httpd/server.hpp"

// clang-format off
// Boost 1.74's asio/awaitable.hpp uses std::exchange without including <utility> (C++20 mode).
#include <utility>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
// clang-format on

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace oe::httpd {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Tcp = asio::ip::tcp;
using HttpResponse = http::response<http::string_body>;

constexpr const char* kReadToken = "read-token-0123456789abcdef";
constexpr const char* kAdminToken = "admin-token-0123456789abcdef";

std::string field(const HttpResponse& response, std::string_view name) {
  const auto value = response[beast::string_view(name.data(), name.size())];
  return std::string(value.data(), value.size());
}

Json bodyJson(const HttpResponse& response) { return Json::parse(response.body(), nullptr, false); }

// One client connection; requests carry `Host: 127.0.0.1:<port>` unless told otherwise.
class Client {
 public:
  explicit Client(uint16_t port) : port_(port) {
    socket_.connect(Tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }

  HttpResponse send(std::string_view method, std::string_view target,
                    std::vector<std::pair<std::string, std::string>> headers = {},
                    std::string body = "", bool keep_alive = true) {
    http::request<http::string_body> request;
    request.method_string(beast::string_view(method.data(), method.size()));
    request.target(beast::string_view(target.data(), target.size()));
    request.version(11);
    bool has_host = false;
    for (const auto& [name, value] : headers) {
      has_host = has_host || name == "Host";
      request.insert(name, value);
    }
    if (!has_host) {
      request.set(http::field::host, "127.0.0.1:" + std::to_string(port_));
    }
    request.keep_alive(keep_alive);
    request.body() = std::move(body);
    request.prepare_payload();
    http::write(socket_, request);
    return read();
  }

  HttpResponse read() {
    HttpResponse response;
    http::read(socket_, buffer_, response);
    return response;
  }

  void writeRaw(std::string_view bytes) { asio::write(socket_, asio::buffer(bytes)); }

  // Reads until the server closes the connection; what was read.
  std::string readToEnd() {
    std::string out(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    buffer_.consume(buffer_.size());
    std::array<char, 4096> chunk{};
    beast::error_code ec;
    while (!ec) {
      const size_t n = socket_.read_some(asio::buffer(chunk), ec);
      out.append(chunk.data(), n);
    }
    return out;
  }

  Tcp::socket& socket() { return socket_; }

 private:
  uint16_t port_;
  asio::io_context io_;
  Tcp::socket socket_{io_};
  beast::flat_buffer buffer_;
};

Handler echo() {
  return [](const Request& request) {
    Json params = Json::object();
    for (const auto& [key, value] : request.params) {
      params[key] = value;
    }
    Json query = Json::array();
    for (const auto& [key, value] : request.query) {
      query.push_back({key, value});
    }
    Json headers = Json::object();
    for (const auto& [key, value] : request.headers) {
      headers[key] = value;
    }
    return jsonResponse(200, {{"method", request.method},
                              {"path", request.path},
                              {"target", request.target},
                              {"params", params},
                              {"query", query},
                              {"headers", headers},
                              {"body", request.body},
                              {"granted", scopeName(request.granted)},
                              {"token", request.token_name}});
  };
}

std::unique_ptr<Server> startServer(ServerOptions options, const Router& router) {
  if (options.listen == ServerOptions().listen) {
    options.listen = "127.0.0.1:0";
  }
  auto server = Server::start(std::move(options), router);
  if (!server) {
    ADD_FAILURE() << server.error().message;
    return nullptr;
  }
  return std::move(*server);
}

std::filesystem::path writeTokens(const test::TempDir& dir) {
  const auto path = dir.write("tokens", std::string("# tokens\nread ci ") + kReadToken +
                                            "\nadmin ops " + kAdminToken + "\n");
  chmod(path.c_str(), 0600);
  return path;
}

Router basicRouter() {
  Router router;
  router.add("GET", "/healthz", Scope::kPublic, [](const Request&) {
    return jsonResponse(200, {{"status", "ok"}});
  });
  router.add("GET", "/api/items/{id}", Scope::kRead, echo());
  router.add("DELETE", "/api/items/{id}", Scope::kAdmin, echo());
  router.add("POST", "/api/items", Scope::kAdmin, echo());
  router.add("GET", "/api/boom", Scope::kRead, [](const Request&) -> Response {
    throw std::runtime_error("secret detail /etc/oe/private");
  });
  router.add("GET", "/api/cookie", Scope::kRead, [](const Request&) {
    Response response = jsonResponse(200, {{"ok", true}});
    response.headers.emplace_back("Set-Cookie", "session=1");
    response.headers.emplace_back("X-Extra", "yes");
    return response;
  });
  return router;
}

TEST(ServerTest, RoutesDecodesAndKeepsTheConnectionAlive) {
  const Router router = basicRouter();
  auto server = startServer({}, router);
  ASSERT_TRUE(server);
  EXPECT_EQ(server->url(), "http://127.0.0.1:" + std::to_string(server->port()));
  Client client(server->port());
  auto first =
      client.send("GET", "/api/items/a%20b?x=1+2&y=%C3%A9&x=3", {{"X-Custom-Header", "Value"}});
  ASSERT_EQ(first.result_int(), 200) << first.body();
  EXPECT_EQ(field(first, "Content-Type"), "application/json");
  EXPECT_EQ(field(first, "Cache-Control"), "no-store");
  EXPECT_TRUE(first.keep_alive());
  const Json echoed = bodyJson(first);
  EXPECT_EQ(echoed["path"], "/api/items/a b");
  EXPECT_EQ(echoed["params"]["id"], "a b");
  EXPECT_EQ(echoed["target"], "/api/items/a%20b?x=1+2&y=%C3%A9&x=3");
  EXPECT_EQ(echoed["query"], Json::parse(R"([["x","1 2"],["x","3"],["y","\u00e9"]])"));
  EXPECT_EQ(echoed["headers"]["x-custom-header"], "Value");
  EXPECT_EQ(echoed["granted"], "admin");  // no token file: every request is admin
  // The same connection serves the next request.
  auto second =
      client.send("POST", "/api/items", {{"Content-Type", "application/json"}}, "{\"a\":1}");
  ASSERT_EQ(second.result_int(), 200);
  EXPECT_EQ(bodyJson(second)["body"], "{\"a\":1}");
}

TEST(ServerTest, UnknownPathsAndMethodsAreProblems) {
  const Router router = basicRouter();
  auto server = startServer({}, router);
  ASSERT_TRUE(server);
  Client client(server->port());
  auto missing = client.send("GET", "/nothing/here");
  EXPECT_EQ(missing.result_int(), 404);
  EXPECT_EQ(field(missing, "Content-Type"), "application/problem+json");
  EXPECT_EQ(bodyJson(missing)["status"], 404);
  auto wrong = client.send("PUT", "/api/items/7");
  EXPECT_EQ(wrong.result_int(), 405);
  EXPECT_EQ(field(wrong, "Allow"), "GET, HEAD, DELETE");
  EXPECT_EQ(field(wrong, "Content-Type"), "application/problem+json");
  auto bad = client.send("GET", "/api/items/%zz");
  EXPECT_EQ(bad.result_int(), 400);
  EXPECT_EQ(bodyJson(bad)["type"], "https://oe.dev/problems/bad-target");
}

// HEAD is answered by the GET route without the body: the same status, type and length, and the
// connection goes on to the next request (a body sent after the head would be read as one).
TEST(ServerTest, HeadIsTheGetWithoutItsBody) {
  const Router router = basicRouter();
  auto server = startServer({}, router);
  ASSERT_TRUE(server);
  Client client(server->port());
  const auto get = client.send("GET", "/api/items/7");
  ASSERT_EQ(get.result_int(), 200);
  client.writeRaw("HEAD /api/items/7 HTTP/1.1\r\nHost: 127.0.0.1:" +
                  std::to_string(server->port()) + "\r\n\r\n");
  http::response_parser<http::string_body> parser;
  parser.skip(true);  // a response to HEAD has no body whatever its Content-Length says
  beast::flat_buffer buffer;
  http::read(client.socket(), buffer, parser);
  const auto& head = parser.get();
  EXPECT_EQ(head.result_int(), 200);
  EXPECT_EQ(field(head, "Content-Type"), field(get, "Content-Type"));
  EXPECT_EQ(field(head, "Content-Length"), std::to_string(get.body().size()));
  EXPECT_TRUE(head.body().empty());
  EXPECT_EQ(buffer.size(), 0U) << "no body bytes after the head";
  EXPECT_EQ(client.send("GET", "/api/items/8").result_int(), 200) << "the connection goes on";
}

TEST(ServerTest, AHandlerThatThrowsIsA500WithoutItsMessage) {
  const Router router = basicRouter();
  auto server = startServer({}, router);
  ASSERT_TRUE(server);
  Client client(server->port());
  auto response = client.send("GET", "/api/boom");
  EXPECT_EQ(response.result_int(), 500);
  EXPECT_EQ(field(response, "Content-Type"), "application/problem+json");
  EXPECT_EQ(response.body().find("secret"), std::string::npos) << response.body();
  EXPECT_EQ(response.body().find("/etc/oe"), std::string::npos);
  // The connection and the server go on.
  EXPECT_EQ(client.send("GET", "/healthz").result_int(), 200);
}

TEST(ServerTest, NoCookiesEverAndCorsOnlyWhenAsked) {
  const Router router = basicRouter();
  {
    auto server = startServer({}, router);
    ASSERT_TRUE(server);
    Client client(server->port());
    auto response = client.send("GET", "/api/cookie", {{"Origin", "https://app.example"}});
    EXPECT_EQ(response.result_int(), 200);
    EXPECT_EQ(field(response, "X-Extra"), "yes");
    EXPECT_EQ(response.count(http::field::set_cookie), 0U);
    EXPECT_EQ(response.count(http::field::access_control_allow_origin), 0U);
    // Without --cors-origin a preflight is just an unknown method.
    auto preflight = client.send(
        "OPTIONS", "/api/items/1",
        {{"Origin", "https://app.example"}, {"Access-Control-Request-Method", "DELETE"}});
    EXPECT_EQ(preflight.result_int(), 405);
  }
  ServerOptions options;
  options.cors_origin = "https://app.example";
  auto server = startServer(options, router);
  ASSERT_TRUE(server);
  Client client(server->port());
  auto preflight = client.send("OPTIONS", "/api/items/1",
                               {{"Origin", "https://app.example"},
                                {"Access-Control-Request-Method", "DELETE"},
                                {"Access-Control-Request-Headers", "authorization"}});
  EXPECT_EQ(preflight.result_int(), 204);
  EXPECT_EQ(field(preflight, "Access-Control-Allow-Origin"), "https://app.example");
  EXPECT_NE(field(preflight, "Access-Control-Allow-Methods").find("DELETE"), std::string::npos);
  EXPECT_NE(field(preflight, "Access-Control-Allow-Headers").find("Authorization"),
            std::string::npos);
  auto allowed = client.send("GET", "/api/items/1", {{"Origin", "https://app.example"}});
  EXPECT_EQ(field(allowed, "Access-Control-Allow-Origin"), "https://app.example");
  auto other = client.send("GET", "/api/items/1", {{"Origin", "https://evil.example"}});
  EXPECT_EQ(other.result_int(), 200);
  EXPECT_EQ(other.count(http::field::access_control_allow_origin), 0U);
  auto other_preflight = client.send(
      "OPTIONS", "/api/items/1",
      {{"Origin", "https://evil.example"}, {"Access-Control-Request-Method", "DELETE"}});
  EXPECT_EQ(other_preflight.result_int(), 403);
  EXPECT_EQ(other_preflight.count(http::field::access_control_allow_origin), 0U);
}

TEST(ServerTest, WithoutTokensOnlyLoopbackHostNamesAreAnswered) {
  const Router router = basicRouter();
  auto server = startServer({}, router);
  ASSERT_TRUE(server);
  Client client(server->port());
  for (const char* host :
       {"evil.example", "evil.example:8420", "localhost.evil.example", "10.0.0.1"}) {
    auto refused = client.send("GET", "/healthz", {{"Host", host}});
    EXPECT_EQ(refused.result_int(), 403) << host;
    EXPECT_EQ(bodyJson(refused)["type"], "https://oe.dev/problems/host-not-allowed");
  }
  for (const char* host : {"localhost", "localhost:8420", "127.0.0.1:1", "[::1]:8420"}) {
    EXPECT_EQ(client.send("GET", "/api/items/1", {{"Host", host}}).result_int(), 200) << host;
  }
  // HTTP/1.0 allows a request without Host: refused as well.
  client.writeRaw("GET /healthz HTTP/1.0\r\n\r\n");
  EXPECT_EQ(client.read().result_int(), 403);
}

TEST(ServerTest, TokensAndScopes) {
  test::TempDir dir;
  const Router router = basicRouter();
  ServerOptions options;
  options.token_file = writeTokens(dir);
  auto server = startServer(options, router);
  ASSERT_TRUE(server);
  Client client(server->port());
  const auto bearer = [](const char* token) {
    return std::vector<std::pair<std::string, std::string>>{
        {"Authorization", std::string("Bearer ") + token}};
  };

  auto none = client.send("GET", "/api/items/1");
  EXPECT_EQ(none.result_int(), 401);
  EXPECT_EQ(field(none, "WWW-Authenticate"), R"(Bearer realm="oe")");
  EXPECT_EQ(field(none, "Content-Type"), "application/problem+json");
  auto bad = client.send("GET", "/api/items/1", bearer("not-a-token-of-this-server"));
  EXPECT_EQ(bad.result_int(), 401);
  EXPECT_NE(field(bad, "WWW-Authenticate").find("invalid_token"), std::string::npos);
  auto basic =
      client.send("GET", "/api/items/1", {{"Authorization", std::string("Basic ") + kAdminToken}});
  EXPECT_EQ(basic.result_int(), 401);

  auto read = client.send("GET", "/api/items/1", bearer(kReadToken));
  ASSERT_EQ(read.result_int(), 200);
  EXPECT_EQ(bodyJson(read)["granted"], "read");
  EXPECT_EQ(bodyJson(read)["token"], "ci");
  auto read_on_admin = client.send("DELETE", "/api/items/1", bearer(kReadToken));
  EXPECT_EQ(read_on_admin.result_int(), 403);
  EXPECT_NE(field(read_on_admin, "WWW-Authenticate").find("insufficient_scope"), std::string::npos);
  auto admin = client.send("DELETE", "/api/items/1",
                           {{"authorization", std::string("bearer ") + kAdminToken}});
  ASSERT_EQ(admin.result_int(), 200);
  EXPECT_EQ(bodyJson(admin)["granted"], "admin");
  EXPECT_EQ(bodyJson(admin)["token"], "ops");
  // Public routes need no token; with tokens, the Host check is not needed (a browser never
  // sends the bearer token on its own).
  EXPECT_EQ(client.send("GET", "/healthz", {{"Host", "oe.example:443"}}).result_int(), 200);
  EXPECT_EQ(
      client
          .send("GET", "/api/items/1",
                {{"Host", "oe.example"}, {"Authorization", std::string("Bearer ") + kReadToken}})
          .result_int(),
      200);
}

TEST(ServerTest, StartRefusesUnsafeOptionsWithWhatToDo) {
  test::TempDir dir;
  const Router router = basicRouter();
  const auto refused = [&](ServerOptions options) {
    auto server = Server::start(std::move(options), router);
    return server ? std::string("started") : server.error().message;
  };
  ServerOptions open;
  open.listen = "0.0.0.0:0";
  EXPECT_NE(refused(open).find("--token-file"), std::string::npos) << refused(open);
  open.token_file = writeTokens(dir);
  EXPECT_NE(refused(open).find("--tls-cert"), std::string::npos) << refused(open);
  EXPECT_NE(refused(open).find("--insecure-http"), std::string::npos);

  ServerOptions half_tls;
  half_tls.listen = "127.0.0.1:0";
  half_tls.tls_cert = dir / "cert.pem";
  EXPECT_NE(refused(half_tls).find("--tls-key"), std::string::npos);
  half_tls.tls_key = dir / "key.pem";
  EXPECT_NE(refused(half_tls).find(half_tls.tls_cert->string()), std::string::npos)
      << refused(half_tls);

  ServerOptions bad_tokens;
  bad_tokens.listen = "127.0.0.1:0";
  bad_tokens.token_file = dir.write("bad-tokens", "superuser root 0123456789abcdef0123\n");
  chmod(bad_tokens.token_file->c_str(), 0600);
  EXPECT_NE(refused(bad_tokens).find(bad_tokens.token_file->string() + ":1: unknown scope"),
            std::string::npos)
      << refused(bad_tokens);

  ServerOptions bad_listen;
  bad_listen.listen = "example.com:80";
  EXPECT_NE(refused(bad_listen).find("--listen example.com:80"), std::string::npos);

  // Taken: binding a port another server holds says so.
  auto first = startServer({}, router);
  ASSERT_TRUE(first);
  ServerOptions same;
  same.listen = "127.0.0.1:" + std::to_string(first->port());
  EXPECT_NE(refused(same).find("cannot bind"), std::string::npos) << refused(same);
}

TEST(ServerTest, NonLoopbackWithTokensAndInsecureHttpServes) {
  test::TempDir dir;
  const Router router = basicRouter();
  ServerOptions options;
  options.listen = "0.0.0.0:0";
  options.token_file = writeTokens(dir);
  options.insecure_http = true;
  auto server = startServer(options, router);
  ASSERT_TRUE(server);
  Client client(server->port());
  EXPECT_EQ(client.send("GET", "/api/items/1").result_int(), 401);
  EXPECT_EQ(client.send("GET", "/healthz").result_int(), 200);
}

// Handlers run on the worker pool: one that blocks until another request has been answered does
// not stop the server from reading, dispatching and answering that other request.
TEST(ServerTest, HandlersRunOnTheWorkerPoolNotTheIoThread) {
  std::promise<void> released;
  auto release_future = released.get_future().share();
  Router router;
  router.add("GET", "/block", Scope::kRead, [release_future](const Request&) {
    release_future.wait();
    return jsonResponse(200, {{"blocked", true}});
  });
  router.add("GET", "/release", Scope::kRead, [&released](const Request&) {
    released.set_value();
    return jsonResponse(200, {{"released", true}});
  });
  ServerOptions options;
  options.worker_threads = 2;
  auto server = startServer(options, router);
  ASSERT_TRUE(server);
  auto blocked = std::async(std::launch::async, [&] {
    Client client(server->port());
    return client.send("GET", "/block").result_int();
  });
  Client other(server->port());
  EXPECT_EQ(other.send("GET", "/release").result_int(), 200);
  EXPECT_EQ(blocked.get(), 200);
}

TEST(ServerTest, ABodyOverTheLimitIsRefusedFromItsHead) {
  const Router router = basicRouter();
  ServerOptions options;
  options.max_body_bytes = 1 << 20;
  auto server = startServer(options, router);
  ASSERT_TRUE(server);
  {
    // 20 MB announced, 1 KB sent: the answer comes without the rest of the body.
    Client client(server->port());
    client.writeRaw(
        "POST /api/items HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 20971520\r\n\r\n" +
        std::string(1024, 'x'));
    auto response = client.read();
    EXPECT_EQ(response.result_int(), 413);
    EXPECT_EQ(field(response, "Content-Type"), "application/problem+json");
    EXPECT_FALSE(response.keep_alive());
  }
  {
    // Chunked, so no length up front: refused once the limit is crossed.
    Client client(server->port());
    client.writeRaw(
        "POST /api/items HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    const std::string chunk = "10000\r\n" + std::string(0x10000, 'y') + "\r\n";
    for (int i = 0; i < 17; ++i) {
      client.writeRaw(chunk);
    }
    EXPECT_EQ(client.read().result_int(), 413);
  }
  {
    // A whole 20 MB body sent by curl, which reads the early answer while it sends.
    test::TempDir dir;
    const auto body = dir.write("body", std::string(20 << 20, 'z'));
    auto result = test::runProcess(
        {"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--data-binary",
         "@" + body.string(), "http://127.0.0.1:" + std::to_string(server->port()) + "/api/items"});
    EXPECT_EQ(result.out, "413") << result.err;
  }
  // Under the limit, with Expect: 100-continue, is answered.
  Client client(server->port());
  client.writeRaw(
      "POST /api/items HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n"
      "Expect: 100-continue\r\n\r\n");
  std::string interim(25, '\0');
  asio::read(client.socket(), asio::buffer(interim));
  EXPECT_EQ(interim, "HTTP/1.1 100 Continue\r\n\r\n");
  client.writeRaw("hello");
  auto response = client.read();
  EXPECT_EQ(response.result_int(), 200);
  EXPECT_EQ(bodyJson(response)["body"], "hello");
}

TEST(ServerTest, HeadersOverTheLimitAre431) {
  const Router router = basicRouter();
  ServerOptions options;
  options.max_header_bytes = 4096;
  auto server = startServer(options, router);
  ASSERT_TRUE(server);
  Client client(server->port());
  auto response = client.send("GET", "/healthz", {{"X-Big", std::string(8000, 'h')}});
  EXPECT_EQ(response.result_int(), 431);
  EXPECT_EQ(field(response, "Content-Type"), "application/problem+json");
  Client small(server->port());
  EXPECT_EQ(small.send("GET", "/healthz", {{"X-Small", std::string(1000, 'h')}}).result_int(), 200);
}

TEST(ServerTest, SlowAndIdleClientsAreClosed) {
  const Router router = basicRouter();
  ServerOptions options;
  options.request_timeout = std::chrono::seconds(1);
  options.idle_timeout = std::chrono::seconds(1);
  auto server = startServer(options, router);
  ASSERT_TRUE(server);
  // A slow loris: part of a head, then nothing. The server closes it (the read ends).
  Client slow(server->port());
  slow.writeRaw("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
  EXPECT_EQ(slow.readToEnd(), "");
  // A connection that never sends anything, and one idle after a request.
  Client silent(server->port());
  EXPECT_EQ(silent.readToEnd(), "");
  Client idle(server->port());
  EXPECT_EQ(idle.send("GET", "/healthz").result_int(), 200);
  EXPECT_EQ(idle.readToEnd(), "");
}

TEST(ServerTest, ConnectionsBeyondTheLimitAreClosedAndTheOthersServed) {
  const Router router = basicRouter();
  ServerOptions options;
  options.max_connections = 3;
  auto server = startServer(options, router);
  ASSERT_TRUE(server);
  auto a = std::make_unique<Client>(server->port());
  Client b(server->port());
  EXPECT_EQ(a->send("GET", "/healthz").result_int(), 200);  // both are registered by now
  EXPECT_EQ(b.send("GET", "/healthz").result_int(), 200);
  Client c(server->port());
  EXPECT_EQ(c.send("GET", "/healthz").result_int(), 200);
  Client over(server->port());
  EXPECT_EQ(over.readToEnd(), "");                          // closed without an answer
  EXPECT_EQ(a->send("GET", "/healthz").result_int(), 200);  // the open ones go on
  a.reset();
  // Once one is gone (the server notices its close), a new one is served. Retried because the
  // server learns of the close asynchronously; bounded by the test's timeout.
  int status = 0;
  while (status != 200) {
    try {
      Client next(server->port());
      status = next.send("GET", "/healthz").result_int();
    } catch (const std::exception&) {
      std::this_thread::yield();
    }
  }
  EXPECT_EQ(status, 200);
}

TEST(ServerTest, FiveHundredIdleConnectionsDoNotStopANormalClient) {
  const Router router = basicRouter();
  auto server = startServer({}, router);
  ASSERT_TRUE(server);
  asio::io_context io;
  std::vector<std::unique_ptr<Tcp::socket>> idle;
  for (int i = 0; i < 500; ++i) {
    idle.push_back(std::make_unique<Tcp::socket>(io));
    idle.back()->connect(Tcp::endpoint(asio::ip::make_address("127.0.0.1"), server->port()));
    if (i % 2 == 0) {
      asio::write(*idle.back(), asio::buffer(std::string_view("GET /healthz HTTP/1.1\r\n")));
    }
  }
  Client client(server->port());
  auto response = client.send("GET", "/healthz");
  EXPECT_EQ(response.result_int(), 200);
  // They were still open while it was served.
  for (auto& socket : idle) {
    socket->non_blocking(true);
    std::array<char, 16> byte{};
    beast::error_code ec;
    socket->read_some(asio::buffer(byte), ec);
    EXPECT_EQ(ec, asio::error::would_block);
  }
}

// The access log names the peer, method, path, status and time, and never the query string
// or the Authorization header (either may carry a secret).
TEST(ServerTest, TheAccessLogLeavesOutQueriesAndTokens) {
  test::TempDir dir;
  const Router router = basicRouter();
  ServerOptions options;
  options.token_file = writeTokens(dir);
  options.access_log = true;
  const auto log_path = dir / "stderr.log";
  const int saved = dup(STDERR_FILENO);
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(log_fd, 0);
  dup2(log_fd, STDERR_FILENO);
  {
    auto server = startServer(options, router);
    if (server) {
      Client client(server->port());
      client.send("GET", "/api/items/7?api_key=sekrit-query",
                  {{"Authorization", std::string("Bearer ") + kAdminToken}});
      client.send("GET", "/api/items/8");
      server->stop();  // the log line is written before the answer: all are in by now
    }
  }
  dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(log_fd);
  const std::string log = test::readFile(log_path);
  EXPECT_NE(log.find("\"GET /api/items/7\" 200"), std::string::npos) << log;
  EXPECT_NE(log.find("token=ops"), std::string::npos) << log;  // the token's name
  EXPECT_NE(log.find("\"GET /api/items/8\" 401"), std::string::npos) << log;
  EXPECT_EQ(log.find("sekrit"), std::string::npos) << log;
  EXPECT_EQ(log.find(kAdminToken), std::string::npos) << log;
  EXPECT_EQ(log.find("api_key"), std::string::npos) << log;
}

// --- Server-Sent Events ---

// A source that hands its sink to the test.
class CapturingSource final : public EventSource {
 public:
  void start(std::shared_ptr<EventSink> sink) override {
    std::lock_guard lock(mutex_);
    sinks_.push_back(std::move(sink));
    ready_.notify_all();
  }
  std::shared_ptr<EventSink> next() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return !sinks_.empty(); });
    auto sink = sinks_.front();
    sinks_.erase(sinks_.begin());
    return sink;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<std::shared_ptr<EventSink>> sinks_;
};

Router sseRouter(const std::shared_ptr<CapturingSource>& source) {
  Router router = basicRouter();
  router.add("GET", "/events", Scope::kRead, [source](const Request&) {
    Response response;
    response.events = source;
    response.headers.emplace_back("X-Stream", "1");
    return response;
  });
  return router;
}

// Reads an SSE response's head, then its (chunked) body as it comes, until `done` says stop or
// the stream ends.
class SseClient {
 public:
  explicit SseClient(uint16_t port) : client_(port) {
    client_.writeRaw("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    http::read_header(client_.socket(), buffer_, parser_);
  }
  const http::response<http::buffer_body>& head() { return parser_.get(); }
  // Reads until `done(text)` holds or the stream ends; the text so far.
  std::string readUntil(const std::function<bool(const std::string&)>& done) {
    std::array<char, 8192> chunk{};
    while (!parser_.is_done() && !done(text_)) {
      parser_.get().body().data = chunk.data();
      parser_.get().body().size = chunk.size();
      beast::error_code ec;
      http::read_some(client_.socket(), buffer_, parser_, ec);
      text_.append(chunk.data(), chunk.size() - parser_.get().body().size);
      if (ec && ec != http::error::need_buffer) {
        break;
      }
    }
    return text_;
  }
  [[nodiscard]] bool ended() const { return parser_.is_done(); }

 private:
  Client client_;
  beast::flat_buffer buffer_;
  http::response_parser<http::buffer_body> parser_;
  std::string text_;
};

TEST(ServerSseTest, AClientReceivesEveryFrameInOrder) {
  auto source = std::make_shared<CapturingSource>();
  const Router router = sseRouter(source);
  auto server = startServer({}, router);
  ASSERT_TRUE(server);
  SseClient client(server->port());
  EXPECT_EQ(client.head().result_int(), 200);
  EXPECT_EQ(std::string(client.head()[http::field::content_type]), "text/event-stream");
  EXPECT_EQ(std::string(client.head()[http::field::cache_control]), "no-store");
  EXPECT_EQ(std::string(client.head()["X-Stream"]), "1");
  auto sink = source->next();
  constexpr int kFrames = 2000;
  std::thread producer([&] {
    for (int i = 0; i < kFrames; ++i) {
      ASSERT_TRUE(sink->push(sseFrame(std::to_string(i), "", "line " + std::to_string(i))));
    }
    sink->finish();
  });
  const std::string text = client.readUntil([](const std::string&) { return false; });
  producer.join();
  EXPECT_TRUE(client.ended());
  std::string want;
  for (int i = 0; i < kFrames; ++i) {
    want += sseFrame(std::to_string(i), "", "line " + std::to_string(i));
  }
  EXPECT_TRUE(text == want) << text.size() << " bytes received, " << want.size() << " sent";
  EXPECT_FALSE(sink->open());
  EXPECT_FALSE(sink->push("id: late\n\n"));
}

TEST(ServerSseTest, AStalledClientDoesNotBlockTheProducerAndIsDropped) {
  auto source = std::make_shared<CapturingSource>();
  const Router router = sseRouter(source);
  ServerOptions options;
  options.max_sse_queue_bytes = 64 << 10;
  auto server = startServer(options, router);
  ASSERT_TRUE(server);
  // The client reads the head and then nothing.
  Client stalled(server->port());
  const int small = 4096;
  stalled.socket().set_option(asio::socket_base::receive_buffer_size(small));
  stalled.writeRaw("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  auto sink = source->next();
  // Bounded: the kernel's socket buffers and the queue's cap take far less than this.
  const std::string frame = sseFrame("", "", std::string(1000, 'e'));
  size_t pushed = 0;
  bool dropped = false;
  while (pushed < (size_t{256} << 20)) {
    if (!sink->push(frame)) {
      dropped = true;
      break;
    }
    pushed += frame.size();
  }
  EXPECT_TRUE(dropped) << pushed << " bytes pushed without the subscriber being dropped";
  EXPECT_FALSE(sink->open());
  EXPECT_FALSE(sink->push(frame));
  // The server closed it: reading what is left ends.
  const std::string rest = stalled.readToEnd();
  EXPECT_LT(rest.size(), pushed + 4096);
  // Another client is still served.
  Client other(server->port());
  EXPECT_EQ(other.send("GET", "/healthz").result_int(), 200);
}

TEST(ServerSseTest, PingsKeepTheStreamAliveAndStreamsAreCapped) {
  auto source = std::make_shared<CapturingSource>();
  const Router router = sseRouter(source);
  ServerOptions options;
  options.sse_ping_interval = std::chrono::milliseconds(50);
  options.max_sse_connections = 1;
  auto server = startServer(options, router);
  ASSERT_TRUE(server);
  SseClient client(server->port());
  auto sink = source->next();
  const std::string text = client.readUntil(
      [](const std::string& so_far) { return so_far.find(": ping\n\n") != std::string::npos; });
  EXPECT_EQ(text.rfind(": ping\n\n", 0), 0U) << text.substr(0, 200);
  // A second stream is over the cap: 503.
  Client second(server->port());
  auto refused = second.send("GET", "/events");
  EXPECT_EQ(refused.result_int(), 503);
  EXPECT_EQ(field(refused, "Content-Type"), "application/problem+json");
  sink->finish();
  client.readUntil([](const std::string&) { return false; });
  EXPECT_TRUE(client.ended());
  // Once the first has ended, a new stream is allowed (the count is released on close; the
  // server may take a moment to see it, so retry within the test's timeout).
  while (true) {
    Client again(server->port());
    again.writeRaw("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    http::response_parser<http::empty_body> head;
    beast::flat_buffer buffer;
    beast::error_code ec;
    http::read_header(again.socket(), buffer, head, ec);
    ASSERT_FALSE(ec) << ec.message();
    if (head.get().result_int() == 200) {
      source->next()->finish();
      break;
    }
    std::this_thread::yield();
  }
}

TEST(ServerSseTest, StopClosesStreamsAndLaterPushesAreRefused) {
  auto source = std::make_shared<CapturingSource>();
  const Router router = sseRouter(source);
  auto server = startServer({}, router);
  ASSERT_TRUE(server);
  SseClient client(server->port());
  auto sink = source->next();
  std::atomic<bool> stop_pushing{false};
  std::thread producer([&] {
    while (!stop_pushing && sink->push(sseFrame("", "", "tick"))) {
      std::this_thread::yield();
    }
  });
  client.readUntil(
      [](const std::string& so_far) { return so_far.find("tick") != std::string::npos; });
  server->stop();
  server->stop();  // idempotent
  producer.join();
  EXPECT_FALSE(sink->open());
  EXPECT_FALSE(sink->push("data: after\n\n"));
  server.reset();
  // The sink outlives the server and stays safe to use.
  EXPECT_FALSE(sink->push("data: later\n\n"));
  sink->finish();
}

// --- TLS ---

bool makeCertificate(const test::TempDir& dir) {
  auto result = test::runProcess({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                                  "-days", "2", "-subj", "/CN=localhost", "-addext",
                                  "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout",
                                  (dir / "key.pem").string(), "-out", (dir / "cert.pem").string()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return result.exit_code == 0;
}

TEST(ServerTlsTest, ServesHttpsWithTls12OrLater) {
  test::TempDir dir;
  ASSERT_TRUE(makeCertificate(dir));
  const Router router = basicRouter();
  ServerOptions options;
  options.tls_cert = dir / "cert.pem";
  options.tls_key = dir / "key.pem";
  auto server = startServer(options, router);
  ASSERT_TRUE(server);
  const std::string url = server->url();
  EXPECT_EQ(url.rfind("https://127.0.0.1:", 0), 0U);
  auto ok = test::runProcess({"curl", "-sS", "--cacert", (dir / "cert.pem").string(), "-w",
                              "\n%{http_code} %{ssl_verify_result}", url + "/api/items/x%20y"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("\"path\":\"/api/items/x y\""), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("\n200 0"), std::string::npos) << ok.out;
  // TLS 1.3 and 1.2 are accepted, 1.1 is not (the client is allowed to offer it).
  auto tls12 =
      test::runProcess({"curl", "-sS", "--cacert", (dir / "cert.pem").string(), "--tls-max", "1.2",
                        "-o", "/dev/null", "-w", "%{http_code}", url + "/healthz"});
  EXPECT_EQ(tls12.out, "200") << tls12.err;
  auto tls11 = test::runProcess({"openssl", "s_client", "-connect",
                                 "127.0.0.1:" + std::to_string(server->port()), "-tls1_1",
                                 "-cipher", "DEFAULT:@SECLEVEL=0"});
  EXPECT_NE(tls11.exit_code, 0) << tls11.out;
  // Plain HTTP on the TLS port gets no answer.
  Client plain(server->port());
  plain.writeRaw("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(plain.readToEnd().find("200"), std::string::npos);
}

TEST(ServerTlsTest, AMismatchedKeyIsRefused) {
  test::TempDir dir;
  ASSERT_TRUE(makeCertificate(dir));
  const auto other = test::runProcess(
      {"openssl", "genpkey", "-algorithm", "RSA", "-out", (dir / "other.pem").string()});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  const Router router = basicRouter();
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.tls_cert = dir / "cert.pem";
  options.tls_key = dir / "other.pem";
  auto server = Server::start(options, router);
  ASSERT_FALSE(server);
  EXPECT_NE(server.error().message.find("does not match"), std::string::npos)
      << server.error().message;
}

}  // namespace
}  // namespace oe::httpd

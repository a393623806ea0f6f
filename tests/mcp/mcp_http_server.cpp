// The server the MCP-over-HTTP test drives: oe's HTTP server with addMcpRoutes and three small
// tools (echo, count with progress, and an "admin" tool a read token may not call), on
// 127.0.0.1:<free port>. Prints the /mcp URL, serves until its stdin closes.
// Usage: oe_test_mcp_http_server [TOKEN_FILE]
#include <iostream>
#include <string>

#include "oe/httpd/server.hpp"
#include "oe/service/mcp_http.hpp"

namespace {

oe::mcp::Tool tool(std::string name, std::function<oe::Result<oe::Json>(oe::mcp::ToolCall&)> run) {
  oe::mcp::Tool t;
  t.name = std::move(name);
  t.title = t.name;
  t.description = "a tool of the MCP-over-HTTP test";
  t.input_schema = {{"type", "object"}};
  t.annotations = nullptr;
  t.handler = std::move(run);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  oe::httpd::Router router;
  oe::service::McpHttpOptions options;
  options.info.version = "test";
  options.tools = [] {
    return std::vector<oe::mcp::Tool>{
        tool("echo",
             [](oe::mcp::ToolCall& call) -> oe::Result<oe::Json> {
               return oe::Json{{"echo", call.args()}};
             }),
        tool("count",
             [](oe::mcp::ToolCall& call) -> oe::Result<oe::Json> {
               const int n = call.args().value("n", 3);
               for (int i = 1; i <= n; ++i) {
                 call.progress(i, n, "step " + std::to_string(i));
               }
               return oe::Json{{"counted", n}};
             }),
        tool("start_run", [](oe::mcp::ToolCall&) -> oe::Result<oe::Json> {
          return oe::Json{{"started", true}};
        })};
  };
  options.info.progress_interval = std::chrono::milliseconds(0);
  options.admin_tools = {"start_run"};
  oe::service::addMcpRoutes(router, std::move(options));
  oe::httpd::ServerOptions server_options;
  server_options.listen = "127.0.0.1:0";
  if (argc > 1) {
    server_options.token_file = argv[1];
  }
  auto server = oe::httpd::Server::start(server_options, router);
  if (!server) {
    std::cerr << server.error().message << '\n';
    return 2;
  }
  std::cout << (*server)->url() << "/mcp" << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  (*server)->stop();
  return 0;
}

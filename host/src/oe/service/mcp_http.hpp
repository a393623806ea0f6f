// `oe mcp` over MCP's Streamable HTTP transport at /mcp (docs/serve.md, "MCP over HTTP"): a
// session per `initialize` (Mcp-Session-Id), each POSTed message fed to that session's
// transport-agnostic mcp::Server, its answer streamed back as Server-Sent Events; GET opens the
// session's stream of server-initiated messages, DELETE ends the session.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "oe/httpd/router.hpp"
#include "oe/mcp/server.hpp"

namespace oe::service {

struct McpHttpOptions {
  mcp::ServerInfo info;
  // The tools and resources of a new session (`oe serve` passes mcpTools/mcpResources).
  std::function<std::vector<mcp::Tool>()> tools;
  std::function<mcp::Resources()> resources;
  // Tools a `read` token may not call (they start or change runs): 403 for it.
  std::set<std::string> admin_tools;
  // Sessions open at once. An initialize beyond it ends the least recently used session that
  // has no request in flight and has been idle for session_idle; when there is none, 503.
  size_t max_sessions = 64;
  std::chrono::seconds session_idle{600};
};

// Adds POST, GET and DELETE /mcp (scope read; admin_tools need admin). The sessions live as long
// as the routes' handlers, that is as long as the Router: destroying it ends them (their calls
// are cancelled and waited for).
void addMcpRoutes(httpd::Router& router, McpHttpOptions options);

}  // namespace oe::service

// The tools and resources `oe mcp` serves (docs/mcp.md): upstream's oe-mcp tools (reference
// §9.3) and oe's own. Adding a tool is one entry of kTools in tools.cpp (name, title,
// description, input schema, hints) plus its handler there.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "oe/mcp/path_guard.hpp"
#include "oe/mcp/server.hpp"

namespace oe::mcp {

struct McpContext {
  PathGuard guard;          // every path argument and resource goes through it
  std::filesystem::path oe_exe;  // this binary: the long tools run it as a child
};

std::vector<mcp::Tool> mcpTools(std::shared_ptr<const McpContext> context);

// Run logs and state snapshots of the experiences under the roots, as
// oe://runs/<percent-encoded experience folder>/<run-id> (the JSONL event log) and
// oe://state/<percent-encoded experience folder> (the state as JSON).
mcp::Resources mcpResources(std::shared_ptr<const McpContext> context);

}  // namespace oe::mcp

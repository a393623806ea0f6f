#include "oe/service/parts.hpp"

#include <memory>
#include <string>

#include "oe/common/clock.hpp"
#include "oe/mcp/tools.hpp"
#include "oe/service/mcp_http.hpp"
#include "oe/service/read_routes.hpp"
#include "oe/service/run_queue.hpp"
#include "oe/webui/webui.hpp"

namespace oe::service {

namespace {

constexpr const char* kMcpInstructions =
    "oe runs AI workflows written as YAML (experiences), here on an `oe serve` host. Validate "
    "with oe_validate, run with oe_run (progress per node; cancel to interrupt, then "
    "oe_resume), read results with oe_state, oe_inspect and oe_runs. Paths must lie under the "
    "server's --root.";

}  // namespace

QueueLister queueLister(RunQueue* queue) {
  return [queue] {
    std::vector<QueueEntry> entries;
    auto listed = queue->list();
    if (!listed) {
      return entries;
    }
    for (const auto& run : *listed) {
      entries.push_back(
          QueueEntry{run.run_id, run.experience, run.state, run.priority,
                     isoTime(run.enqueued_ms / 1000, static_cast<int>(run.enqueued_ms % 1000)),
                     run.cancelled_ms});
    }
    return entries;
  };
}

std::vector<RouteRegistrar> standardParts(TriggerService& triggers,
                                          const std::filesystem::path& oe_exe) {
  return {
      [](httpd::Router& router, const ServiceContext& context) {
        addReadRoutes(router, ReadContext{context.root, context.store,
                                          context.queue != nullptr ? queueLister(context.queue)
                                                                   : QueueLister()});
      },
      [&triggers](httpd::Router& router, const ServiceContext&) { triggers.addRoutes(router); },
      [oe_exe](httpd::Router& router, const ServiceContext& context) {
        auto guard = mcp::PathGuard::create({context.root}, context.root);
        if (!guard) {
          // The root is canonical and exists (the command checked): not expected.
          say("/mcp is not served: " + guard.error().message);
          return;
        }
        auto mcp_context =
            std::make_shared<const mcp::McpContext>(mcp::McpContext{std::move(*guard), oe_exe});
        McpHttpOptions options;
        options.info.version = OE_VERSION_STRING;
        options.info.instructions = kMcpInstructions;
        options.tools = [mcp_context] { return mcp::mcpTools(mcp_context); };
        options.resources = [mcp_context] { return mcp::mcpResources(mcp_context); };
        // What starts, continues or writes: an admin token's (docs/serve.md, "MCP over HTTP").
        options.admin_tools = {"oe_run",   "oe_resume",       "oe_decide", "oe_evolve",
                               "oe_ultra", "oe_ultra_revise", "oe_init"};
        addMcpRoutes(router, std::move(options));
      },
      [](httpd::Router& router, const ServiceContext&) { webui::addDashboardRoutes(router); },
  };
}

}  // namespace oe::service

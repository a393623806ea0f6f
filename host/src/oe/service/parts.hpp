// The parts of `oe serve` beyond buildRouter's own routes, as the command composes them: the
// read side (experiences, runs, events, state, metrics, OpenAPI), the triggers' webhooks and
// schedules, MCP over HTTP, the dashboard. One list, so the command and the OpenAPI test build
// the same router.
#pragma once

#include <filesystem>
#include <vector>

#include "oe/service/read_context.hpp"
#include "oe/service/service.hpp"
#include "oe/service/trigger_service.hpp"

namespace oe::service {

// `oe_exe`: the binary MCP's long tools run as a child (the server's own). `triggers` outlives
// the router the registrars fill.
std::vector<RouteRegistrar> standardParts(TriggerService& triggers,
                                          const std::filesystem::path& oe_exe);

// What the read side lists of `queue` (not null): its queued, running and cancelled entries.
QueueLister queueLister(RunQueue* queue);

}  // namespace oe::service

// The read side of `oe serve`'s API in one call: experiences, runs, events (JSON and SSE), state,
// the report, /metrics and /api/openapi.json (docs/serve.md). The write side (starting,
// cancelling, resuming, deleting runs, approvals) adds its own routes to the same router.
#pragma once

#include "oe/httpd/router.hpp"
#include "oe/service/read_context.hpp"

namespace oe::service {

// Adds every read route. `context.root` is made absolute and canonical (an error names a root
// that does not exist: std::invalid_argument, a start-up failure of the command). The handlers
// share one LogHub (the SSE tailers' thread) and one RunStatsCache, owned by the router's
// handlers: they live as long as the router.
void addReadRoutes(httpd::Router& router, const ReadContext& context);

}  // namespace oe::service

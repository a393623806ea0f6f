// The runs as the API reads them (docs/serve.md, "Reading runs"): the list (queued runs first,
// then the logs under the root, newest first; filters and cursor paging), one run (status,
// times, counts, tokens and cost, the node timeline), one node of it (inputs, output, errors,
// its events, retries, tokens, the diffs of a worktree node) and the HTML report.
#pragma once

#include <memory>

#include "oe/httpd/router.hpp"
#include "oe/service/metrics.hpp"
#include "oe/service/read_context.hpp"

namespace oe::service {

void addRunReadRoutes(httpd::Router& router, std::shared_ptr<const ReadContext> context,
                      std::shared_ptr<RunStatsCache> stats);

}  // namespace oe::service

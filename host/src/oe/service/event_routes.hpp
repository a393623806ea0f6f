// A run's events over HTTP (docs/serve.md, "Live events"): paged JSON of its log lines, the
// Server-Sent Events stream of one run (from a Last-Event-ID or ?after= on), and the stream of
// every run's new lines.
#pragma once

#include <memory>

#include "oe/httpd/router.hpp"
#include "oe/service/log_tailer.hpp"
#include "oe/service/read_context.hpp"

namespace oe::service {

void addEventRoutes(httpd::Router& router, std::shared_ptr<const ReadContext> context,
                    std::shared_ptr<LogHub> hub);

}  // namespace oe::service

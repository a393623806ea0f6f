// addReadRoutes: the read side's routes on one router, sharing one tailer hub and stats cache.
#include "oe/service/read_routes.hpp"

#include <memory>
#include <stdexcept>
#include <system_error>

#include "oe/service/event_routes.hpp"
#include "oe/service/experience_routes.hpp"
#include "oe/service/log_tailer.hpp"
#include "oe/service/metrics.hpp"
#include "oe/service/openapi.hpp"
#include "oe/service/run_read_routes.hpp"
#include "oe/service/state_routes.hpp"

namespace oe::service {

void addReadRoutes(httpd::Router& router, const ReadContext& context) {
  auto shared = std::make_shared<ReadContext>(context);
  std::error_code ec;
  shared->root = std::filesystem::canonical(std::filesystem::absolute(context.root), ec);
  if (ec) {
    throw std::invalid_argument("--root " + context.root.string() + ": " + ec.message() +
                                "; name an existing folder holding the experiences to serve");
  }
  if (!shared->index) {
    shared->index = std::make_shared<ExperienceIndex>();
  }
  if (!shared->run_lists) {
    shared->run_lists = std::make_shared<runs::RunListCache>();
  }
  auto hub = std::make_shared<LogHub>();
  auto stats = std::make_shared<RunStatsCache>();
  const std::shared_ptr<const ReadContext> read = shared;
  addExperienceRoutes(router, read);
  addRunReadRoutes(router, read, stats);
  addEventRoutes(router, read, hub);
  addStateRoutes(router, read);
  addMetricsRoute(router, read, stats);
  addOpenApiRoute(router);
}

}  // namespace oe::service

// The routes that change runs (docs/serve.md, "Routes"): POST /api/runs queues one, cancel,
// resume and DELETE. Each answers at once; the launcher does the work.
#pragma once

#include <string>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/httpd/router.hpp"
#include "oe/service/run_queue.hpp"
#include "oe/service/service.hpp"

namespace oe::service {

void addRunRoutes(httpd::Router& router, const ServiceContext& context);

// A request's body as a JSON object (an empty body is {}); the error says what it must be.
Result<Json> parseBodyObject(const httpd::Request& req);

// Queues a new run of the experience `found` (`oe run --args ARGS`) under a new id, and wakes
// the launcher. POST /api/runs and the triggers (a cron fire, a webhook delivery) queue so.
Result<QueuedRun> queueRun(const ServiceContext& ctx, const ExperienceAt& found, Json args,
                           Json options, int priority);

// Queues `oe resume RUN_ID` of the experience in `folder` (relative to the root, `name` its
// name) as a new run with an id of its own, and wakes the launcher. The approval routes continue
// a run so.
Result<QueuedRun> queueResume(const ServiceContext& ctx, const std::string& name,
                              const std::string& folder, const std::string& run_id, int priority);

}  // namespace oe::service

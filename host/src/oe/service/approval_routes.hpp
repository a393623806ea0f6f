// The approval routes (docs/serve.md, "Routes"; docs/policy.md, "Approvals"): the questions
// parked runs wait on, and a person's decision, after which the run is continued through the
// queue (an `oe resume` the launcher starts), never inside the request.
#pragma once

#include "oe/httpd/router.hpp"
#include "oe/service/service.hpp"

namespace oe::service {

void addApprovalRoutes(httpd::Router& router, const ServiceContext& context);

}  // namespace oe::service

// A run's state over HTTP (docs/serve.md, "Reading runs"): the state as the run left it (every
// field's value at the run's end, from the experience's state history), one field, its
// history, and the fields where two runs left different values. On SQLite the experience's
// state.sqlite, on PostgreSQL the scope's rows: the same StateStore `oe state` reads.
#pragma once

#include <memory>

#include "oe/httpd/router.hpp"
#include "oe/service/read_context.hpp"

namespace oe::service {

void addStateRoutes(httpd::Router& router, std::shared_ptr<const ReadContext> context);

}  // namespace oe::service

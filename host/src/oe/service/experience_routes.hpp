// The experiences under --root over HTTP (docs/serve.md, "Reading runs"): the list, one parsed,
// `oe validate`'s diagnostics, the graph (with the report's SVG) and the JSON Schema of its args
// and state for a start form. Only describing: plugins are read from their manifests
// (plugins::Access::kDescribe), so nothing from an experience's folder runs before it is
// trusted (docs/trust.md).
#pragma once

#include <memory>

#include "oe/httpd/router.hpp"
#include "oe/service/read_context.hpp"

namespace oe::service {

void addExperienceRoutes(httpd::Router& router, std::shared_ptr<const ReadContext> context);

// The start form's schemas: `args` (run-level args: an open object, since experience.yaml does
// not declare them; the last run's args as an example) and `state` (state.schema as a JSON
// Schema object, merge strategies kept as x-oe-merge).
[[nodiscard]] Json startFormSchema(const Json& raw, const Json* last_args);

}  // namespace oe::service

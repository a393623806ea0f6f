// What `oe serve`'s routes share (ServiceContext) and the Router made of them: the write side
// (runs, approvals, health: this module's run_routes, approval_routes) and whatever other parts
// register (the read side's addReadRoutes, MCP over HTTP, triggers), given as registrars so
// each part adds its own routes without this file knowing them.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/httpd/router.hpp"

namespace oe::service {

class RunQueue;
class Launcher;

struct ServiceContext {
  std::filesystem::path root;  // --root: absolute and canonical; experiences are found below it
  std::string store;           // --store URL; empty: each experience's .openexpertise/ files
  bool workers = false;        // --workers: children run with --workers
  int max_concurrent_runs = 4;  // --max-concurrent-runs: the global cap and per-experience default
  RunQueue* queue = nullptr;    // never null in a running service
  Launcher* launcher = nullptr;  // never null in a running service
};

using RouteRegistrar = std::function<void(httpd::Router&, const ServiceContext&)>;

// The service's own routes (GET /healthz, the run and approval routes) and then each registrar's.
// `context` must outlive the router.
httpd::Router buildRouter(const ServiceContext& context,
                          const std::vector<RouteRegistrar>& registrars);

// The experience folder an API name means: `name` relative to the root ("hello",
// "team/review"), holding an experience.yaml, and still below the root once `..` and symlinks
// are resolved. An absolute name, a `..` segment or a path that leaves the root is refused (the
// error says so); a name with no experience is an error naming it. Returns the canonical folder.
Result<std::filesystem::path> experienceDir(const std::filesystem::path& root,
                                            std::string_view name);

}  // namespace oe::service

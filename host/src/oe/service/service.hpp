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
#include "oe/runs/run_history.hpp"

namespace oe::service {

class RunQueue;
class Launcher;

struct ServiceContext {
  std::filesystem::path root;    // --root: absolute and canonical; experiences are found below it
  std::string store;             // --store URL; empty: each experience's .openexpertise/ files
  bool workers = false;          // --workers: children run with --workers
  int max_concurrent_runs = 4;   // --max-concurrent-runs: the global cap and per-experience default
  RunQueue* queue = nullptr;     // never null in a running service
  Launcher* launcher = nullptr;  // never null in a running service
};

using RouteRegistrar = std::function<void(httpd::Router&, const ServiceContext&)>;

// Writes "oe serve: <line>\n" to `fd` (stderr unless told) with a single write(2), so that the
// lines the server's threads print never interleave in a log that takes both stdout and stderr.
void say(std::string_view line, int fd = 2);

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
// An experience as the API names it: `name` is either its folder relative to the root (as
// experienceDir takes it) or the `name:` of its experience.yaml, when exactly one experience
// below the root has that name (two: an error naming both folders).
struct ExperienceAt {
  std::string name;           // `name:` of its experience.yaml (the folder when it has none)
  std::string folder;         // relative to the root
  std::filesystem::path dir;  // canonical
};
Result<ExperienceAt> findExperience(const std::filesystem::path& root, std::string_view name);
// The `name:` of the experience in `dir`, else `fallback`.
std::string experienceName(const std::filesystem::path& dir, const std::string& fallback);

// The syntax part of that check alone (a 400 where experienceDir's other errors are a 404).
Result<void> checkExperienceName(std::string_view name);

// The experiences below `root` (folders with an experience.yaml, at most 4 levels down, hidden
// folders and node_modules skipped) by the name the API uses: their path relative to the root.
std::vector<std::string> experienceNames(const std::filesystem::path& root);

// A run found among the logs of the experiences below the root.
struct LocatedRun {
  std::string experience;          // its name (`name:`)
  std::string folder;              // its folder relative to the root
  std::filesystem::path dir;       // the experience folder
  std::filesystem::path runs_dir;  // its .openexpertise/runs
  runs::RunRecord record;          // with details (status, chain)
};
// The run whose id is `id` or starts with it (exactly one). The error says none or which.
Result<LocatedRun> locateRun(const std::filesystem::path& root, std::string_view id);

}  // namespace oe::service

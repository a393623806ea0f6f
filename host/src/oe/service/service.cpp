// The router of `oe serve` and what its write-side routes share: the confinement of experience
// names to --root, and finding a run by id among the experiences below it.
#include "oe/service/service.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "oe/mcp/path_guard.hpp"
#include "oe/service/approval_routes.hpp"
#include "oe/service/run_queue.hpp"
#include "oe/service/run_routes.hpp"
#include "oe/spec/loader.hpp"
#include "oe/spec/workspace.hpp"

namespace oe::service {

void say(std::string_view line, int fd) {
  std::string text = "oe serve: ";
  text.append(line);
  text.push_back('\n');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;  // nowhere to report that the log itself cannot be written
    }
    done += static_cast<size_t>(n);
  }
}


Result<void> checkExperienceName(std::string_view name) {
  if (name.empty()) {
    return makeError(
        "\"experience\" is empty: name an experience folder under the server's root "
        "(GET /api/experiences lists them)");
  }
  if (name.front() == '/' || name.find('\0') != std::string_view::npos ||
      name.find('\\') != std::string_view::npos) {
    return makeError("\"experience\" must be a folder relative to the server's root, not \"" +
                     std::string(name) + "\" (GET /api/experiences lists them)");
  }
  size_t start = 0;
  while (start <= name.size()) {
    const size_t slash = std::min(name.find('/', start), name.size());
    const std::string_view part = name.substr(start, slash - start);
    if (part == ".." || part == "." || part.empty()) {
      return makeError("\"experience\" \"" + std::string(name) +
                       "\" has an empty, `.` or `..` segment: name a folder below the server's "
                       "root as GET /api/experiences lists it");
    }
    start = slash + 1;
  }
  return {};
}

Result<std::filesystem::path> experienceDir(const std::filesystem::path& root,
                                            std::string_view name) {
  if (auto checked = checkExperienceName(name); !checked) {
    return checked.error();
  }
  std::error_code ec;
  const auto dir = std::filesystem::canonical(root / std::string(name), ec);
  // A symlink below the root that points elsewhere resolves outside it: refused as not found,
  // saying why, so the API reaches nothing the root does not hold.
  if (!ec && !mcp::isWithin(dir, root)) {
    return makeError("experience \"" + std::string(name) + "\" resolves to " + dir.string() +
                     ", outside the server's root " + root.string() +
                     "; only experiences below --root can be run");
  }
  if (ec || !std::filesystem::is_regular_file(dir / "experience.yaml", ec)) {
    return makeError("no experience \"" + std::string(name) + "\" under " + root.string() +
                     " (a folder with an experience.yaml); GET /api/experiences lists them");
  }
  return dir;
}

std::string experienceName(const std::filesystem::path& dir, const std::string& fallback) {
  const auto loaded = spec::loadExperience(dir / "experience.yaml");
  if (loaded.experience && !loaded.experience->name.empty()) {
    return loaded.experience->name;
  }
  return fallback;
}

Result<ExperienceAt> findExperience(const std::filesystem::path& root, std::string_view name) {
  if (auto checked = checkExperienceName(name); !checked) {
    return checked.error();
  }
  auto dir = experienceDir(root, name);
  if (dir) {
    return ExperienceAt{experienceName(*dir, std::string(name)), std::string(name), *dir};
  }
  std::vector<ExperienceAt> named;
  for (const auto& folder : experienceNames(root)) {
    auto at = experienceDir(root, folder);
    if (at && experienceName(*at, "") == name) {
      named.push_back(ExperienceAt{std::string(name), folder, *at});
    }
  }
  if (named.size() == 1) {
    return std::move(named.front());
  }
  if (named.size() > 1) {
    return makeError("two experiences below the root are named \"" + std::string(name) + "\" (" +
                     named[0].folder + ", " + named[1].folder + "); name one by its folder");
  }
  return dir.error();
}

std::vector<std::string> experienceNames(const std::filesystem::path& root) {
  std::vector<std::string> names;
  std::error_code ec;
  auto it = std::filesystem::recursive_directory_iterator(
      root, std::filesystem::directory_options::skip_permission_denied, ec);
  for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const auto& entry = *it;
    const auto file = entry.path().filename().string();
    if (entry.is_directory(ec) &&
        (file.starts_with('.') || file == "node_modules" || it.depth() >= 4)) {
      it.disable_recursion_pending();
      continue;
    }
    if (file == "experience.yaml" && entry.is_regular_file(ec)) {
      const auto dir = entry.path().parent_path();
      if (dir != root) {
        names.push_back(std::filesystem::relative(dir, root).generic_string());
      }
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<LocatedRun> locateRun(const std::filesystem::path& root, std::string_view id) {
  std::vector<LocatedRun> found;
  for (const auto& name : experienceNames(root)) {
    auto dir = experienceDir(root, name);
    if (!dir) {
      continue;
    }
    const auto runs_dir = spec::workspaceDir(*dir / "experience.yaml") / "runs";
    for (auto& run : runs::listRuns(runs_dir, true)) {
      if (run.id == id) {
        return LocatedRun{experienceName(*dir, name), name, *dir, runs_dir, std::move(run)};
      }
      if (run.id.starts_with(id)) {
        found.push_back(
            LocatedRun{experienceName(*dir, name), name, *dir, runs_dir, std::move(run)});
      }
    }
  }
  if (found.size() == 1) {
    return std::move(found.front());
  }
  if (found.empty()) {
    return makeError("no run \"" + std::string(id) + "\" under " + root.string() +
                     "; GET /api/runs lists the runs");
  }
  std::string ids;
  for (const auto& f : found) {
    ids += (ids.empty() ? "" : ", ") + f.record.id;
  }
  return makeError("\"" + std::string(id) + "\" is the prefix of several runs (" + ids +
                   "); give more of the id");
}

httpd::Router buildRouter(const ServiceContext& context,
                          const std::vector<RouteRegistrar>& registrars) {
  httpd::Router router;
  router.add("GET", "/healthz", httpd::Scope::kPublic, [&context](const httpd::Request&) {
    // The queue is the store the service needs for anything it does: it answering is health.
    if (context.queue != nullptr) {
      if (auto listed = context.queue->list(); !listed) {
        return httpd::problem(503, "store-unreachable", "Store unreachable",
                              listed.error().message);
      }
    }
    return httpd::jsonResponse(200, Json{{"status", "ok"}});
  });
  addRunRoutes(router, context);
  addApprovalRoutes(router, context);
  for (const auto& registrar : registrars) {
    registrar(router, context);
  }
  return router;
}

}  // namespace oe::service

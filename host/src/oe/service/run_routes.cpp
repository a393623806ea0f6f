// POST /api/runs, POST /api/runs/{id}/cancel, POST /api/runs/{id}/resume, DELETE /api/runs/{id}
// (docs/serve.md, "Runs started from the API").
#include "oe/service/run_routes.hpp"

#include <chrono>
#include <system_error>

#include "oe/events/event_log.hpp"
#include "oe/pg/connection.hpp"
#include "oe/pgstore/gc.hpp"
#include "oe/pgstore/run_record.hpp"
#include "oe/pgstore/store_connection.hpp"
#include "oe/runs/gc.hpp"
#include "oe/service/launcher.hpp"
#include "oe/service/run_queue.hpp"
#include "oe/spec/loader.hpp"

namespace oe::service {
namespace {

using httpd::problem;
using httpd::Request;
using httpd::Response;

Response badRequest(const std::string& detail) {
  return problem(400, "invalid-request", "Invalid request", detail);
}

Response storeProblem(const Error& error) {
  return problem(503, "store-unreachable", "Store unreachable",
                 error.message + "; try again once the store answers (GET /healthz)");
}

// runtime.max_concurrent_runs of the experience (an oe key, docs/serve.md), 0 when unset.
int maxConcurrentOf(const std::filesystem::path& dir) {
  const auto loaded = spec::loadExperience(dir / "experience.yaml");
  if (!loaded.experience) {
    return 0;
  }
  const Json& raw = loaded.experience->raw;
  if (!raw.is_object()) {
    return 0;
  }
  auto rt = raw.find("runtime");
  if (rt == raw.end() || !rt->is_object()) {
    return 0;
  }
  auto max = rt->find("max_concurrent_runs");
  return max != rt->end() && max->is_number_integer() && max->get<int64_t>() > 0
             ? static_cast<int>(std::min<int64_t>(max->get<int64_t>(), 1'000'000))
             : 0;
}

// The priority member of a body: absent is the default; else an integer 1..10.
Result<int> priorityOf(const Json& body) {
  auto p = body.find("priority");
  if (p == body.end()) {
    return kDefaultPriority;
  }
  if (!p->is_number_integer() || p->get<int64_t>() < kMinPriority ||
      p->get<int64_t>() > kMaxPriority) {
    return makeError("\"priority\" must be an integer from 1 to 10 (10 starts first; default 5)");
  }
  return static_cast<int>(p->get<int64_t>());
}

Result<Json> optionsOf(const Json& body) {
  auto o = body.find("options");
  if (o == body.end() || o->is_null()) {
    return Json::object();
  }
  if (!o->is_object()) {
    return makeError("\"options\" must be an object: {concurrency?, no_cache?, llm?}");
  }
  for (const auto& [key, value] : o->items()) {
    if (key == "concurrency") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1) {
        return makeError("\"options.concurrency\" must be an integer of at least 1");
      }
    } else if (key == "no_cache") {
      if (!value.is_boolean()) {
        return makeError("\"options.no_cache\" must be true or false");
      }
    } else if (key == "llm") {
      if (!value.is_string() || (value != "anthropic" && value != "openai")) {
        return makeError("\"options.llm\" must be \"anthropic\" or \"openai\"");
      }
    } else {
      return makeError("\"options\" has no member \"" + key +
                       "\"; it takes concurrency, no_cache and llm");
    }
  }
  return *o;
}

// The queue entry `id` names (a full id or the prefix of exactly one); nullopt when none does.
Result<std::optional<QueuedRun>> queuedEntry(RunQueue& queue, std::string_view id) {
  auto all = queue.list();
  if (!all) {
    return all.error();
  }
  std::optional<QueuedRun> match;
  int matches = 0;
  for (auto& e : *all) {
    if (e.run_id == id) {
      return std::optional<QueuedRun>(std::move(e));
    }
    if (e.run_id.starts_with(id)) {
      ++matches;
      match = e;
    }
  }
  if (matches > 1) {
    return makeError("\"" + std::string(id) +
                     "\" is the prefix of several queued runs; give "
                     "more of the id");
  }
  return match;
}

// Stamps and queues `entry`, and wakes the launcher to look at the queue now.
Result<QueuedRun> enqueue(const ServiceContext& ctx, QueuedRun entry) {
  entry.enqueued_ms = nowMs();
  if (auto queued = ctx.queue->enqueue(entry); !queued) {
    return std::move(queued).error();
  }
  ctx.launcher->wake();
  return entry;
}

}  // namespace

Result<QueuedRun> queueRun(const ServiceContext& ctx, const ExperienceAt& found, Json args,
                           Json options, int priority) {
  QueuedRun entry;
  entry.run_id = events::newRunId();
  entry.experience = found.name;
  entry.folder = found.folder;
  entry.args = std::move(args);
  entry.options = std::move(options);
  entry.priority = priority;
  entry.max_concurrent = maxConcurrentOf(found.dir);
  return enqueue(ctx, std::move(entry));
}

namespace {

Response postRun(const ServiceContext& ctx, const Request& req) {
  auto body = parseBodyObject(req);
  if (!body) {
    return badRequest(body.error().message);
  }
  for (const auto& [key, value] : body->items()) {
    if (key != "experience" && key != "args" && key != "priority" && key != "options") {
      return badRequest("the body has no member \"" + key +
                        "\"; it takes experience, args, priority and options");
    }
  }
  auto name = body->find("experience");
  if (name == body->end() || !name->is_string()) {
    return badRequest(
        "\"experience\" (a string) is required: an experience folder under the "
        "server's root, as GET /api/experiences names it");
  }
  const std::string experience = name->get<std::string>();
  if (auto checked = checkExperienceName(experience); !checked) {
    return badRequest(checked.error().message);
  }
  auto found = findExperience(ctx.root, experience);
  if (!found) {
    return problem(404, "experience-not-found", "No such experience", found.error().message);
  }
  Json args = Json::object();
  if (auto a = body->find("args"); a != body->end() && !a->is_null()) {
    if (!a->is_object()) {
      return badRequest("\"args\" must be an object (the run's --args)");
    }
    args = *a;
  }
  auto priority = priorityOf(*body);
  if (!priority) {
    return badRequest(priority.error().message);
  }
  auto options = optionsOf(*body);
  if (!options) {
    return badRequest(options.error().message);
  }
  auto queued = queueRun(ctx, *found, std::move(args), std::move(options).value(), *priority);
  if (!queued) {
    return storeProblem(queued.error());
  }
  auto response = httpd::jsonResponse(202, Json{{"id", queued->run_id}, {"status", "queued"}});
  response.headers.emplace_back("Location", "/api/runs/" + queued->run_id);
  return response;
}

Response cancelRun(const ServiceContext& ctx, const Request& req) {
  const std::string& id = req.params.at("id");
  auto entry = queuedEntry(*ctx.queue, id);
  if (!entry) {
    return storeProblem(entry.error());
  }
  if (*entry && (*entry)->state == "cancelled") {
    return problem(409, "run-cancelled", "Run already cancelled",
                   "run " + (*entry)->run_id +
                       " was cancelled before it started; nothing to cancel (DELETE "
                       "/api/runs/" +
                       (*entry)->run_id + " removes it)");
  }
  if (*entry) {
    auto cancelled = ctx.launcher->cancel((*entry)->run_id);
    if (!cancelled) {
      return storeProblem(cancelled.error());
    }
    switch (*cancelled) {
      case Launcher::Cancel::kCancelled:
        return httpd::jsonResponse(200, Json{{"id", (*entry)->run_id}, {"status", "cancelled"}});
      case Launcher::Cancel::kStopping:
        // SIGTERM sent: the run records itself interrupted (resumable) as it stops.
        return httpd::jsonResponse(202, Json{{"id", (*entry)->run_id}, {"status", "stopping"}});
      default:
        return problem(409, "run-elsewhere", "Run started by another server",
                       "run " + (*entry)->run_id + " runs under the server " + (*entry)->owner +
                           "; cancel it there (or wait: it is taken over if that server "
                           "stops)");
    }
  }
  auto located = locateRun(ctx.root, id);
  if (!located) {
    return problem(404, "run-not-found", "No such run", located.error().message);
  }
  return problem(409, "run-not-running", "Run not running",
                 "run " + located->record.id + " is not queued or running here (its status: " +
                     located->record.status + "); nothing to cancel");
}

}  // namespace

Result<Json> parseBodyObject(const Request& req) {
  if (req.body.empty()) {
    return Json::object();
  }
  Json body = Json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return makeError("the body must be a JSON object");
  }
  return body;
}

Result<QueuedRun> queueResume(const ServiceContext& ctx, const std::string& name,
                              const std::string& folder, const std::string& run_id, int priority) {
  QueuedRun entry;
  entry.run_id = events::newRunId();
  entry.experience = name;
  entry.folder = folder;
  entry.kind = "resume";
  entry.resume_of = run_id;
  entry.priority = priority;
  if (auto dir = experienceDir(ctx.root, folder); dir) {
    entry.max_concurrent = maxConcurrentOf(*dir);
  }
  return enqueue(ctx, std::move(entry));
}

namespace {

Response resumeRun(const ServiceContext& ctx, const Request& req) {
  auto body = parseBodyObject(req);
  if (!body) {
    return badRequest(body.error().message);
  }
  auto priority = priorityOf(*body);
  if (!priority) {
    return badRequest(priority.error().message);
  }
  const std::string& id = req.params.at("id");
  auto entry = queuedEntry(*ctx.queue, id);
  if (!entry) {
    return storeProblem(entry.error());
  }
  if (*entry && (*entry)->state == "cancelled") {
    return problem(409, "run-never-started", "Run never started",
                   "run " + (*entry)->run_id +
                       " was cancelled before it started: there is nothing to resume; start a "
                       "new run with POST /api/runs");
  }
  if (*entry) {
    return problem(409, "run-not-finished", "Run not finished",
                   "run " + (*entry)->run_id + " is " + (*entry)->state +
                       "; resume it once it has ended (or cancel it first)");
  }
  auto located = locateRun(ctx.root, id);
  if (!located) {
    return problem(404, "run-not-found", "No such run", located.error().message);
  }
  const auto& run = located->record;
  // A partial run is resumed like a failed one: its failed nodes run again, what landed stays.
  if (run.status == "success") {
    return problem(409, "run-succeeded", "Nothing to resume",
                   "run " + run.id + " succeeded; start a new run with POST /api/runs");
  }
  if (!run.finished() && runs::nowMs() - run.modified_ms < runs::kMaybeRunningMs) {
    // Not ours (not in the queue) and its log still moves: a terminal's `oe run`, perhaps.
    return problem(409, "run-maybe-running", "Run may be running",
                   "run " + run.id +
                       " has not finished and its log changed in the last 10 "
                       "minutes; stop it where it runs, then resume it");
  }
  auto queued = queueResume(ctx, located->experience, located->folder, run.id, *priority);
  if (!queued) {
    return storeProblem(queued.error());
  }
  return httpd::jsonResponse(
      202, Json{{"id", queued->run_id}, {"status", "queued"}, {"resume_of", run.id}});
}

// DELETE on a PostgreSQL store: the run's rows go as `oe gc` prunes a run (pgstore::pruneScope
// with GcPolicy::runs: events, attempts, the cache entries only it wrote and last used, its
// history rows but each field's newest full row and later, its write claims, the landed marks
// of its chain when no other run belongs to it, its oe_runs row), in one transaction, then its
// local log and output file when this machine has them.
//
// The scope's lock is not taken for a run that ended, so a DELETE does not wait for (or refuse
// because of) another run of the same experience: what goes is keyed by the deleted run, which
// writes none of it again, or is kept by pruneScope's rules for the runs still there (a running
// run's row is in oe_runs before its first write; its chain's marks, its history rows and the
// snapshot stay; pgstore/gc.hpp has the details). A row still `running` is either live (its
// coordinator holds the scope's lock: 409) or left by a killed coordinator; that one is removed
// under the scope's lock, as `oe gc` would.
Response deleteStoreRun(const ServiceContext& ctx, const std::string& id) {
  auto conn = pgstore::connect(ctx.store, std::chrono::seconds(5), "oe serve delete");
  if (!conn) {
    return storeProblem(conn.error());
  }
  auto found = pgstore::findRun(**conn, id, "");
  if (!found) {
    if (!(*conn)->healthy()) {
      return storeProblem(found.error());
    }
    return problem(404, "run-not-found", "No such run", found.error().message);
  }
  const pgstore::RunInfo& run = *found;
  if (run.status == "running") {
    auto free = pgstore::tryHoldScope(**conn, run.scope);
    if (!free) {
      return storeProblem(free.error());
    }
    if (!*free) {
      return problem(409, "run-maybe-running", "Run may be running",
                     "run " + run.run_id + " has not finished and its experience's scope \"" +
                         run.scope + "\" is held by " + pgstore::scopeHolder(**conn, run.scope) +
                         "; stop that run, or wait, then delete it");
    }
    if (auto held = pgstore::checkSessionHoldsScope(**conn, run.scope); !held) {
      return storeProblem(held.error());
    }
    // Fences off a coordinator of the scope that lost its session (as holdScope does for gc).
    if (auto taken = pgstore::takeScope(**conn, run.scope, "oe " + pgstore::coordinatorName());
        !taken) {
      return storeProblem(taken.error());
    }
  }
  pgstore::GcPolicy policy;
  policy.runs = {run.run_id};
  auto report = pgstore::pruneScope(**conn, run.scope, policy);
  if (!report) {
    return storeProblem(report.error());
  }
  if (report->removed.empty()) {
    // Deleted meanwhile by another request or `oe gc`.
    return problem(404, "run-not-found", "No such run",
                   "run " + run.run_id + " was removed meanwhile; GET /api/runs lists the runs");
  }
  uint64_t freed = static_cast<uint64_t>(report->bytes);
  if (auto located = locateRun(ctx.root, run.run_id);
      located && located->record.id == run.run_id) {
    freed += runs::removeLocalLogs(located->runs_dir, {run.run_id}, false);
  }
  std::error_code ec;
  std::filesystem::remove(childLogPath(ctx.root, run.run_id), ec);
  return httpd::jsonResponse(
      200, Json{{"id", run.run_id}, {"deleted", true}, {"bytes_freed", freed}});
}

Response deleteRun(const ServiceContext& ctx, const Request& req) {
  const std::string& id = req.params.at("id");
  auto entry = queuedEntry(*ctx.queue, id);
  if (!entry) {
    return storeProblem(entry.error());
  }
  if (*entry && (*entry)->state == "cancelled") {
    // Cancelled before it started: its queue entry is all there is of it (no log, no rows).
    auto removed = ctx.queue->remove((*entry)->run_id);
    if (!removed) {
      return storeProblem(removed.error());
    }
    if (!*removed) {
      return problem(
          404, "run-not-found", "No such run",
          "run " + (*entry)->run_id + " was removed meanwhile; GET /api/runs lists the runs");
    }
    return httpd::jsonResponse(
        200, Json{{"id", (*entry)->run_id}, {"deleted", true}, {"bytes_freed", 0}});
  }
  if (*entry) {
    return problem(409, "run-not-finished", "Run not finished",
                   "run " + (*entry)->run_id + " is " + (*entry)->state +
                       "; cancel it (POST /api/runs/" + (*entry)->run_id +
                       "/cancel), then delete it once it has ended");
  }
  if (pg::isUrl(ctx.store)) {
    return deleteStoreRun(ctx, id);
  }
  auto located = locateRun(ctx.root, id);
  if (!located) {
    return problem(404, "run-not-found", "No such run", located.error().message);
  }
  const auto& run = located->record;
  if (!run.finished() && runs::nowMs() - run.modified_ms < runs::kMaybeRunningMs) {
    return problem(409, "run-maybe-running", "Run may be running",
                   "run " + run.id +
                       " has not finished and its log changed in the last 10 "
                       "minutes; stop it, or wait, then delete it");
  }
  // What `oe gc` removes of a run it prunes: its log and definition pin (the cache entries and
  // state history rows it alone used go at the next `oe gc`).
  const uint64_t freed = runs::removeLocalLogs(located->runs_dir, {run.id}, false);
  std::error_code ec;
  std::filesystem::remove(childLogPath(ctx.root, run.id), ec);
  if (std::filesystem::exists(located->runs_dir / (run.id + ".jsonl"), ec)) {
    return problem(500, "delete-failed", "Run not deleted",
                   "the log of run " + run.id + " in " + located->runs_dir.string() +
                       " could not be removed; check the folder's permissions");
  }
  return httpd::jsonResponse(200, Json{{"id", run.id}, {"deleted", true}, {"bytes_freed", freed}});
}

}  // namespace

void addRunRoutes(httpd::Router& router, const ServiceContext& context) {
  const ServiceContext* ctx = &context;
  router.add("POST", "/api/runs", httpd::Scope::kAdmin,
             [ctx](const Request& req) { return postRun(*ctx, req); });
  router.add("POST", "/api/runs/{id}/cancel", httpd::Scope::kAdmin,
             [ctx](const Request& req) { return cancelRun(*ctx, req); });
  router.add("POST", "/api/runs/{id}/resume", httpd::Scope::kAdmin,
             [ctx](const Request& req) { return resumeRun(*ctx, req); });
  router.add("DELETE", "/api/runs/{id}", httpd::Scope::kAdmin,
             [ctx](const Request& req) { return deleteRun(*ctx, req); });
}

}  // namespace oe::service

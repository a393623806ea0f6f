// GET /api/approvals and POST /api/approvals/{run}/{node}/approve|reject: what `oe approve` and
// `oe reject` do (approvals/, one decider wins), with the continuation queued for the launcher.
#include "oe/service/approval_routes.hpp"

#include <system_error>

#include "oe/approvals/approval_store.hpp"
#include "oe/approvals/decision_text.hpp"
#include "oe/pg/connection.hpp"
#include "oe/service/run_queue.hpp"
#include "oe/service/run_routes.hpp"
#include "oe/spec/workspace.hpp"

namespace oe::service {
namespace {

using httpd::problem;
using httpd::Request;
using httpd::Response;

std::string chainOf(const runs::RunRecord& run) {
  return run.chain_id.empty() ? run.id : run.chain_id;
}

// Where the approvals of an experience are: the store's table, or approvals.sqlite beside its
// run logs.
std::string approvalsWhere(const ServiceContext& ctx, const std::filesystem::path& dir) {
  if (pg::isUrl(ctx.store)) {
    return ctx.store;
  }
  return approvals::storePath(spec::workspaceDir(dir / "experience.yaml")).string();
}

Response listApprovals(const ServiceContext& ctx) {
  Json out = Json::array();
  const auto add = [&out, &ctx](approvals::Store& store,
                                 const std::string& experience) -> Result<void> {
    auto all = store.list();
    if (!all) {
      return all.error();
    }
    for (const auto& request : *all) {
      if (request.decision) {
        continue;
      }
      Json item = request.toJson();
      if (!experience.empty()) {
        item["experience"] = experience;
      } else if (auto located = locateRun(ctx.root, request.run_id);
                 located && located->record.id == request.run_id) {
        // A store's table holds every experience's approvals: the one below the root whose log
        // the run wrote names it (a run of another machine's folder is listed without one).
        item["experience"] = located->experience;
      }
      out.push_back(std::move(item));
    }
    return {};
  };
  if (pg::isUrl(ctx.store)) {
    auto store = approvals::Store::open(ctx.store);
    if (!store) {
      return problem(503, "store-unreachable", "Store unreachable", store.error().message);
    }
    if (auto added = add(**store, ""); !added) {
      return problem(503, "store-unreachable", "Store unreachable", added.error().message);
    }
    return httpd::jsonResponse(200, Json{{"approvals", std::move(out)}});
  }
  for (const auto& name : experienceNames(ctx.root)) {
    auto dir = experienceDir(ctx.root, name);
    if (!dir) {
      continue;
    }
    const std::string where = approvalsWhere(ctx, *dir);
    if (std::error_code ec; !std::filesystem::exists(where, ec)) {
      continue;  // never asked: opening it would create it
    }
    auto store = approvals::Store::open(where);
    if (!store) {
      return problem(500, "approvals-unreadable", "Approvals unreadable", store.error().message);
    }
    if (auto added = add(**store, experienceName(*dir, name)); !added) {
      return problem(500, "approvals-unreadable", "Approvals unreadable", added.error().message);
    }
  }
  return httpd::jsonResponse(200, Json{{"approvals", std::move(out)}});
}

Response decide(const ServiceContext& ctx, const Request& req, bool approve) {
  auto body = parseBodyObject(req);
  if (!body) {
    return problem(400, "invalid-request", "Invalid request", body.error().message);
  }
  std::string comment;
  std::string as;
  for (const auto& [key, value] : body->items()) {
    if ((key != "comment" && key != "as") || !value.is_string()) {
      return problem(400, "invalid-request", "Invalid request",
                     "the body takes {comment?, as?}, both strings; \"" + key + "\" is not one");
    }
    (key == "comment" ? comment : as) = value.get<std::string>();
  }
  const std::string& node = req.params.at("node");
  auto located = locateRun(ctx.root, req.params.at("run"));
  if (!located) {
    return problem(404, "run-not-found", "No such run", located.error().message);
  }
  const std::string chain_id = chainOf(located->record);
  auto store = approvals::Store::open(approvalsWhere(ctx, located->dir));
  if (!store) {
    return problem(503, "store-unreachable", "Store unreachable", store.error().message);
  }
  auto request = (*store)->find(chain_id, node);
  if (!request) {
    return problem(503, "store-unreachable", "Store unreachable", request.error().message);
  }
  if (!*request) {
    return problem(404, "approval-not-found", "No such approval",
                   "run " + located->record.id + " asks no approval of node \"" + node +
                       "\"; GET /api/approvals lists what waits");
  }
  // A deadline that passed is decided by its on_timeout first (the decide below reads it back).
  if (auto settled = (*store)->settleTimeout(**request, approvals::nowMs()); !settled) {
    return problem(503, "store-unreachable", "Store unreachable", settled.error().message);
  }
  approvals::Decision decision;
  decision.decision = approve ? "approved" : "rejected";
  decision.by =
      as.empty() ? (req.token_name.empty() ? approvals::deciderName("") : req.token_name) : as;
  decision.at = approvals::isoOfMs(approvals::nowMs());
  decision.comment = comment;
  auto decided = (*store)->decide(chain_id, node, decision);
  if (!decided) {
    return problem(503, "store-unreachable", "Store unreachable", decided.error().message);
  }
  if (!decided->won) {
    const auto& d = decided->request.decision;
    return problem(409, "already-decided", "Already decided",
                   "node \"" + node + "\" of run " + located->record.id + " was " +
                       (d ? d->decision + " by " + d->by + " at " + d->at : "decided") +
                       "; nothing was changed");
  }
  // The newest run of the chain is the one that parked: resumed through the queue, unless it
  // is queued or running already (a continuation asked twice).
  std::string newest = located->record.id;
  for (const auto& run : runs::listRuns(located->runs_dir, true)) {  // newest first
    if (chainOf(run) == chain_id) {
      newest = run.id;
      break;
    }
  }
  Json out = {{"approval", decided->request.toJson()}, {"continued", nullptr}};
  bool in_queue = false;
  if (auto all = ctx.queue->list(); all) {
    for (const auto& e : *all) {
      // A cancelled entry never started: it does not continue the chain.
      in_queue =
          in_queue || (e.state != "cancelled" && (e.run_id == newest || e.resume_of == newest));
    }
  }
  if (!in_queue) {
    auto queued = queueResume(ctx, located->experience, located->folder, newest, kDefaultPriority);
    if (!queued) {
      return problem(
          503, "store-unreachable", "Store unreachable",
          "the decision is recorded, but the run could not be queued: " + queued.error().message +
              "; POST /api/runs/" + newest + "/resume continues it");
    }
    out["continued"] = Json{{"id", queued->run_id}, {"status", "queued"}, {"resume_of", newest}};
  }
  return httpd::jsonResponse(200, out);
}

}  // namespace

void addApprovalRoutes(httpd::Router& router, const ServiceContext& context) {
  const ServiceContext* ctx = &context;
  router.add("GET", "/api/approvals", httpd::Scope::kRead,
             [ctx](const Request&) { return listApprovals(*ctx); });
  router.add("POST", "/api/approvals/{run}/{node}/approve", httpd::Scope::kAdmin,
             [ctx](const Request& req) { return decide(*ctx, req, true); });
  router.add("POST", "/api/approvals/{run}/{node}/reject", httpd::Scope::kAdmin,
             [ctx](const Request& req) { return decide(*ctx, req, false); });
}

}  // namespace oe::service

// GET /api/runs/{id}/state, /state/{field}, /state/{field}/history and /state-diff.
#include "oe/service/state_routes.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "oe/events/event_log.hpp"
#include "oe/pg/connection.hpp"
#include "oe/pgstore/pg_state_backend.hpp"
#include "oe/pgstore/scope.hpp"
#include "oe/run/run.hpp"
#include "oe/runs/run_analysis.hpp"
#include "oe/spec/loader.hpp"
#include "oe/state/state_store.hpp"

namespace oe::service {
namespace {

namespace fs = std::filesystem;
using httpd::Request;
using httpd::Response;

// One field's value when a run ended, and the rows of its history up to then.
struct FieldAtEnd {
  std::optional<Json> value;            // nullopt: no value yet
  std::vector<state::HistoryRow> rows;  // whole values (appends expanded), oldest first
};

// A run's view of its experience's state: the store, and where the run's end falls in the
// history (rows are numbered in write order; one writer per store at a time).
struct RunState {
  RunRef run;
  spec::Experience experience;
  std::unique_ptr<state::StateStore> store;  // null: no state written yet (SQLite, no file)
  int64_t last_row = -1;                     // the run's last history row, -1 if it wrote none
  std::string end_ts;                        // its run.finished, else its last event's ts
  std::vector<std::string> written;          // the fields it wrote, in write order, once each

  [[nodiscard]] bool upToEnd(const state::HistoryRow& row) const {
    return last_row >= 0 ? row.id <= last_row : (end_ts.empty() || row.ts <= end_ts);
  }

  Result<FieldAtEnd> field(const std::string& name) const {
    FieldAtEnd out;
    if (!store) {
      return out;
    }
    auto rows = store->history(name);
    if (!rows) {
      return std::move(rows).error();
    }
    for (auto& row : state::expandAppends(std::move(*rows))) {
      if (upToEnd(row)) {
        out.value = row.value_new;
        out.rows.push_back(std::move(row));
      }
    }
    return out;
  }
};

Found<std::unique_ptr<RunState>> openRunState(const ReadContext& context, std::string_view id) {
  auto run = findRunUnderRoot(context, id);
  if (!run.ok()) {
    return std::move(run.problem());
  }
  auto loaded = spec::loadExperience(run->experience.yaml);
  if (!loaded.experience) {
    std::string why;
    for (const auto& d : loaded.diagnostics) {
      why += (why.empty() ? "" : "; ") + d.format();
    }
    return httpd::problem(422, "experience-invalid", "The experience does not load",
                          "the state schema of " + run->experience.yaml.string() +
                              " cannot be read: " + why + ". Fix the file (POST /api/experiences/" +
                              run->experience.name + "/validate lists the errors)");
  }
  auto out = std::make_unique<RunState>();
  out->run = std::move(*run);
  out->experience = std::move(*loaded.experience);
  Result<std::unique_ptr<state::StateStore>> store = makeError("not opened");
  if (pg::isUrl(context.store_url)) {
    auto backend = pgstore::PgStateBackend::open(
        context.store_url, pgstore::storeScope(out->experience.name, out->experience.file),
        pgstore::storeRetry());
    if (!backend) {
      return httpd::problem(503, "store-unavailable", "The store cannot be reached",
                            "cannot open the store " + pg::redact(context.store_url) + ": " +
                                backend.error().message + "; check that PostgreSQL is up");
    }
    store = state::StateStore::open(std::move(backend).value(), out->experience.state);
  } else {
    const fs::path db = run::statePath(out->experience);
    std::error_code ec;
    if (!confinedTo(db, context.root)) {
      return httpd::problem(403, "outside-root", "Outside the served root",
                            "the state store of " + out->experience.file.string() + " (" +
                                db.string() + ") resolves outside " + context.root.string() +
                                "; point state.store inside the root to serve it");
    }
    if (!fs::exists(db, ec)) {
      store = std::unique_ptr<state::StateStore>();  // nothing written yet: every field unset
    } else {
      store = state::StateStore::open(db, out->experience.state);
    }
  }
  if (!store) {
    return httpd::problem(500, "state-unreadable", "The state cannot be read",
                          store.error().message);
  }
  out->store = std::move(*store);
  if (out->store) {
    auto rows = out->store->historyForRun(out->run.record.id);
    if (!rows) {
      return httpd::problem(500, "state-unreadable", "The state history cannot be read",
                            rows.error().message);
    }
    for (const auto& row : *rows) {
      out->last_row = std::max(out->last_row, row.id);
      if (std::find(out->written.begin(), out->written.end(), row.field) == out->written.end()) {
        out->written.push_back(row.field);
      }
    }
  }
  if (auto log = events::readEventLog(out->run.record.log); log && !log->events.empty()) {
    const auto model = runs::analyse(log->events);
    out->end_ts = stringField(
        model.finished_event.is_object() ? model.finished_event : log->events.back(), "ts");
  }
  return out;
}

Response notAField(const RunState& state, const std::string& field) {
  return httpd::problem(404, "field-not-found", "No such state field",
                        "\"" + field + "\" is not a field of state.schema in " +
                            state.experience.file.string() + "; GET /api/experiences/" +
                            state.experience.name + "/schema lists the fields");
}

Result<Json> stateAtEnd(const RunState& state) {
  Json values = Json::object();
  for (const auto& spec_field : state.experience.state.fields) {
    auto at_end = state.field(spec_field.name);
    if (!at_end) {
      return std::move(at_end).error();
    }
    if (at_end->value) {
      values[spec_field.name] = *at_end->value;
    }
  }
  return values;
}

Json rowJson(const state::HistoryRow& row) {
  return {{"id", row.id},
          {"run_id", row.run_id},
          {"node_id", row.node_id},
          {"ts", row.ts},
          {"value_old", row.value_old ? *row.value_old : Json()},
          {"value_new", row.value_new}};
}

Response failed(const Error& error) {
  return httpd::problem(500, "state-unreadable", "The state cannot be read", error.message);
}

}  // namespace

void addStateRoutes(httpd::Router& router, std::shared_ptr<const ReadContext> context) {
  router.add("GET", "/api/runs/{id}/state", httpd::Scope::kRead,
             [context](const Request& request) -> Response {
               auto state = openRunState(*context, request.params.at("id"));
               if (!state.ok()) {
                 return std::move(state.problem());
               }
               auto values = stateAtEnd(**state);
               if (!values) {
                 return failed(values.error());
               }
               return httpd::jsonResponse(
                   200, {{"run_id", (*state)->run.record.id},
                         {"experience", (*state)->experience.name},
                         {"as_of", (*state)->end_ts.empty() ? Json() : Json((*state)->end_ts)},
                         {"state", std::move(*values)},
                         {"written", (*state)->written}});
             });
  router.add("GET", "/api/runs/{id}/state/{field}", httpd::Scope::kRead,
             [context](const Request& request) -> Response {
               auto state = openRunState(*context, request.params.at("id"));
               if (!state.ok()) {
                 return std::move(state.problem());
               }
               const std::string& field = request.params.at("field");
               if ((*state)->experience.state.find(field) == nullptr) {
                 return notAField(**state, field);
               }
               auto at_end = (*state)->field(field);
               if (!at_end) {
                 return failed(at_end.error());
               }
               const auto& written = (*state)->written;
               return httpd::jsonResponse(
                   200, {{"run_id", (*state)->run.record.id},
                         {"field", field},
                         {"set", at_end->value.has_value()},
                         {"value", at_end->value ? *at_end->value : Json()},
                         {"written_by_run",
                          std::find(written.begin(), written.end(), field) != written.end()}});
             });
  router.add("GET", "/api/runs/{id}/state/{field}/history", httpd::Scope::kRead,
             [context](const Request& request) -> Response {
               auto limit = listLimit(request);
               if (!limit.ok()) {
                 return std::move(limit.problem());
               }
               auto state = openRunState(*context, request.params.at("id"));
               if (!state.ok()) {
                 return std::move(state.problem());
               }
               const std::string& field = request.params.at("field");
               if ((*state)->experience.state.find(field) == nullptr) {
                 return notAField(**state, field);
               }
               auto at_end = (*state)->field(field);
               if (!at_end) {
                 return failed(at_end.error());
               }
               // The newest `limit` rows up to the run's end, oldest first.
               const auto& rows = at_end->rows;
               const size_t from = rows.size() > *limit ? rows.size() - *limit : 0;
               Json out = Json::array();
               for (size_t i = from; i < rows.size(); ++i) {
                 out.push_back(rowJson(rows[i]));
               }
               return httpd::jsonResponse(200, {{"run_id", (*state)->run.record.id},
                                                {"field", field},
                                                {"rows", std::move(out)},
                                                {"truncated", from > 0}});
             });
  router.add("GET", "/api/runs/{id}/state-diff", httpd::Scope::kRead,
             [context](const Request& request) -> Response {
               const auto against_id = request.queryParam("against");
               if (!against_id || against_id->empty()) {
                 return httpd::problem(400, "missing-against", "Which run to compare with?",
                                       "add ?against=<run id> (a full id or a unique prefix): "
                                       "the run whose state to compare this run's with");
               }
               auto state = openRunState(*context, request.params.at("id"));
               if (!state.ok()) {
                 return std::move(state.problem());
               }
               auto other = openRunState(*context, *against_id);
               if (!other.ok()) {
                 return std::move(other.problem());
               }
               auto mine = stateAtEnd(**state);
               auto theirs = stateAtEnd(**other);
               if (!mine || !theirs) {
                 return failed(!mine ? mine.error() : theirs.error());
               }
               Json fields = Json::array();
               std::vector<std::string> names;
               for (const auto& [name, value] : mine->items()) {
                 names.push_back(name);
               }
               for (const auto& [name, value] : theirs->items()) {
                 if (!mine->contains(name)) {
                   names.push_back(name);
                 }
               }
               std::sort(names.begin(), names.end());
               for (const auto& name : names) {
                 const bool in_mine = mine->contains(name);
                 const bool in_theirs = theirs->contains(name);
                 if (in_mine && in_theirs && (*mine)[name] == (*theirs)[name]) {
                   continue;
                 }
                 fields.push_back({{"field", name},
                                   {"value", in_mine ? (*mine)[name] : Json()},
                                   {"set", in_mine},
                                   {"against_value", in_theirs ? (*theirs)[name] : Json()},
                                   {"against_set", in_theirs}});
               }
               return httpd::jsonResponse(200, {{"run_id", (*state)->run.record.id},
                                                {"against", (*other)->run.record.id},
                                                {"fields", std::move(fields)}});
             });
}

}  // namespace oe::service

// GET /api/runs, /api/runs/{id}, /api/runs/{id}/nodes/{node}, /api/runs/{id}/report.
#include "oe/service/run_read_routes.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "oe/common/clock.hpp"
#include "oe/events/event_log.hpp"
#include "oe/report/run_report.hpp"
#include "oe/runs/report_input.hpp"
#include "oe/runs/run_analysis.hpp"
#include "oe/runs/timeline.hpp"
#include "oe/spec/workspace.hpp"

namespace oe::service {
namespace {

namespace fs = std::filesystem;
using httpd::Request;
using httpd::Response;

constexpr const char* kStatuses[] = {"queued",  "running",   "waiting",     "succeeded", "partial",
                                     "failed",  "cancelled", "interrupted", "resumed"};

Json isoOrNull(const std::string& ts) { return ts.empty() ? Json() : Json(ts); }
Json resumedByOrNull(const std::string& id) { return id.empty() ? Json() : Json(id); }

Json usageJson(const RunStats& stats) {
  return {{"tokens_in", stats.tokens_in},
          {"tokens_out", stats.tokens_out},
          {"cost_usd", stats.cost_usd}};
}

// A run as the list shows it.
Json runSummary(const runs::RunRecord& record, const ExperienceRef& experience,
                const std::string& status, const std::string& resumed_by, const RunStats& stats) {
  Json out = {{"id", record.id},
              {"experience", experience.name},
              {"status", status},
              {"engine_status", record.status},
              {"started_at", isoOrNull(record.started_at)},
              {"finished_at", isoOrNull(record.finished_at)},
              {"duration_ms", record.durationMs() >= 0 ? Json(record.durationMs()) : Json()},
              {"nodes",
               {{"ran", record.ran},
                {"cached", record.cached},
                {"failed", record.failed},
                {"cancelled", record.cancelled},
                {"skipped", record.skipped}}},
              {"usage", usageJson(stats)}};
  if (!record.reason.empty()) {
    out["reason"] = record.reason;
  }
  if (!record.resumed_from.empty()) {
    out["resumed_from"] = record.resumed_from;
  }
  if (!resumed_by.empty()) {
    out["resumed_by"] = resumed_by;
  }
  if (!record.parent_run_id.empty()) {
    out["parent_run_id"] = record.parent_run_id;
  }
  return out;
}

Json queuedSummary(const QueueEntry& entry) {
  Json out = {{"id", entry.id},
              {"experience", entry.experience},
              {"status", entry.status},
              {"priority", entry.priority},
              {"queued_at", entry.queued_at},
              {"started_at", nullptr},
              {"finished_at", nullptr},
              {"duration_ms", nullptr}};
  if (entry.status == "cancelled") {
    // It ended when it was cancelled, before it started: no log, nothing ran.
    out["finished_at"] =
        isoTime(entry.cancelled_ms / 1000, static_cast<int>(entry.cancelled_ms % 1000));
    out["reason"] = "cancelled before it started";
  }
  return out;
}

Response listRunsRoute(const ReadContext& context, RunStatsCache& cache, const Request& request) {
  auto limit = listLimit(request);
  if (!limit.ok()) {
    return std::move(limit.problem());
  }
  const auto status = request.queryParam("status");
  if (status &&
      std::find(std::begin(kStatuses), std::end(kStatuses), *status) == std::end(kStatuses)) {
    std::string known;
    for (const char* name : kStatuses) {
      known += (known.empty() ? "" : ", ") + std::string(name);
    }
    return httpd::problem(
        400, "bad-status", "Unknown run status",
        "status=" + std::string(*status) + " is not a run status; use one of " + known);
  }
  const auto experience_filter = request.queryParam("experience");
  const auto cursor = request.queryParam("cursor");

  // The rows in order, built lazily: a row's detail (usage) is read only when it is returned.
  struct Row {
    std::string id;
    const QueueEntry* queued = nullptr;
    runs::RunRecord record;
    const ExperienceRef* experience = nullptr;
    std::string status;
    std::string resumed_by;
    int64_t when_ms = 0;  // its place among the logged runs: started, or cancelled
  };
  StatusOracle oracle(context);
  const auto experiences = listExperiences(context);
  std::vector<Row> rows;
  std::vector<Row> logged;
  for (const auto& experience : experiences) {
    if (experience_filter && experience.name != *experience_filter) {
      continue;
    }
    const fs::path runs_dir = spec::workspaceDir(experience.yaml) / "runs";
    if (!confinedTo(runs_dir, context.root)) {
      continue;
    }
    auto records = runsOf(context, experience, /*details=*/true);
    oracle.know(experience, records);
    for (auto& record : records) {
      Row row;
      row.id = record.id;
      row.status = oracle.statusOf(record, experience);
      row.resumed_by = oracle.resumedBy(record, experience);
      row.when_ms = record.started_ms;
      row.record = std::move(record);
      row.experience = &experience;
      logged.push_back(std::move(row));
    }
  }
  // Queued runs (no log yet) first, in the queue's order; one cancelled before it started
  // among the logged runs, by when it was cancelled.
  std::unordered_set<std::string> with_log;
  for (const Row& row : logged) {
    with_log.insert(row.id);
  }
  for (const auto& entry : oracle.queue()) {
    const bool has_log = with_log.count(entry.id) != 0;
    if (has_log || (experience_filter && entry.experience != *experience_filter)) {
      continue;
    }
    Row row;
    row.id = entry.id;
    row.queued = &entry;
    row.status = entry.status;
    row.when_ms = entry.cancelled_ms;
    (entry.status == "cancelled" ? logged : rows).push_back(std::move(row));
  }
  std::stable_sort(logged.begin(), logged.end(), [](const Row& a, const Row& b) {
    return a.when_ms != b.when_ms ? a.when_ms > b.when_ms : a.id < b.id;
  });
  for (auto& row : logged) {
    rows.push_back(std::move(row));
  }
  if (status) {
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [&status](const Row& row) { return row.status != *status; }),
               rows.end());
  }
  size_t start = 0;
  if (cursor) {
    auto it = std::find_if(rows.begin(), rows.end(),
                           [&cursor](const Row& row) { return row.id == *cursor; });
    if (it == rows.end()) {
      return httpd::problem(400, "bad-cursor", "Cursor no longer valid",
                            "cursor " + std::string(*cursor) +
                                " names no run of this list (it was deleted, or the filters "
                                "changed); list again without cursor");
    }
    start = static_cast<size_t>(it - rows.begin()) + 1;
  }
  Json out_rows = Json::array();
  size_t i = start;
  for (; i < rows.size() && out_rows.size() < *limit; ++i) {
    const Row& row = rows[i];
    out_rows.push_back(row.queued != nullptr ? queuedSummary(*row.queued)
                                             : runSummary(row.record, *row.experience, row.status,
                                                          row.resumed_by, cache.get(row.record.log)));
  }
  Json body = {{"runs", std::move(out_rows)}};
  if (i < rows.size()) {
    body["next_cursor"] = rows[i - 1].id;
  }
  return httpd::jsonResponse(200, body);
}

Json timelineJson(const runs::Timeline& timeline) {
  Json nodes = Json::array();
  for (const auto& node : timeline.nodes) {
    Json sub_logs = Json::array();
    for (const auto& log : node.sub_logs) {
      sub_logs.push_back(log.filename().string());
    }
    nodes.push_back({{"id", node.id},
                     {"status", node.status},
                     {"calls", node.calls},
                     {"failures", node.failures},
                     {"cancels", node.cancels},
                     {"first_ts", node.first_ts >= 0 ? Json(node.first_ts) : Json()},
                     {"last_ts", node.last_ts >= 0 ? Json(node.last_ts) : Json()},
                     {"duration_ms", node.durationMs() >= 0 ? Json(node.durationMs()) : Json()},
                     {"detail", node.detail},
                     {"nested_runs", std::move(sub_logs)}});
  }
  return nodes;
}

Json callsJson(const runs::RunModel& model) {
  Json calls = Json::array();
  for (const auto& call : model.calls) {
    if (call.depth != 0) {
      continue;
    }
    calls.push_back({{"label", call.label},
                     {"ready", call.ready >= 0 ? Json(call.ready) : Json()},
                     {"started", call.started >= 0 ? Json(call.started) : Json()},
                     {"ended", call.ended >= 0 ? Json(call.ended) : Json()},
                     {"outcome", call.outcome},
                     {"retries", call.retries}});
  }
  return calls;
}

// The run's log read and analysed, or the problem of a log that cannot be read.
struct ReadRun {
  RunRef ref;
  events::LogReadResult log;
  runs::RunModel model;
};
Found<ReadRun> readRun(const ReadContext& context, const std::string& id) {
  auto run = findRunUnderRoot(context, id);
  if (!run.ok()) {
    return std::move(run.problem());
  }
  auto log = events::readEventLog(run->record.log);
  if (!log) {
    return httpd::problem(500, "log-unreadable", "The run's log cannot be read",
                          log.error().message + "; check the file's permissions");
  }
  ReadRun out{std::move(*run), std::move(*log), {}};
  out.model = runs::analyse(out.log.events);
  out.ref.record.status = out.model.status;
  return out;
}

Response runRoute(const ReadContext& context, const Request& request) {
  const std::string& id = request.params.at("id");
  auto run = readRun(context, id);
  if (!run.ok()) {
    // A run the queue holds has no log until it starts: it is still a run to show.
    if (run.problem().status == 404 && context.queue) {
      for (const auto& entry : context.queue()) {
        if (entry.id == id) {
          Json body = queuedSummary(entry);
          body["timeline"] = Json::array();
          body["calls"] = Json::array();
          return httpd::jsonResponse(200, body);
        }
      }
    }
    return std::move(run.problem());
  }
  const auto& model = run->model;
  StatusOracle oracle(context);
  const RunStats stats = runStatsOf(model);
  const auto ts = [](const Json& event) -> Json {
    const std::string text = stringField(event, "ts");
    return text.empty() ? Json() : Json(text);
  };
  Json counts = {{"ran", 0}, {"cached", 0}, {"failed", 0}, {"skipped", 0}, {"running", 0}};
  for (const auto& node : model.nodes) {
    counts["ran"] = counts["ran"].get<int>() + (node.finished - node.cached);
    counts["cached"] = counts["cached"].get<int>() + node.cached;
    counts["failed"] = counts["failed"].get<int>() + node.failed;
    counts["skipped"] = counts["skipped"].get<int>() + node.skipped;
    counts["running"] = counts["running"].get<int>() + static_cast<int>(node.open.size());
  }
  const auto timeline = runs::timelineOf(run->log.events, run->ref.record.id, /*expand=*/false);
  Json body = {{"id", run->ref.record.id},
               {"experience", run->ref.experience.name},
               {"status", oracle.statusOf(run->ref.record, run->ref.experience)},
               {"resumed_by", resumedByOrNull(oracle.resumedBy(run->ref.record, run->ref.experience))},
               {"engine_status", model.status},
               {"reason", model.reason.empty() ? Json() : Json(model.reason)},
               {"started_at", ts(model.started_event)},
               {"finished_at", ts(model.finished_event)},
               {"duration_ms", model.started >= 0 && model.ended >= model.started
                                   ? Json(model.ended - model.started)
                                   : Json()},
               {"args", runs::member(model.started_event, "args")},
               {"counts", std::move(counts)},
               {"usage", usageJson(stats)},
               {"timeline", timelineJson(timeline)},
               {"calls", callsJson(model)},
               {"events", run->log.events.size()},
               {"warnings", run->log.warnings}};
  return httpd::jsonResponse(200, body);
}

// The report's input for a run: from the files, or on PostgreSQL from the store (the state rows
// and edge outputs live there).
Result<runs::RunReportInput> reportInput(const ReadContext& context, const RunRef& run) {
  Result<runs::RunReportInput> input = makeError("not read");
  if (pg::isUrl(context.store_url)) {
    auto conn = pg::Connection::open(context.store_url);
    if (!conn) {
      return std::move(conn).error();
    }
    input = runs::loadStoreRunReport(**conn, run.experience.dir, run.record.id);
  } else {
    input = runs::loadRunReport(run.experience.dir, run.record);
  }
  if (input) {
    // A nested run's log is wherever its node.activity says: an edited log could name any
    // file, and what is served stays under the root.
    for (auto it = input->nested.begin(); it != input->nested.end();) {
      if (confinedTo(it->first, context.root)) {
        ++it;
        continue;
      }
      input->notes.push_back("the nested run log " + it->first + " is outside " +
                             context.root.string() + " and is not served");
      it = input->nested.erase(it);
    }
  }
  return input;
}

Response nodeRoute(const ReadContext& context, const Request& request) {
  auto run = readRun(context, request.params.at("id"));
  if (!run.ok()) {
    return std::move(run.problem());
  }
  const std::string& node_id = request.params.at("node");
  const auto it = run->model.index.find(node_id);
  if (it == run->model.index.end()) {
    return httpd::problem(404, "node-not-found", "No such node in this run",
                          "run " + run->ref.record.id + " has no event of node \"" + node_id +
                              "\" (it did not run yet, or the id is wrong); GET /api/runs/" +
                              run->ref.record.id + " lists its nodes");
  }
  const runs::NodeSummary& node = run->model.nodes[it->second];
  Json node_events = Json::array();
  for (size_t i = 0; i < run->log.events.size(); ++i) {
    const Json& event = run->log.events[i];
    if (stringField(event, "node_id") == node_id) {
      Json out = event;
      out["seq"] = i + 1;  // readEventLog keeps the order; a skipped torn line is the last
      node_events.push_back(std::move(out));
    }
  }
  Json body = {{"run_id", run->ref.record.id},
               {"node", node_id},
               {"status", node.status()},
               {"phase", node.phase},
               {"calls", node.calls},
               {"finished", node.finished},
               {"cached", node.cached},
               {"failed", node.failed},
               {"skipped", node.skipped},
               {"skip_reason", node.skip_reason},
               {"errors", node.errors},
               {"retries", node.retries},
               {"writes", node.writes},
               {"policy", node.policy},
               {"denials", node.denials},
               {"usage",
                {{"tokens_in", node.tokens_in},
                 {"tokens_out", node.tokens_out},
                 {"cost_usd", node.cost_usd}}},
               {"events", std::move(node_events)}};
  // What the report shows beyond the log: the node's definition, the values it wrote, its
  // edge output, the diffs of its worktree attempts.
  auto input = reportInput(context, run->ref);
  Json notes = Json::array();
  if (!input) {
    notes.push_back(input.error().message);
  } else {
    if (input->experience) {
      if (const auto* spec_node = input->experience->findNode(node_id)) {
        body["kind"] = spec_node->kind;
        body["args"] = spec_node->args;
        // What the node was handed: its predecessors' edge outputs (as their cache entries
        // hold them) and the state fields it reads.
        Json edges = Json::object();
        for (const auto& edge : input->experience->edges) {
          if (edge.to == node_id) {
            const auto from = input->edge_outputs.find(edge.from);
            edges[edge.from] = from == input->edge_outputs.end() ? Json() : from->second;
          }
        }
        body["inputs"] = {{"edges", std::move(edges)}, {"reads", spec_node->reads}};
      }
    }
    Json writes = Json::array();
    for (const auto& row : input->state_rows) {
      if (row.node_id == node_id) {
        writes.push_back({{"field", row.field}, {"value", row.value_new}, {"ts", row.ts}});
      }
    }
    body["state_writes"] = std::move(writes);
    const auto output = input->edge_outputs.find(node_id);
    body["output"] = output == input->edge_outputs.end() ? Json() : output->second;
    Json diffs = Json::array();
    for (const auto& event : node.diffs) {
      const std::string artifact = stringField(event, "artifact");
      Json diff = event;
      const auto text = input->diffs.find(artifact);
      if (text != input->diffs.end()) {
        diff["text"] = text->second.text;
        diff["size"] = text->second.size;
        if (!text->second.error.empty()) {
          diff["error"] = text->second.error;
        }
      }
      diffs.push_back(std::move(diff));
    }
    body["diffs"] = std::move(diffs);
    for (const auto& note : input->notes) {
      notes.push_back(note);
    }
  }
  body["notes"] = std::move(notes);
  return httpd::jsonResponse(200, body);
}

Response reportRoute(const ReadContext& context, const Request& request) {
  auto run = findRunUnderRoot(context, request.params.at("id"));
  if (!run.ok()) {
    return std::move(run.problem());
  }
  auto input = reportInput(context, *run);
  if (!input) {
    return httpd::problem(500, "report-failed", "The report cannot be built",
                          input.error().message);
  }
  Response response;
  response.content_type = "text/html; charset=utf-8";
  response.body = report::runReportHtml(*input);
  return response;
}

}  // namespace

void addRunReadRoutes(httpd::Router& router, std::shared_ptr<const ReadContext> context,
                      std::shared_ptr<RunStatsCache> stats) {
  router.add("GET", "/api/runs", httpd::Scope::kRead, [context, stats](const Request& request) {
    return listRunsRoute(*context, *stats, request);
  });
  router.add("GET", "/api/runs/{id}", httpd::Scope::kRead,
             [context](const Request& request) { return runRoute(*context, request); });
  router.add("GET", "/api/runs/{id}/nodes/{node}", httpd::Scope::kRead,
             [context](const Request& request) { return nodeRoute(*context, request); });
  router.add("GET", "/api/runs/{id}/report", httpd::Scope::kRead,
             [context](const Request& request) { return reportRoute(*context, request); });
}

}  // namespace oe::service

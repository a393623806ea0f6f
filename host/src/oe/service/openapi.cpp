// The OpenAPI 3.1 document of `oe serve` (openapi.hpp).
#include "oe/service/openapi.hpp"

#include <regex>
#include <string>
#include <utility>

namespace oe::service {
namespace {

using httpd::Scope;

// What the document says of one route beyond the table: its operation id, query parameters,
// request body and success response.
struct Operation {
  std::string method;
  std::string pattern;
  Scope scope;
  std::string summary;
  std::string operation_id;
  Json query = Json::array();  // [{name, schema, description}]
  Json body;                   // request body schema (null: none)
  int status = 200;            // success status
  std::string content_type = "application/json";
  Json schema = Json::object();  // success body schema
  std::vector<int> errors;       // problem+json statuses besides 401/403/500
};

Json ref(const std::string& name) { return {{"$ref", "#/components/schemas/" + name}}; }

Json queryParam(const std::string& name, Json schema, const std::string& description) {
  return {{"name", name}, {"schema", std::move(schema)}, {"description", description}};
}

Json pagingParams() {
  return Json::array(
      {queryParam("limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 500}, {"default", 50}},
                  "Page size"),
       queryParam("cursor", {{"type", "string"}}, "The next_cursor of the previous page")});
}

Json object(Json properties, Json required = Json::array()) {
  Json out = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) {
    out["required"] = std::move(required);
  }
  return out;
}

const Json kAny = Json::object();

std::vector<Operation> operations() {
  const Json decision_body = object({{"comment", {{"type", "string"}}},
                                     {"as", {{"type", "string"}, {"description", "Who decides"}}}});
  const Json text = {{"type", "string"}};
  std::vector<Operation> ops;
  ops.push_back({"GET",
                 "/healthz",
                 Scope::kPublic,
                 "Liveness and store reachability",
                 "getHealth",
                 Json::array(),
                 nullptr,
                 200,
                 "application/json",
                 object({{"status", {{"type", "string"}, {"enum", {"ok"}}}}}, {"status"}),
                 {503}});
  ops.push_back({"GET",
                 "/metrics",
                 Scope::kRead,
                 "Prometheus metrics",
                 "getMetrics",
                 Json::array(),
                 nullptr,
                 200,
                 "text/plain",
                 text,
                 {}});
  ops.push_back({"GET",
                 "/api/openapi.json",
                 Scope::kPublic,
                 "This document",
                 "getOpenApi",
                 Json::array(),
                 nullptr,
                 200,
                 "application/json",
                 {{"type", "object"}},
                 {}});
  ops.push_back({"GET",
                 "/api/experiences",
                 Scope::kRead,
                 "The experiences under --root",
                 "listExperiences",
                 Json::array(),
                 nullptr,
                 200,
                 "application/json",
                 {{"type", "array"}, {"items", ref("ExperienceSummary")}},
                 {}});
  ops.push_back({"GET",
                 "/api/experiences/{name}",
                 Scope::kRead,
                 "One experience, parsed, with its args and state schema",
                 "getExperience",
                 Json::array(),
                 nullptr,
                 200,
                 "application/json",
                 ref("Experience"),
                 {404, 409, 422}});
  ops.push_back({"POST",
                 "/api/experiences/{name}/validate",
                 Scope::kRead,
                 "`oe validate`'s diagnostics",
                 "validateExperience",
                 Json::array(),
                 object({{"strict", {{"type", "boolean"}, {"default", false}}}}),
                 200,
                 "application/json",
                 ref("Validation"),
                 {400, 404, 409}});
  ops.push_back({"GET",
                 "/api/experiences/{name}/graph",
                 Scope::kRead,
                 "The graph: nodes, edges and the report's SVG",
                 "getExperienceGraph",
                 Json::array({queryParam("direction", {{"type", "string"}, {"enum", {"TD", "LR"}}},
                                         "Layout direction")}),
                 nullptr,
                 200,
                 "application/json",
                 ref("Graph"),
                 {400, 404, 409, 422}});
  ops.push_back(
      {"GET",
       "/api/experiences/{name}/schema",
       Scope::kRead,
       "The args and state JSON Schema (for a start form)",
       "getExperienceSchema",
       Json::array(),
       nullptr,
       200,
       "application/json",
       object({{"args", {{"type", "object"}}}, {"state", {{"type", "object"}}}}, {"args", "state"}),
       {404, 409, 422}});
  ops.push_back(
      {"POST",
       "/api/runs",
       Scope::kAdmin,
       "Queue a run",
       "startRun",
       Json::array(),
       object({{"experience", text},
               {"args", {{"type", "object"}}},
               {"priority", {{"type", "integer"}, {"minimum", 1}, {"maximum", 10}, {"default", 5}}},
               {"options", object({{"concurrency", {{"type", "integer"}}},
                                   {"no_cache", {{"type", "boolean"}}},
                                   {"llm", text}})}},
              {"experience"}),
       202,
       "application/json",
       object({{"id", text}, {"status", {{"type", "string"}, {"enum", {"queued"}}}}},
              {"id", "status"}),
       {400, 404, 409}});
  Json list_query = pagingParams();
  list_query.push_back(queryParam("status", ref("RunStatus"), "Only runs of this status"));
  list_query.push_back(queryParam("experience", text, "Only runs of this experience"));
  ops.push_back(
      {"GET",
       "/api/runs",
       Scope::kRead,
       "Runs: queued first, then newest first",
       "listRuns",
       list_query,
       nullptr,
       200,
       "application/json",
       object({{"runs", {{"type", "array"}, {"items", ref("RunSummary")}}}, {"next_cursor", text}},
              {"runs"}),
       {400}});
  ops.push_back({"GET",
                 "/api/runs/{id}",
                 Scope::kRead,
                 "One run: status, times, counts, usage, the node timeline",
                 "getRun",
                 Json::array(),
                 nullptr,
                 200,
                 "application/json",
                 ref("Run"),
                 {400, 404, 409}});
  ops.push_back({"POST",
                 "/api/runs/{id}/cancel",
                 Scope::kAdmin,
                 "Cancel: a queued run never starts (listed as cancelled), a running one stopped "
                 "(resumable)",
                 "cancelRun",
                 Json::array(),
                 nullptr,
                 200,
                 "application/json",
                 ref("RunSummary"),
                 {404, 409}});
  ops.push_back({"POST",
                 "/api/runs/{id}/resume",
                 Scope::kAdmin,
                 "Queue `oe resume` of a failed, partial, cancelled or interrupted run",
                 "resumeRun",
                 Json::array(),
                 nullptr,
                 202,
                 "application/json",
                 object({{"id", text}, {"status", text}}, {"id", "status"}),
                 {404, 409}});
  ops.push_back({"DELETE",
                 "/api/runs/{id}",
                 Scope::kAdmin,
                 "Remove a finished run's log and records, or a run cancelled while queued",
                 "deleteRun",
                 Json::array(),
                 nullptr,
                 200,
                 "application/json",
                 object({{"id", text},
                         {"deleted", {{"type", "boolean"}}},
                         {"bytes_freed", {{"type", "integer"}, {"minimum", 0}}}},
                        {"id", "deleted", "bytes_freed"}),
                 {404, 409}});
  ops.push_back({"GET",
                 "/api/runs/{id}/nodes/{node}",
                 Scope::kRead,
                 "One node of a run: inputs, output, errors, events, retries, usage, diffs",
                 "getRunNode",
                 Json::array(),
                 nullptr,
                 200,
                 "application/json",
                 ref("NodeDetail"),
                 {400, 404, 409}});
  Json events_query = Json::array(
      {queryParam("after", {{"type", "integer"}, {"minimum", 0}}, "Events after this seq"),
       queryParam("limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 500}, {"default", 50}},
                  "Page size")});
  ops.push_back({"GET",
                 "/api/runs/{id}/events",
                 Scope::kRead,
                 "A run's log lines as JSON, seq = the line number",
                 "listRunEvents",
                 events_query,
                 nullptr,
                 200,
                 "application/json",
                 object({{"run_id", text},
                         {"events", {{"type", "array"}, {"items", ref("Event")}}},
                         {"next_after", {{"type", "integer"}}}},
                        {"run_id", "events"}),
                 {400, 404, 409}});
  ops.push_back({"GET",
                 "/api/runs/{id}/events/stream",
                 Scope::kRead,
                 "Server-Sent Events: one event per log line, id = its seq; honours "
                 "Last-Event-ID; ends after run.finished",
                 "streamRunEvents",
                 Json::array({queryParam("after", {{"type", "integer"}, {"minimum", 0}},
                                         "Start after this seq (Last-Event-ID wins)")}),
                 nullptr,
                 200,
                 "text/event-stream",
                 text,
                 {400, 404, 409}});
  ops.push_back({"GET",
                 "/api/events/stream",
                 Scope::kRead,
                 "Server-Sent Events of every run's new lines, id = <run id>:<seq>",
                 "streamAllEvents",
                 Json::array(),
                 nullptr,
                 200,
                 "text/event-stream",
                 text,
                 {}});
  ops.push_back({"GET",
                 "/api/runs/{id}/state",
                 Scope::kRead,
                 "The state as the run left it",
                 "getRunState",
                 Json::array(),
                 nullptr,
                 200,
                 "application/json",
                 object({{"run_id", text},
                         {"experience", text},
                         {"as_of", {{"type", {"string", "null"}}}},
                         {"state", {{"type", "object"}}},
                         {"written", {{"type", "array"}, {"items", text}}}},
                        {"run_id", "state"}),
                 {400, 404, 409, 422, 503}});
  ops.push_back({"GET",
                 "/api/runs/{id}/state/{field}",
                 Scope::kRead,
                 "One field as the run left it",
                 "getRunStateField",
                 Json::array(),
                 nullptr,
                 200,
                 "application/json",
                 object({{"run_id", text},
                         {"field", text},
                         {"set", {{"type", "boolean"}}},
                         {"value", kAny},
                         {"written_by_run", {{"type", "boolean"}}}},
                        {"field", "value"}),
                 {400, 404, 409, 422, 503}});
  ops.push_back(
      {"GET",
       "/api/runs/{id}/state/{field}/history",
       Scope::kRead,
       "The field's history up to the run's end",
       "getRunStateFieldHistory",
       Json::array({queryParam(
           "limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 500}, {"default", 50}},
           "The newest rows kept")}),
       nullptr,
       200,
       "application/json",
       object({{"run_id", text},
               {"field", text},
               {"rows", {{"type", "array"}, {"items", ref("StateRow")}}},
               {"truncated", {{"type", "boolean"}}}},
              {"field", "rows"}),
       {400, 404, 409, 422, 503}});
  ops.push_back({"GET",
                 "/api/runs/{id}/state-diff",
                 Scope::kRead,
                 "The fields two runs left different",
                 "getRunStateDiff",
                 Json::array({[&text] {
                   Json against = queryParam("against", text, "The other run (id or prefix)");
                   against["required"] = true;
                   return against;
                 }()}),
                 nullptr,
                 200,
                 "application/json",
                 object({{"run_id", text},
                         {"against", text},
                         {"fields", {{"type", "array"}, {"items", {{"type", "object"}}}}}},
                        {"fields"}),
                 {400, 404, 409, 422, 503}});
  ops.push_back({"GET",
                 "/api/runs/{id}/report",
                 Scope::kRead,
                 "The HTML run report",
                 "getRunReport",
                 Json::array(),
                 nullptr,
                 200,
                 "text/html",
                 text,
                 {400, 404, 409}});
  ops.push_back({"GET",
                 "/api/approvals",
                 Scope::kRead,
                 "The approvals waiting",
                 "listApprovals",
                 Json::array(),
                 nullptr,
                 200,
                 "application/json",
                 object({{"approvals", {{"type", "array"}, {"items", {{"type", "object"}}}}}}),
                 {}});
  ops.push_back({"POST",
                 "/api/approvals/{run}/{node}/approve",
                 Scope::kAdmin,
                 "Approve; the run is continued through the queue",
                 "approve",
                 Json::array(),
                 decision_body,
                 200,
                 "application/json",
                 {{"type", "object"}},
                 {400, 404, 409}});
  ops.push_back({"POST",
                 "/api/approvals/{run}/{node}/reject",
                 Scope::kAdmin,
                 "Reject",
                 "reject",
                 Json::array(),
                 decision_body,
                 200,
                 "application/json",
                 {{"type", "object"}},
                 {400, 404, 409}});
  ops.push_back({"GET",
                 "/api/schedules",
                 Scope::kRead,
                 "Each cron trigger: experience, expression, zone, next and last fire",
                 "listSchedules",
                 Json::array(),
                 nullptr,
                 200,
                 "application/json",
                 object({{"schedules", {{"type", "array"}, {"items", {{"type", "object"}}}}}}),
                 {}});
  ops.push_back({"POST",
                 "/hooks/{experience}/{name}",
                 Scope::kPublic,
                 "A webhook delivery, HMAC-SHA256 signed",
                 "deliverWebhook",
                 Json::array(),
                 {{"type", "object"}},
                 202,
                 "application/json",
                 {{"type", "object"}},
                 {400, 404, 409}});
  for (const char* method : {"POST", "GET", "DELETE"}) {
    ops.push_back({method,
                   "/mcp",
                   Scope::kRead,
                   "MCP Streamable HTTP (tools that start runs need admin)",
                   std::string("mcp") + (method[0] == 'P'   ? "Post"
                                         : method[0] == 'G' ? "Get"
                                                            : "Delete"),
                   Json::array(),
                   method[0] == 'P' ? Json{{"type", "object"}} : Json(),
                   200,
                   method[0] == 'G' ? "text/event-stream" : "application/json",
                   kAny,
                   {400, 404}});
  }
  ops.push_back({"GET",
                 "/",
                 Scope::kPublic,
                 "The dashboard",
                 "getDashboard",
                 Json::array(),
                 nullptr,
                 200,
                 "text/html",
                 text,
                 {}});
  ops.push_back({"GET",
                 "/assets/{path*}",
                 Scope::kPublic,
                 "The dashboard's files",
                 "getAsset",
                 Json::array(),
                 nullptr,
                 200,
                 "application/octet-stream",
                 text,
                 {404}});
  return ops;
}

Json components() {
  const Json text = {{"type", "string"}};
  const Json nullable_text = {{"type", {"string", "null"}}};
  const Json count = {{"type", "integer"}, {"minimum", 0}};
  Json schemas = {
      {"Problem",
       object(
           {{"type", text}, {"title", text}, {"status", {{"type", "integer"}}}, {"detail", text}},
           {"type", "title", "status", "detail"})},
      {"RunStatus",
       {{"type", "string"},
        {"enum",
         {"queued", "running", "waiting", "succeeded", "partial", "failed", "cancelled",
           "interrupted", "resumed"}}}},
      {"Usage",
       object({{"tokens_in", count}, {"tokens_out", count}, {"cost_usd", {{"type", "number"}}}})},
      {"ExperienceSummary", object({{"name", text},
                                    {"path", text},
                                    {"description", text},
                                    {"nodes", count},
                                    {"triggers", {{"type", "array"}}}},
                                   {"name", "path"})},
      {"Experience", object({{"name", text},
                             {"path", text},
                             {"description", text},
                             {"version", text},
                             {"nodes", {{"type", "array"}, {"items", {{"type", "object"}}}}},
                             {"edges", {{"type", "array"}, {"items", {{"type", "object"}}}}},
                             {"triggers", {{"type", "array"}}},
                             {"args_schema", {{"type", "object"}}},
                             {"state_schema", {{"type", "object"}}},
                             {"document", {{"type", "object"}}}},
                            {"name", "nodes", "edges"})},
      {"Diagnostic", object({{"severity", {{"type", "string"}, {"enum", {"error", "warning"}}}},
                             {"file", text},
                             {"line", {{"type", "integer"}}},
                             {"column", {{"type", "integer"}}},
                             {"node", text},
                             {"field", text},
                             {"message", text},
                             {"text", text}},
                            {"severity", "message"})},
      {"Validation", object({{"name", text},
                             {"file", text},
                             {"valid", {{"type", "boolean"}}},
                             {"errors", {{"type", "array"}, {"items", ref("Diagnostic")}}},
                             {"warnings", {{"type", "array"}, {"items", ref("Diagnostic")}}}},
                            {"valid", "errors", "warnings"})},
      {"Graph", object({{"name", text},
                        {"nodes", {{"type", "array"}, {"items", {{"type", "object"}}}}},
                        {"edges", {{"type", "array"}, {"items", {{"type", "object"}}}}},
                        {"svg", text},
                        {"svg_css", text},
                        {"mermaid", text}},
                       {"nodes", "edges", "svg"})},
      {"RunSummary", object({{"id", text},
                             {"experience", text},
                             {"status", ref("RunStatus")},
                             {"engine_status", text},
                             {"priority", {{"type", "integer"}}},
                             {"queued_at", text},
                             {"started_at", nullable_text},
                             {"finished_at", nullable_text},
                             {"duration_ms", {{"type", {"integer", "null"}}}},
                             {"nodes", {{"type", "object"}}},
                             {"usage", ref("Usage")},
                             {"reason", text},
                             {"resumed_from", text},
                             {"resumed_by", text},
                             {"parent_run_id", text}},
                            {"id", "status"})},
      {"Run", object({{"id", text},
                      {"experience", text},
                      {"status", ref("RunStatus")},
                      {"engine_status", text},
                      {"resumed_by", nullable_text},
                      {"reason", nullable_text},
                      {"started_at", nullable_text},
                      {"finished_at", nullable_text},
                      {"duration_ms", {{"type", {"integer", "null"}}}},
                      {"args", kAny},
                      {"counts", {{"type", "object"}}},
                      {"usage", ref("Usage")},
                      {"timeline", {{"type", "array"}, {"items", {{"type", "object"}}}}},
                      {"calls", {{"type", "array"}, {"items", {{"type", "object"}}}}},
                      {"events", count},
                      {"warnings", {{"type", "array"}, {"items", text}}}},
                     {"id", "status", "timeline"})},
      {"NodeDetail", object({{"run_id", text},
                             {"node", text},
                             {"status", text},
                             {"kind", text},
                             {"args", kAny},
                             {"output", kAny},
                             {"errors", {{"type", "array"}, {"items", text}}},
                             {"retries", {{"type", "array"}}},
                             {"usage", ref("Usage")},
                             {"state_writes", {{"type", "array"}}},
                             {"diffs", {{"type", "array"}}},
                             {"events", {{"type", "array"}, {"items", ref("Event")}}},
                             {"notes", {{"type", "array"}, {"items", text}}}},
                            {"run_id", "node", "status"})},
      {"Event",
       {{"type", "object"},
        {"properties", {{"seq", {{"type", "integer"}, {"minimum", 1}}}, {"type", text}}},
        {"required", {"seq", "type"}},
        {"additionalProperties", true}}},
      {"StateRow", object({{"id", {{"type", "integer"}}},
                           {"run_id", text},
                           {"node_id", text},
                           {"ts", text},
                           {"value_old", kAny},
                           {"value_new", kAny}},
                          {"id", "run_id", "value_new"})}};
  return {{"schemas", std::move(schemas)},
          {"securitySchemes",
           {{"bearer",
             {{"type", "http"},
              {"scheme", "bearer"},
              {"description",
               "A token of --token-file (`read` or `admin` scope). Without --token-file the "
               "server listens on loopback only and needs none."}}}}}};
}

Json problemResponse(const std::string& description) {
  return {{"description", description},
          {"content", {{"application/problem+json", {{"schema", ref("Problem")}}}}}};
}

std::string errorText(int status) {
  switch (status) {
    case 400:
      return "Bad request: the detail says which parameter and what to send";
    case 401:
      return "No or unknown bearer token";
    case 403:
      return "The token's scope does not allow this, or a path leads outside --root";
    case 404:
      return "Not found";
    case 409:
      return "Conflict: ambiguous id prefix or name, or the run's state forbids it";
    case 422:
      return "The experience does not load or validate";
    case 503:
      return "The store cannot be reached";
    default:
      return "Server error: the detail says what failed";
  }
}

Json buildDocument() {
  Json paths = Json::object();
  static const std::regex kParam(R"(\{([A-Za-z_]+)\*?\})");
  for (const auto& op : operations()) {
    const std::string path = openApiPath(op.pattern);
    Json parameters = Json::array();
    for (auto it = std::sregex_iterator(op.pattern.begin(), op.pattern.end(), kParam);
         it != std::sregex_iterator(); ++it) {
      const std::string name = (*it)[1].str();
      std::string description =
          name == "id" || name == "run" ? "A run id or a unique prefix of one" : "The " + name;
      if (op.pattern.find("{" + name + "*}") != std::string::npos) {
        description = "The rest of the path";
      }
      parameters.push_back({{"name", name},
                            {"in", "path"},
                            {"required", true},
                            {"schema", {{"type", "string"}}},
                            {"description", description}});
    }
    for (Json query : op.query) {
      query["in"] = "query";
      parameters.push_back(std::move(query));
    }
    if (op.pattern.find("/events/stream") != std::string::npos &&
        op.pattern != "/api/events/stream") {
      parameters.push_back({{"name", "Last-Event-ID"},
                            {"in", "header"},
                            {"schema", {{"type", "string"}}},
                            {"description", "The seq of the last event the client has"}});
    }
    Json operation = {{"operationId", op.operation_id},
                      {"summary", op.summary},
                      {"x-oe-scope", std::string(httpd::scopeName(op.scope))}};
    if (!parameters.empty()) {
      operation["parameters"] = std::move(parameters);
    }
    if (!op.body.is_null()) {
      // validate's body is optional (an empty one is {"strict": false}).
      operation["requestBody"] = {{"required", op.pattern != "/api/experiences/{name}/validate"},
                                  {"content", {{"application/json", {{"schema", op.body}}}}}};
    }
    Json success = {{"description", op.summary}};
    if (!op.content_type.empty()) {
      success["content"] = {{op.content_type, {{"schema", op.schema}}}};
    }
    Json responses = {{std::to_string(op.status), std::move(success)}};
    std::vector<int> errors = op.errors;
    if (op.scope != Scope::kPublic) {
      errors.push_back(401);
      errors.push_back(403);
    }
    errors.push_back(500);
    for (const int status : errors) {
      responses[std::to_string(status)] = problemResponse(errorText(status));
    }
    operation["responses"] = std::move(responses);
    if (op.scope == Scope::kPublic) {
      operation["security"] = Json::array();  // no token needed
    }
    std::string method = op.method;
    for (char& c : method) {
      c = static_cast<char>(c - 'A' + 'a');
    }
    paths[path][method] = std::move(operation);
  }
  return {{"openapi", "3.1.0"},
          {"info",
           {{"title", "oe serve"},
            {"version", OE_VERSION_STRING},
            {"description",
             "oe as a service: experiences, runs, live events, state, approvals, schedules and "
             "webhooks (docs/serve.md). Every error is application/problem+json whose detail "
             "says what to do. Run ids may be given as unique prefixes."}}},
          {"servers", Json::array({{{"url", "/"}}})},
          {"security", Json::array({{{"bearer", Json::array()}}})},
          {"paths", std::move(paths)},
          {"components", components()}};
}

}  // namespace

const std::vector<RouteDoc>& documentedRoutes() {
  static const std::vector<RouteDoc> kRoutes = [] {
    std::vector<RouteDoc> out;
    for (const auto& op : operations()) {
      out.push_back({op.method, op.pattern, op.scope, op.summary});
    }
    return out;
  }();
  return kRoutes;
}

std::string openApiPath(const std::string& pattern) {
  std::string out = pattern;
  for (size_t at = out.find("*}"); at != std::string::npos; at = out.find("*}")) {
    out.erase(at, 1);
  }
  return out;
}

const Json& openApiDocument() {
  static const Json kDocument = buildDocument();
  return kDocument;
}

void addOpenApiRoute(httpd::Router& router) {
  router.add("GET", "/api/openapi.json", Scope::kPublic,
             [](const httpd::Request&) { return httpd::jsonResponse(200, openApiDocument()); });
}

}  // namespace oe::service

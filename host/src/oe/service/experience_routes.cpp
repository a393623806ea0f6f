// GET /api/experiences, /api/experiences/{name}, POST .../validate, GET .../graph, .../schema.
#include "oe/service/experience_routes.hpp"

#include <string>
#include <utility>

#include "oe/events/event_log.hpp"
#include "oe/ops/context.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/report/graph_render.hpp"
#include "oe/runs/run_history.hpp"
#include "oe/spec/loader.hpp"
#include "oe/spec/workspace.hpp"

namespace oe::service {
namespace {

namespace fs = std::filesystem;
using httpd::Request;
using httpd::Response;

// Plugin log lines of a describe-only registry: nothing of them belongs in an answer, and a
// manifest's problems show as the diagnostics they cause.
class QuietLog final : public plugins::LogSink {
 public:
  void write(oe_log_level, std::string_view, std::string_view) override {}
};

Json diagnosticJson(const Diagnostic& d) {
  Json out = {{"severity", d.severity == Severity::kError ? "error" : "warning"},
              {"file", d.file},
              {"message", d.message},
              {"text", d.format()}};
  if (d.line > 0) {
    out["line"] = d.line;
    out["column"] = d.column;
  }
  if (!d.node_id.empty()) {
    out["node"] = d.node_id;
  }
  if (!d.field.empty()) {
    out["field"] = d.field;
  }
  return out;
}

Json listJson(const ExperienceRef& ref) {
  return {{"name", ref.name},
          {"path", ref.rel},
          {"description", ref.description},
          {"nodes", ref.nodes},
          {"triggers", ref.triggers}};
}

// The args of the experience's newest run that has run.started, or null.
Json lastArgs(const ReadContext& context, const ExperienceRef& ref) {
  for (const auto& record : runsOf(context, ref, /*details=*/false)) {
    if (record.started_at.empty() || !record.parent_run_id.empty()) {
      continue;
    }
    auto log = events::readEventLog(record.log);
    if (log && !log->events.empty() && log->events.front().is_object()) {
      const Json& args = log->events.front().value("args", Json());
      if (args.is_object()) {
        return args;
      }
    }
    break;
  }
  return nullptr;
}

Response invalid(const ExperienceRef& ref, const std::vector<Diagnostic>& diagnostics) {
  std::string text;
  for (const auto& d : diagnostics) {
    if (d.severity == Severity::kError) {
      text += (text.empty() ? "" : "; ") + d.format();
    }
  }
  return httpd::problem(422, "experience-invalid", "The experience is not valid",
                        ref.yaml.string() + ": " + text + ". Fix it; POST /api/experiences/" +
                            ref.name + "/validate lists every finding");
}

Response experienceRoute(const ReadContext& context, const Request& request) {
  auto ref = findExperience(context, request.params.at("name"));
  if (!ref.ok()) {
    return std::move(ref.problem());
  }
  auto loaded = spec::loadExperience(ref->yaml);
  if (!loaded.experience) {
    return invalid(*ref, loaded.diagnostics);
  }
  const spec::Experience& model = *loaded.experience;
  Json nodes = Json::array();
  for (const auto& node : model.nodes) {
    Json out = {{"id", node.id},
                {"kind", node.kind},
                {"reads", node.reads},
                {"writes", node.writes},
                {"args", node.args}};
    if (node.phase) {
      out["phase"] = *node.phase;
    }
    nodes.push_back(std::move(out));
  }
  Json edges = Json::array();
  for (const auto& edge : model.edges) {
    Json out = {{"from", edge.from}, {"to", edge.to}};
    if (edge.when) {
      out["when"] = *edge.when;
    }
    edges.push_back(std::move(out));
  }
  const Json last = lastArgs(context, *ref);
  Json schema = startFormSchema(model.raw, last.is_object() ? &last : nullptr);
  return httpd::jsonResponse(200, {{"name", model.name},
                                   {"path", ref->rel},
                                   {"description", model.description},
                                   {"version", model.version},
                                   {"nodes", std::move(nodes)},
                                   {"edges", std::move(edges)},
                                   {"triggers", ref->triggers},
                                   {"args_schema", schema["args"]},
                                   {"state_schema", schema["state"]},
                                   {"document", model.raw}});
}

Response validateRoute(const ReadContext& context, const Request& request) {
  auto ref = findExperience(context, request.params.at("name"));
  if (!ref.ok()) {
    return std::move(ref.problem());
  }
  bool strict = false;
  if (!request.body.empty()) {
    const Json body = Json::parse(request.body, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object() || (body.contains("strict") && !body["strict"].is_boolean())) {
      return httpd::problem(400, "bad-body", "Bad request body",
                            "the body is a JSON object {\"strict\": true|false} (or empty); "
                            "strict makes warnings errors, as `oe validate --strict`");
    }
    strict = body.value("strict", false);
  }
  QuietLog log;
  plugins::PluginRegistry registry(&log, plugins::Access::kDescribe);
  const ops::Checked checked =
      ops::checkExperience(ref->yaml, registry, strict, /*report_problems=*/false);
  Json errors = Json::array();
  Json warnings = Json::array();
  for (const auto& d : checked.diagnostics) {
    (d.severity == Severity::kError ? errors : warnings).push_back(diagnosticJson(d));
  }
  return httpd::jsonResponse(200, {{"name", ref->name},
                                   {"file", ref->yaml.string()},
                                   {"valid", checked.valid()},
                                   {"errors", std::move(errors)},
                                   {"warnings", std::move(warnings)}});
}

Response graphRoute(const ReadContext& context, const Request& request) {
  auto ref = findExperience(context, request.params.at("name"));
  if (!ref.ok()) {
    return std::move(ref.problem());
  }
  const auto direction = request.queryParam("direction");
  if (direction && *direction != "TD" && *direction != "LR") {
    return httpd::problem(400, "bad-direction", "Bad direction",
                          "direction=" + std::string(*direction) +
                              ": use TD (top down, the default) or LR (left to right)");
  }
  QuietLog log;
  plugins::PluginRegistry registry(&log, plugins::Access::kDescribe);
  const ops::Checked checked =
      ops::checkExperience(ref->yaml, registry, false, /*report_problems=*/false);
  if (!checked.valid()) {
    return invalid(*ref, checked.diagnostics);
  }
  const spec::Experience& model = *checked.model();
  Json nodes = Json::array();
  for (const auto& node : model.nodes) {
    nodes.push_back(
        {{"id", node.id}, {"kind", node.kind}, {"phase", node.phase ? Json(*node.phase) : Json()}});
  }
  Json edges = Json::array();
  for (const auto& edge : model.edges) {
    edges.push_back(
        {{"from", edge.from}, {"to", edge.to}, {"when", edge.when ? Json(*edge.when) : Json()}});
  }
  const auto dir = direction && *direction == "LR" ? report::GraphDirection::kLeftRight
                                                   : report::GraphDirection::kTopDown;
  return httpd::jsonResponse(200, {{"name", model.name},
                                   {"nodes", std::move(nodes)},
                                   {"edges", std::move(edges)},
                                   {"svg", report::graphSvg(model, dir)},
                                   {"svg_css", std::string(report::graphSvgCss())},
                                   {"mermaid", report::mermaidGraph(model, dir)}});
}

Response schemaRoute(const ReadContext& context, const Request& request) {
  auto ref = findExperience(context, request.params.at("name"));
  if (!ref.ok()) {
    return std::move(ref.problem());
  }
  auto loaded = spec::loadExperience(ref->yaml);
  if (!loaded.experience) {
    return invalid(*ref, loaded.diagnostics);
  }
  const Json last = lastArgs(context, *ref);
  return httpd::jsonResponse(
      200, startFormSchema(loaded.experience->raw, last.is_object() ? &last : nullptr));
}

}  // namespace

Json startFormSchema(const Json& raw, const Json* last_args) {
  Json args = {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
               {"type", "object"},
               {"additionalProperties", true},
               {"description",
                "Run-level args (`oe run --args`): experience.yaml does not declare them; every "
                "node sees them as placeholders and in its args bundle."}};
  if (last_args != nullptr) {
    args["examples"] = Json::array({*last_args});
  }
  Json properties = Json::object();
  const Json* schema = nullptr;
  if (raw.is_object() && raw.contains("state") && raw["state"].is_object() &&
      raw["state"].contains("schema") && raw["state"]["schema"].is_object()) {
    schema = &raw["state"]["schema"];
  }
  if (schema != nullptr) {
    for (const auto& [field, declared] : schema->items()) {
      Json property = declared.is_object() ? declared : Json::object();
      if (property.contains("merge")) {
        property["x-oe-merge"] = property["merge"];
        property.erase("merge");
      }
      properties[field] = std::move(property);
    }
  }
  Json state = {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
                {"type", "object"},
                {"properties", std::move(properties)},
                {"additionalProperties", false}};
  return {{"args", std::move(args)}, {"state", std::move(state)}};
}

void addExperienceRoutes(httpd::Router& router, std::shared_ptr<const ReadContext> context) {
  router.add("GET", "/api/experiences", httpd::Scope::kRead, [context](const Request&) {
    Json list = Json::array();
    for (const auto& ref : listExperiences(*context)) {
      list.push_back(listJson(ref));
    }
    return httpd::jsonResponse(200, list);
  });
  router.add("GET", "/api/experiences/{name}", httpd::Scope::kRead,
             [context](const Request& request) { return experienceRoute(*context, request); });
  router.add("POST", "/api/experiences/{name}/validate", httpd::Scope::kRead,
             [context](const Request& request) { return validateRoute(*context, request); });
  router.add("GET", "/api/experiences/{name}/graph", httpd::Scope::kRead,
             [context](const Request& request) { return graphRoute(*context, request); });
  router.add("GET", "/api/experiences/{name}/schema", httpd::Scope::kRead,
             [context](const Request& request) { return schemaRoute(*context, request); });
}

}  // namespace oe::service

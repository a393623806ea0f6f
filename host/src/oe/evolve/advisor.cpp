// The advisor's inputs from a finished run, and the one-node in-process call of the `evolution`
// kind: the same plugin ABI a run uses (create, invoke, destroy), without a run around it.
#include "oe/evolve/advisor.hpp"

#include <map>

#include "oe/llm/host_call.hpp"
#include "oe/state/state_store.hpp"

namespace oe::evolve {
namespace {

std::string jsonString(std::string_view text) { return Json(std::string(text)).dump(); }

}  // namespace

Result<Json> stateDiff(const std::filesystem::path& db_path, const spec::StateSpec& schema,
                       std::string_view run_id) {
  Json diff = Json::array();
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) {
    return diff;  // no run ever wrote state
  }
  auto store = state::StateStore::open(db_path, schema);
  if (!store) {
    return store.error();
  }
  for (const auto& field : schema.fields) {
    auto rows = (*store)->history(field.name);
    if (!rows) {
      return rows.error();
    }
    const std::vector<state::HistoryRow> expanded = state::expandAppends(std::move(*rows));
    const state::HistoryRow* first = nullptr;
    const state::HistoryRow* last = nullptr;
    for (const auto& row : expanded) {
      if (row.run_id == run_id) {
        first = first == nullptr ? &row : first;
        last = &row;
      }
    }
    if (first == nullptr) {
      continue;
    }
    Json entry = Json::object();
    entry["field"] = field.name;
    entry["before"] = first->value_old ? *first->value_old : Json(nullptr);
    entry["after"] = last->value_new;
    diff.push_back(std::move(entry));
  }
  return diff;
}

Json advisorArgs(std::string experience_yaml, Json run_events, Json state_diff,
                 std::string_view run_id) {
  Json args = Json::object();
  args["experience_yaml"] = std::move(experience_yaml);
  args["run_events"] = std::move(run_events);
  args["state_diff"] = std::move(state_diff);
  args["run_id"] = std::string(run_id);
  return args;
}

Result<AdvisorResult> askAdvisor(const plugins::PluginRegistry& registry, llm::LlmService& llm,
                                 const Json& node_spec, const Json& args,
                                 const std::filesystem::path& experience_dir,
                                 plugins::LogSink& sink) {
  const plugins::LoadedKind* kind = registry.find("evolution");
  if (kind == nullptr) {
    return makeError(
        "no plugin provides the `evolution` node kind: oe looks in <experience>/plugins, "
        "$OE_PLUGIN_PATH and <oe>/../lib/oe/plugins (`oe plugins` lists what it found); "
        "install oe with its evolution plugin");
  }
  const std::string node_id = node_spec.value("id", "evolution");
  llm::HostCall call(llm, node_id, sink);
  const std::string dir_json = jsonString(experience_dir.string());
  const std::string config =
      "{\"experience_dir\":" + dir_json + ",\"node\":" + node_spec.dump() + "}";
  oe_writer err;
  oe_node* instance = nullptr;
  const oe_status created =
      kind->kind->create(kind->library ? kind->library->self() : nullptr,
                         kind->descriptor != nullptr ? kind->descriptor : kind->kind,
                         oe_str{config.data(), config.size()}, call.handle(), &instance, &err);
  if (created != OE_OK || instance == nullptr) {
    return makeError(err.data.empty() ? "the evolution plugin could not create its node (status " +
                                            std::to_string(created) + ")"
                                      : err.data);
  }
  const std::string request = "{\"node\":" + node_spec.dump() + ",\"args\":" + args.dump() +
                              ",\"state_view\":{},\"edge_inputs\":{},\"context\":{\"run_id\":" +
                              jsonString(args.value("run_id", "")) +
                              ",\"node_id\":" + jsonString(node_id) +
                              ",\"experience_dir\":" + dir_json + ",\"attempt\":1}}";
  oe_writer response;
  oe_writer error;
  const oe_invocation inv{sizeof(oe_invocation), 1, oe_str{request.data(), request.size()},
                          call.handle(), &response, &error};
  const oe_status status = kind->kind->invoke(instance, &inv);
  kind->kind->destroy(instance);
  if (status != OE_OK) {
    return makeError(error.data.empty() ? "the evolution plugin failed with status " +
                                              std::to_string(status) + " and no message"
                                        : error.data);
  }
  const Json out = Json::parse(response.data, nullptr, false);
  const Json* proposals = nullptr;
  if (out.is_object() && out.contains("edge_output") && out["edge_output"].is_object()) {
    auto it = out["edge_output"].find("proposals");
    if (it != out["edge_output"].end() && it->is_array()) {
      proposals = &*it;
    }
  }
  if (proposals == nullptr) {
    return makeError("the evolution plugin answered without edge_output.proposals: " +
                     response.data.substr(0, 200));
  }
  AdvisorResult result;
  for (const auto& p : *proposals) {
    result.proposals.push_back(Proposal::fromJson(p));
  }
  result.usage = call.usage();
  return result;
}

}  // namespace oe::evolve

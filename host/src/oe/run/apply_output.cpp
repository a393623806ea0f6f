// A call's output applied: the state_delta checked against the node's writes
// (runtime.strict_writes), written to the store (or forwarded to a nested run's parent) unless it
// already landed in the chain, the edge_output handed to the successors, the output stored in
// the cache, node.finished logged; and a for_each item's output that is not applied (dropped
// after the run stopped, under runtime.deterministic).
#include <algorithm>

#include "oe/run/engine.hpp"

namespace oe::run::engine {

bool Run::applyOutput(Call& call, const Json& output, bool from_cache, std::string* error) {
  NodeRuntime& node = *call.node;
  if (!output.is_object() || !output.contains("state_delta") ||
      !output["state_delta"].is_object()) {
    *error = nodeLabel(node) +
             " returned no state_delta object; a node must answer "
             "{\"state_delta\": {...}}";
    return false;
  }
  const Json& delta = output["state_delta"];
  std::vector<std::string> written;
  // A write that already landed in this chain of runs (a resume replaying, or running again,
  // what the interrupted run had finished) is not applied again, whatever its inputs are now:
  // an array_append would grow twice, a last_wins field would lose what a later node wrote.
  const std::string_view write_key =
      delta.empty() ? std::string_view() : std::string_view(call.write_key);
  const state::WriteMeta meta{log_.runId(), node.spec->id, write_key, call.cache_key};
  const bool landed = store_.landedInput(write_key) != nullptr;
  if (!landed && node.spec->writes_declared && !delta.empty() &&
      !checkWrites(node, delta, error)) {
    return false;  // runtime.strict_writes: refused before anything of it lands
  }
  const Json* to_apply = &delta;
  Json local;
  if (options_.nesting.forward_write && !delta.empty()) {
    // A nested run sharing its parent's state: the parent's store first (its type checks and
    // merge rules); what had already landed there is not applied here again either.
    auto landed_above = options_.nesting.forward_write(delta, meta);
    if (!landed_above) {
      *error = nodeLabel(node) + ": " + landed_above.error().message;
      return false;
    }
    if (!landed_above->empty()) {
      local = delta;
      for (const std::string& field : *landed_above) {
        local.erase(field);
      }
      to_apply = &local;
    }
  }
  if (!to_apply->empty() && !landed) {
    auto result = store_.write(*to_apply, meta);
    if (!result) {
      *error = result.error().message;
      return false;
    }
    written = std::move(result).value();
  }
  for (const auto& field : written) {
    log_.stateWrite(node.spec->id, field);
  }
  if (output.contains("edge_output")) {
    // Buffered for every successor; the last write wins (reference §3.3).
    for (uint32_t succ : dag_.succs[node.index]) {
      nodes_[succ].edge_inputs[node.spec->id] = output["edge_output"];
    }
  }
  if (!from_cache) {
    // Before node.finished: once the log says a node finished, a resume must find its entry.
    storeInCache(call, output);
  }
  const Json* metrics = nullptr;
  auto it = output.find("metrics");
  if (it != output.end() && !it->is_null() && !(it->is_object() && it->empty())) {
    metrics = &*it;
  }
  log_.nodeFinished(node.spec->id, node.spec->phase, metrics, from_cache, itemOf(call));
  return true;
}

bool Run::checkWrites(const NodeRuntime& node, const Json& delta, std::string* error) {
  const std::vector<std::string>& writes = node.spec->writes;
  for (const auto& [field, value] : delta.items()) {
    if (std::find(writes.begin(), writes.end(), field) != writes.end()) {
      continue;
    }
    std::string listed;
    for (const std::string& w : writes) {
      listed += (listed.empty() ? "" : ", ") + w;
    }
    if (listed.empty()) {
      listed = "none";
    }
    const std::string& id = node.spec->id;
    if (exp_.runtime.strict_writes) {
      *error = "Node \"" + id + "\" wrote field \"" + field +
               "\", which is not in its writes (" + listed +
               "); runtime.strict_writes refuses it, so nothing of the node's output was "
               "applied. Add \"" + field + "\" to the node's writes, or stop the node writing it";
      return false;
    }
    // Applied, as upstream does (it never checked writes), and said once per node and field.
    if (outside_writes_.insert(id + '\n' + field).second) {
      warn(id, "node \"" + id + "\" wrote field \"" + field + "\", which is not in its writes (" +
                   listed + "); it was applied. Add \"" + field +
                   "\" to the node's writes, or set runtime.strict_writes: true to refuse such "
                   "writes");
    }
  }
  return true;
}

void Run::storeInCache(Call& call, const Json& output) {
  if (cache_ == nullptr || call.uncacheable) {
    return;
  }
  Json stored = Json::object();
  stored["state_delta"] = output["state_delta"];
  if (output.contains("edge_output")) {
    stored["edge_output"] = output["edge_output"];
  }
  if (output.contains("metrics") && !output["metrics"].is_null()) {
    stored["metrics"] = output["metrics"];
  }
  auto put = cache_->put(call.cache_key, call.node->spec->id, log_.runId(), stored);
  if (put && call.names_paths) {
    // A call that changed the files it is keyed by (a report or a log named in its args, one it
    // created) is stored under the key of the files as it left them too: the next run finds
    // them so and replays it, instead of running it again because of its own writes.
    std::vector<cache::FileDigest> after;
    if (file_table_.addDataFiles(call.args, *call.node->spec, after).empty() &&
        after != call.data_files) {
      data_files_changed_ = true;
      put = cache_->put(keyOf(*call.node, call, after), call.node->spec->id, log_.runId(), stored);
    }
  }
  if (!put) {
    Json warning = {{"type", "node.log"},
                    {"node_id", call.node->spec->id},
                    {"level", "warn"},
                    {"message", "cache write failed: " + put.error().message}};
    emitLocal(std::move(warning));
  }
}

void Run::dropItem(Call& call) {
  const std::string message =
      "not applied: an earlier item of this for_each did not finish before the run stopped "
      "(runtime.deterministic keeps item order); its output is kept in the cache and `oe "
      "resume` applies it in order";
  settleFailure(call, message, /*cancelled=*/true);
  auto finish = std::move(call.done);
  finish(false, nullptr);
}

}  // namespace oe::run::engine

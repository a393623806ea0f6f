// The analysis of a run's events (see run_analysis.hpp).
#include "oe/runs/run_analysis.hpp"

#include <algorithm>
#include <utility>

#include "oe/events/event_log.hpp"

namespace oe::runs {

using events::parseIsoMs;

// `object[key]`, or null when `object` is no object or lacks it (a log can be edited: no
// member is trusted to exist or to have its type).
const Json& member(const Json& object, const char* key) {
  static const Json kNull;
  if (!object.is_object()) {
    return kNull;
  }
  auto it = object.find(key);
  return it != object.end() ? *it : kNull;
}

// A count (tokens, attempts, ms), clamped so that summing an edited log's cannot overflow.
int64_t asInt(const Json& value) {
  constexpr int64_t kMaxCount = int64_t{1} << 50;
  if (value.is_number_unsigned()) {
    return std::min<uint64_t>(value.get<uint64_t>(), kMaxCount);
  }
  return value.is_number_integer() ? std::clamp<int64_t>(value.get<int64_t>(), 0, kMaxCount) : 0;
}
double asDouble(const Json& value) { return value.is_number() ? value.get<double>() : 0.0; }

std::string policyDenial(const Json& event) {
  const Json& rule = member(event, "rule");
  std::string out = rule.is_string() ? rule.get<std::string>() : std::string("policy");
  const Json& host = member(event, "host");
  if (host.is_string()) {
    out += " " + host.get<std::string>();
    const Json& port = member(event, "port");
    if (port.is_number_integer()) {
      out += ":" + std::to_string(port.get<int64_t>());
    }
  }
  return out;
}

std::string crashText(const Json& event) {
  const auto text = [&](const char* key, const char* otherwise) {
    const Json& value = member(event, key);
    return value.is_string() ? value.get<std::string>() : std::string(otherwise);
  };
  const std::string cause = text("cause", "a fatal signal");
  const std::string phase = text("phase", "invoke");
  std::string out = "plugin `" + text("plugin", "?") + "` ";
  out += cause == "exit()" ? "called exit() in " + phase : "crashed in " + phase + " (" + cause + ")";
  return out + " in call `" + text("call", "?") + "`; oe died with it";
}

namespace {

NodeSummary& nodeOf(RunModel& model, const std::string& id) {
  auto [it, inserted] = model.index.emplace(id, model.nodes.size());
  if (inserted) {
    model.nodes.emplace_back().id = id;
  }
  return model.nodes[it->second];
}

// A call's row label: the node id, and for an item of a for_each, pipeline or loop (oe's "item"
// on its node events) the item's index, so ten items of `square` are not ten rows `square`.
std::string callLabel(const std::string& id, const Json& event) {
  auto item = event.find("item");
  return item != event.end() && item->is_number_integer()
             ? id + " [" + std::to_string(item->get<int64_t>()) + "]"
             : id;
}

// Ends the oldest open call of `node` at `ts` (or records a call that had no node.ready: a
// node reused from the cache by a --from/--only run, or a log from before node.ready).
void endCall(RunModel& model, NodeSummary& node, int64_t ts, std::string outcome,
             const Json& event) {
  size_t call = 0;
  if (node.open.empty()) {
    call = model.calls.size();
    model.calls.push_back(Call{node.id, 0, ts, -1, ts, {}, {}});
    node.call_rows.push_back(call);
  } else {
    call = node.open.front();
    node.open.pop_front();
  }
  if (model.calls[call].label == node.id) {  // a cache hit has no node.started to name it
    model.calls[call].label = callLabel(node.id, event);
  }
  model.calls[call].ended = ts;
  model.calls[call].outcome = std::move(outcome);
}

// The oldest open call of `node` that an attempt has started, or that none has (node.started
// and node.retry come in call order for the calls of one node).
Call* openCall(RunModel& model, NodeSummary& node, bool started) {
  for (size_t call : node.open) {
    if ((model.calls[call].started >= 0) == started) {
      return &model.calls[call];
    }
  }
  return nullptr;
}

}  // namespace

RunModel analyse(const std::vector<Json>& events) {
  RunModel model;
  for (const Json& event : events) {
    const std::string type = stringField(event, "type");
    const int64_t ts = parseIsoMs(stringField(event, "ts"));
    model.last_ts = std::max(model.last_ts, ts);
    if (type == "run.started") {
      model.started = ts;
      model.started_event = event;
      continue;
    }
    if (type == "run.finished") {
      model.ended = ts;
      model.finished_event = event;
      model.status = stringField(event, "status");
      model.reason = stringField(event, "reason");
      continue;
    }
    const std::string id = stringField(event, "node_id");
    if (id.empty()) {
      continue;  // run.warning without a node, the host's own node.log lines
    }
    NodeSummary& node = nodeOf(model, id);
    if (node.first_ts < 0) {
      node.first_ts = ts;
    }
    node.last_ts = std::max(node.last_ts, ts);
    if (node.phase.empty()) {
      node.phase = stringField(event, "phase");
    }
    if (type == "node.ready") {
      ++node.calls;
      node.open.push_back(model.calls.size());
      node.call_rows.push_back(model.calls.size());
      model.calls.push_back(Call{id, 0, ts, -1, -1, "running", {}});
    } else if (type == "node.started") {
      if (Call* call = openCall(model, node, /*started=*/false)) {
        call->started = ts;
        call->label = callLabel(id, event);
      }
    } else if (type == "node.retry") {
      node.retries.push_back(event);
      if (Call* call = openCall(model, node, /*started=*/true)) {
        call->retries.push_back(ts);
      }
    } else if (type == "node.finished") {
      ++node.finished;
      const bool cached = member(event, "cached") == Json(true);
      node.cached += cached ? 1 : 0;
      endCall(model, node, ts, cached ? "cached" : "success", event);
      if (auto metrics = event.find("metrics");
          metrics != event.end() && metrics->is_object() && !node.usage_from_events) {
        node.tokens_in += asInt(member(*metrics, "tokens_in"));
        node.tokens_out += asInt(member(*metrics, "tokens_out"));
        node.cost_usd += asDouble(member(*metrics, "cost_usd"));
        node.has_usage =
            node.has_usage || metrics->contains("tokens_in") || metrics->contains("cost_usd");
      }
    } else if (type == "node.failed") {
      ++node.failed;
      node.errors.push_back(stringField(event, "error"));
      endCall(model, node, ts, "failed", event);
    } else if (type == "plugin.crashed") {
      // oe died in this call (plugins/crash_guard.hpp): the attempt failed with the process.
      ++node.failed;
      node.errors.push_back(crashText(event));
      endCall(model, node, ts, "failed", event);
    } else if (type == "node.skipped") {
      ++node.skipped;
      node.skip_reason = stringField(event, "reason");
    } else if (type == "policy.applied") {
      node.policy = member(event, "policy");
    } else if (type == "policy.denied") {
      node.denials.push_back(policyDenial(event));
    } else if (type == "node.diff") {
      node.diffs.push_back(event);
    } else if (type == "state.write") {
      const std::string field = stringField(event, "field");
      if (std::find(node.writes.begin(), node.writes.end(), field) == node.writes.end()) {
        node.writes.push_back(field);
      }
    } else if (type == "node.tokens") {
      if (!node.usage_from_events) {  // the metrics summed so far count these calls' tokens
        node.tokens_in = node.tokens_out = 0;
        node.cost_usd = 0;
        node.usage_from_events = true;
      }
      node.has_usage = true;
      node.tokens_in += asInt(member(event, "input_tokens"));
      node.tokens_out += asInt(member(event, "output_tokens"));
      node.cost_usd += asDouble(member(event, "cost_usd"));
    } else if (type == "node.activity") {
      const std::string sub = stringField(event, "sub_event_log");
      if (!sub.empty()) {
        node.sub_logs.push_back(sub);
      }
    }
  }
  return model;
}

}  // namespace oe::runs

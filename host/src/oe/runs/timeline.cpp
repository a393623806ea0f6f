// A run's timeline from its events (see timeline.hpp).
#include "oe/runs/timeline.hpp"

#include <map>

#include "oe/events/event_log.hpp"
#include "oe/runs/run_analysis.hpp"
#include "oe/runs/run_history.hpp"

namespace oe::runs {

Timeline timelineOf(const std::vector<Json>& events, const std::string& run_id, bool expand,
                    int depth) {
  Timeline out;
  out.run_id = run_id;
  std::map<std::string, size_t> index;
  int64_t run_start = -1;
  int64_t run_end = -1;
  for (const auto& e : events) {
    const std::string type = stringField(e, "type");
    const int64_t ts = events::parseIsoMs(stringField(e, "ts"));
    if (type == "run.started") {
      run_start = ts;
      continue;
    }
    if (type == "run.finished") {
      run_end = ts;
      out.status = stringField(e, "status", "?");
      if (e.contains("reason")) {
        out.status += " (" + e["reason"].get<std::string>() + ")";
      }
      continue;
    }
    const std::string id = stringField(e, "node_id");
    if (id.empty()) {
      continue;
    }
    auto [it, inserted] = index.emplace(id, out.nodes.size());
    if (inserted) {
      TimelineNode fresh;
      fresh.id = id;
      out.nodes.push_back(std::move(fresh));
    }
    TimelineNode& line = out.nodes[it->second];
    if (line.first_ts < 0) {
      line.first_ts = ts;
    }
    if (type == "node.ready") {
      ++line.calls;
    } else if (type == "node.started") {
      line.started = true;
      line.status = "running";
    } else if (type == "node.finished") {
      line.last_ts = ts;
      if (line.failures == 0 && line.cancels == 0) {
        line.status = line.started ? "success" : "cached";
      }
    } else if (type == "node.failed") {
      line.last_ts = ts;
      if (e.value("cancelled", false)) {  // stopped by the run, not failed
        ++line.cancels;
        if (line.failures == 0) {
          line.status = "cancelled";
        }
      } else {
        ++line.failures;
        line.status = "failed";
      }
      line.detail = stringField(e, "error");
    } else if (type == "plugin.crashed") {
      line.last_ts = ts;
      ++line.failures;
      line.status = "crashed";
      line.detail = crashText(e);
    } else if (type == "node.skipped") {
      line.status = "skipped";
      line.detail = stringField(e, "reason");
    } else if (type == "policy.applied" && e.contains("policy")) {
      line.policy = e["policy"].dump();
    } else if (type == "policy.denied") {
      line.denials.push_back(policyDenial(e));
    } else if (type == "node.activity" && e.contains("sub_event_log") &&
               e["sub_event_log"].is_string()) {
      line.sub_logs.emplace_back(e["sub_event_log"].get<std::string>());
    }
  }
  if (run_start >= 0 && run_end >= run_start) {
    out.duration_ms = run_end - run_start;
  }
  if (!expand || depth >= kMaxNestedDepth) {
    return out;
  }
  for (TimelineNode& line : out.nodes) {
    for (const auto& sub : line.sub_logs) {
      NestedTimeline nested{sub, "", {}};
      if (auto log = events::readEventLog(sub)) {
        nested.timeline.push_back(timelineOf(log->events, sub.stem().string(), true, depth + 1));
      } else {
        nested.error = log.error().message;
      }
      line.nested.push_back(std::move(nested));
    }
  }
  return out;
}

void expandNestedEvents(Json& events, int depth) {
  for (Json& event : events) {
    auto sub = event.find("sub_event_log");
    if (sub == event.end() || !sub->is_string() || depth >= kMaxNestedDepth) {
      continue;
    }
    auto log = events::readEventLog(sub->get<std::string>());
    if (!log) {
      event["sub_events_error"] = log.error().message;
      continue;
    }
    Json inner(log->events);
    expandNestedEvents(inner, depth + 1);
    event["sub_events"] = std::move(inner);
  }
}

}  // namespace oe::runs

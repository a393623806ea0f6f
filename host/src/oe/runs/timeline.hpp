// `oe inspect`'s timeline of a run, as data: one line per node in the order the log first names
// it (its status, calls, failures and cancels, first and last event, the last error or skip
// reason, the nested runs it started), and, expanded, the timelines of those nested runs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "oe/common/json.hpp"

namespace oe::runs {

struct Timeline;

// A nested run a node started (its node.activity names the log): its timeline, or why its log
// could not be read.
struct NestedTimeline {
  std::filesystem::path log;
  std::string error;               // set when the log could not be read
  std::vector<Timeline> timeline;  // one, when it was read
};

struct TimelineNode {
  std::string id;
  std::string status = "ready";  // running, success, cached, failed, cancelled, skipped
  int64_t first_ts = -1;
  int64_t last_ts = -1;
  int calls = 0;     // node.ready events: a for_each item is one
  int failures = 0;  // node.failed, not cancelled
  int cancels = 0;   // node.failed with "cancelled": stopped by the run
  bool started = false;
  std::string detail;                           // the last error or skip reason
  std::string policy;                           // the last policy.applied's policy, compact JSON
  std::vector<std::string> denials;             // policyDenial() of each policy.denied
  std::vector<std::filesystem::path> sub_logs;  // the nested runs this node started
  std::vector<NestedTimeline> nested;           // theirs, when expanded

  // first to last event, or -1 when it did not end.
  [[nodiscard]] int64_t durationMs() const {
    return first_ts >= 0 && last_ts >= first_ts ? last_ts - first_ts : -1;
  }
};

struct Timeline {
  std::string run_id;
  // run.finished's status and (reason), or that there is none.
  std::string status = "unfinished (no run.finished: killed or still running)";
  int64_t duration_ms = -1;  // run.started to run.finished; -1 when unknown
  std::vector<TimelineNode> nodes;
};

// The timeline of `events` (a run's log, in file order). With `expand`, each node's nested runs
// are read from their logs and added, to kMaxNestedDepth levels below `depth`.
[[nodiscard]] Timeline timelineOf(const std::vector<Json>& events, const std::string& run_id,
                                  bool expand, int depth = 0);

// `oe inspect --json --expand`: each nested run's events inlined under the node.activity that
// announced them ("sub_events", or "sub_events_error" when its log cannot be read).
void expandNestedEvents(Json& events, int depth = 0);

}  // namespace oe::runs

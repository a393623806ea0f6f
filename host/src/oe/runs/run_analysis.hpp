// A run's events read as a model: one summary per node (status, calls, retries, writes, token
// use, nested logs) and one row per call (queued, started, ended, retries), as the HTML report and
// any other view of a run show them. A pure function of the events: a log can be edited, so no
// member is trusted to exist or to have its type.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "oe/common/json.hpp"

namespace oe::runs {

// One call of a node: from node.ready to node.finished/failed (its attempts and retry waits in
// between). A cache hit has no node.started, so `started` stays -1.
struct Call {
  std::string label;
  int depth = 0;  // nesting: 0 for the run's own nodes
  int64_t ready = -1;
  int64_t started = -1;
  int64_t ended = -1;
  std::string outcome = "running";
  std::vector<int64_t> retries;  // when each failed attempt before the last one ended
};

// A policy.denied event in a few words: its rule, and the host and port the proxy refused.
[[nodiscard]] std::string policyDenial(const Json& event);
// A plugin.crashed event as one line (docs/trust.md, "When a plugin crashes"): "plugin `P`
// crashed in invoke (SIGSEGV) in call `node#3`; oe died with it".
[[nodiscard]] std::string crashText(const Json& event);

struct NodeSummary {
  std::string id;
  std::string phase;
  int calls = 0;
  int finished = 0;
  int cached = 0;
  int failed = 0;
  int skipped = 0;
  int64_t first_ts = -1;
  int64_t last_ts = -1;
  std::vector<Json> retries;  // the node.retry events
  std::vector<std::string> errors;
  std::string skip_reason;
  Json policy;                       // the last policy.applied's policy (null: none in force)
  std::vector<std::string> denials;  // each policy.denied: "rule" or "rule host:port"
  std::vector<std::string> writes;   // fields, from state.write, in order
  std::vector<Json> diffs;           // the node.diff events (workspace: worktree), one per item
  int64_t tokens_in = 0;
  int64_t tokens_out = 0;
  double cost_usd = 0;
  bool usage_from_events = false;  // node.tokens seen: metrics would count the same tokens again
  bool has_usage = false;
  std::vector<std::string> sub_logs;
  std::deque<size_t> open;  // the calls not ended yet, oldest first (indices into calls)
  std::vector<size_t> call_rows;

  [[nodiscard]] std::string status() const {
    if (failed > 0) {
      return "failed";
    }
    if (!open.empty()) {
      return "running";
    }
    if (finished > 0) {
      return cached == finished ? "cached" : "success";
    }
    if (skipped > 0) {
      return "skipped";
    }
    return calls > 0 ? "running" : "not run";
  }
};

struct RunModel {
  std::string status = "unfinished";
  std::string reason;
  int64_t started = -1;
  int64_t ended = -1;
  int64_t last_ts = -1;
  Json started_event;
  Json finished_event;
  std::vector<NodeSummary> nodes;
  std::map<std::string, size_t, std::less<>> index;
  std::vector<Call> calls;
};

// `object[key]`, or null when `object` is no object or lacks it.
const Json& member(const Json& object, const char* key);
// A count (tokens, attempts, ms), clamped so that summing an edited log's cannot overflow.
int64_t asInt(const Json& value);
// A number, or 0.
double asDouble(const Json& value);

// The model of `events` (a run's log, in file order).
RunModel analyse(const std::vector<Json>& events);

}  // namespace oe::runs

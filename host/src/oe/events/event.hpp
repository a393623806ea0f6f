// One event of a run as the bus hands it to live listeners (EventLog::subscribe,
// RunOptions::on_event): its type and node id are there without parsing anything, the whole
// event as JSON is parsed on first use, once for all the listeners of that event. Most listeners
// want a few types and these fields only, so most lines are never parsed (docs/performance.md).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "oe/common/json.hpp"

namespace oe::events {

// Handed to one listener at a time (the log's listeners run under its lock, one after the
// other), so the lazy parse needs no lock; a listener must not keep it past its call or hand it
// to another thread (copy json() for that). Neither copyable nor movable: its views point into
// itself or into the line being written.
class Event {
 public:
  // An event of the log: views into the writer's strings, which outlive the Event. `line` is
  // the JSONL line without its '\n'; `cached` is its "cached":true (node.finished only);
  // `phase` its phase when the writer knows it (the engine's node events), else null.
  // `item`: the call's "item" (a for_each item's or pipeline item's index, a loop's iteration),
  // -1 when it has none.
  Event(std::string_view type, std::string_view node_id, std::string_view line, bool cached,
        const std::optional<std::string>* phase = nullptr, int64_t item = -1)
      : type_(type),
        node_id_(node_id),
        line_(line),
        cached_(cached),
        phase_known_(phase != nullptr),
        phase_(phase != nullptr && *phase ? std::string_view(**phase) : std::string_view()),
        item_(item) {}
  // An event that exists only as JSON (the engine's live-only node.items, tests): type, node_id
  // and cached are read from it.
  explicit Event(Json event);

  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  std::string_view type() const { return type_; }
  // Empty for the run's own events (run.started, run.finished, ...).
  std::string_view nodeId() const { return node_id_; }
  // A node.finished replayed from the node cache.
  bool cached() const { return cached_; }
  // The engine's node events of one item of a node (oe's "item" member): its index, or -1.
  int64_t item() const { return item_; }
  // The "phase" member, empty when there is none: free for the engine's node events, read from
  // json() for the others (a plugin's event may carry one).
  std::string_view phase() const;
  // The line as written to the log (for an event built from JSON, its dump).
  std::string_view line() const { return line_; }
  // The whole event; an unparseable line (never written by EventLog) gives a discarded value.
  const Json& json() const;

 private:
  std::string_view type_;
  std::string_view node_id_;
  std::string_view line_;
  bool cached_ = false;
  bool phase_known_ = true;
  std::string_view phase_;
  int64_t item_ = -1;
  mutable std::optional<Json> json_;
  std::string dumped_;  // the line of an event built from JSON
};

// What the bus calls for each event (EventLog::subscribe, RunOptions::on_event).
using Listener = std::function<void(const Event& event)>;

}  // namespace oe::events

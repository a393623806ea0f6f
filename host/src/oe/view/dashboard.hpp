// The live view's model: the dashboard state of a run, reduced from its events (upstream's TUI
// reducer, reference §10). Pure and O(1) per event, so a 10,000-node run pays a hash lookup per
// event, never a scan of its nodes.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/events/event.hpp"

namespace oe::view {

enum class NodeStatus : uint8_t { kPending, kRunning, kDone, kCached, kFailed, kSkipped };
inline constexpr size_t kStatusCount = 6;
inline constexpr uint32_t kNoNode = UINT32_MAX;

// What the view knows of a node before the run starts (from the experience).
struct NodeInfo {
  std::string id;
  std::string kind;
  std::string phase;        // empty: the node declares none
  std::string phase_title;  // the phase's title, or its id
  bool for_each = false;
};

struct NodeState {
  std::string id;     // as the experience spells it (events name it so)
  std::string label;  // the id as a safe line, for the screen
  std::string kind;
  uint32_t group = 0;
  NodeStatus status = NodeStatus::kPending;
  bool for_each = false;
  std::string activity;  // the latest, one line without control characters
  std::string error;     // the last failure, likewise
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost_usd = 0;
  int64_t items = -1;  // for_each: the item count once the engine said it (node.items)
  int64_t items_done = 0;
  int64_t items_failed = 0;
  int64_t calls = 0;  // calls in flight (a for_each runs several)
  // The group's list of running nodes, in start order, linked through the nodes themselves so
  // that starting and finishing are O(1).
  uint32_t prev_running = kNoNode;
  uint32_t next_running = kNoNode;
};

struct GroupState {
  std::string phase;  // empty: nodes without a phase
  std::string title;
  size_t total = 0;
  std::array<size_t, kStatusCount> counts{};
  uint32_t running_head = kNoNode;
  uint32_t running_tail = kNoNode;
  std::vector<uint32_t> failed;  // in failure order
  [[nodiscard]] size_t count(NodeStatus s) const { return counts[static_cast<size_t>(s)]; }
};

class Dashboard {
 public:
  static constexpr size_t kFeedSize = 32;

  explicit Dashboard(const std::vector<NodeInfo>& nodes);

  // Applies one run event (a log line, or a live-only `node.items`). Events of unknown nodes
  // are ignored, as upstream's reducer does. The Json form is for events read back from a log.
  void apply(const events::Event& event);
  void apply(const Json& event);

  [[nodiscard]] const std::vector<NodeState>& nodes() const { return nodes_; }
  [[nodiscard]] const std::vector<GroupState>& groups() const { return groups_; }
  [[nodiscard]] const std::deque<std::string>& feed() const { return feed_; }  // newest last
  [[nodiscard]] const std::string& runId() const { return run_id_; }
  // "starting", "running", then "finished: <status>".
  [[nodiscard]] const std::string& runStatus() const { return run_status_; }
  [[nodiscard]] bool finished() const { return finished_; }
  [[nodiscard]] size_t settled() const { return settled_; }  // done, cached, failed or skipped
  [[nodiscard]] int64_t inputTokens() const { return input_tokens_; }
  [[nodiscard]] int64_t outputTokens() const { return output_tokens_; }
  [[nodiscard]] double costUsd() const { return cost_usd_; }
  [[nodiscard]] uint64_t version() const { return version_; }  // bumped by every change
  [[nodiscard]] std::optional<uint32_t> find(std::string_view id) const;

 private:
  void setStatus(uint32_t index, NodeStatus status);
  void unlinkRunning(uint32_t index);
  void itemSettled(uint32_t index, bool ok);
  void callEnded(uint32_t index);
  void addFeed(const std::string& line);

  std::vector<NodeState> nodes_;
  std::vector<GroupState> groups_;
  std::unordered_map<std::string, uint32_t> index_;
  std::deque<std::string> feed_;
  std::string run_id_;
  std::string run_status_ = "starting";
  bool finished_ = false;
  size_t settled_ = 0;
  int64_t input_tokens_ = 0;
  int64_t output_tokens_ = 0;
  double cost_usd_ = 0;
  uint64_t version_ = 0;
};

}  // namespace oe::view

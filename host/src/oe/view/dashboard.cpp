// The live view's model, reduced from run events; see dashboard.hpp.
#include "oe/view/dashboard.hpp"

#include <algorithm>

#include "oe/view/text.hpp"

namespace oe::view {

namespace {

int64_t intField(const Json& event, const char* name) {
  auto it = event.find(name);
  return it != event.end() && it->is_number() ? it->get<int64_t>() : 0;
}

}  // namespace

Dashboard::Dashboard(const std::vector<NodeInfo>& nodes) {
  nodes_.reserve(nodes.size());
  index_.reserve(nodes.size());
  std::unordered_map<std::string, uint32_t> group_of_phase;
  for (const auto& info : nodes) {
    // Groups in the order their first node appears; nodes without a phase form one group.
    auto [it, inserted] =
        group_of_phase.try_emplace(info.phase, static_cast<uint32_t>(groups_.size()));
    if (inserted) {
      GroupState group;
      group.phase = info.phase;
      // Names from the experience are shown as safe lines too: YAML strings can hold escapes.
      group.title = safeLine(info.phase_title.empty() ? info.phase : info.phase_title);
      groups_.push_back(std::move(group));
    }
    NodeState node;
    node.id = info.id;
    node.label = safeLine(info.id);
    node.kind = safeLine(info.kind);
    node.group = it->second;
    node.for_each = info.for_each;
    GroupState& group = groups_[node.group];
    ++group.total;
    ++group.counts[static_cast<size_t>(NodeStatus::kPending)];
    // The first of duplicated ids wins, as the experience's own node index does.
    index_.try_emplace(node.id, static_cast<uint32_t>(nodes_.size()));
    nodes_.push_back(std::move(node));
  }
}

std::optional<uint32_t> Dashboard::find(std::string_view id) const {
  auto it = index_.find(std::string(id));
  if (it == index_.end()) {
    return std::nullopt;
  }
  return it->second;
}

void Dashboard::apply(const Json& event) { apply(events::Event(event)); }

void Dashboard::apply(const events::Event& live) {
  // Type, node id and cached come without parsing; the event's JSON only for the fields the
  // less frequent types show (node.started and node.finished, most of a run, never parse it).
  const std::string_view type = live.type();
  if (type == "node.ready" || type == "state.write") {
    return;  // no change (reference §10)
  }
  if (type == "run.started") {
    run_id_ = safeLine(stringField(live.json(), "run_id"));
    run_status_ = "running";
    ++version_;
    return;
  }
  if (type == "run.finished") {
    run_status_ = "finished: " + stringField(live.json(), "status");
    finished_ = true;
    ++version_;
    return;
  }
  if (type == "run.warning") {
    addFeed("warning " + safeLine(stringField(live.json(), "message")));
    ++version_;
    return;
  }
  const std::string node_id(live.nodeId());
  if (type == "node.log" && node_id.empty()) {
    addFeed("warning " + safeLine(stringField(live.json(), "message")));
    ++version_;
    return;
  }
  auto found = index_.find(node_id);
  if (found == index_.end()) {
    return;
  }
  const uint32_t index = found->second;
  NodeState& node = nodes_[index];
  if (type == "node.started") {
    ++node.calls;
    if (node.status != NodeStatus::kRunning) {
      setStatus(index, NodeStatus::kRunning);
    }
  } else if (type == "node.finished") {
    const bool from_cache = live.cached();
    callEnded(index);
    if (node.for_each) {
      itemSettled(index, true);
    } else {
      setStatus(index, from_cache ? NodeStatus::kCached : NodeStatus::kDone);
    }
    addFeed((from_cache ? "cached  " : "ok      ") + node.label);
  } else if (type == "node.failed") {
    const Json& event = live.json();
    node.error = safeLine(stringField(event, "error"));
    callEnded(index);
    if (node.for_each) {
      itemSettled(index, false);
    } else {
      setStatus(index, NodeStatus::kFailed);
    }
    addFeed("FAILED  " + node.label + ": " + node.error);
  } else if (type == "node.skipped") {
    const Json& event = live.json();
    setStatus(index, NodeStatus::kSkipped);
    addFeed("skipped " + node.label + " (" + safeLine(stringField(event, "reason")) + ")");
  } else if (type == "node.items") {
    const Json& event = live.json();
    // Live only (the engine's on_event, not the log): a for_each's item count as it starts.
    node.items = intField(event, "count");
    node.items_done = 0;
    node.items_failed = 0;
    if (node.items == 0) {
      setStatus(index, NodeStatus::kDone);
    }
  } else if (type == "node.activity") {
    const Json& event = live.json();
    node.activity = safeLine(stringField(event, "activity"));
    addFeed("        " + node.label + ": " + node.activity);
  } else if (type == "node.tokens") {
    const Json& event = live.json();
    const int64_t in = intField(event, "input_tokens");
    const int64_t out = intField(event, "output_tokens");
    auto cost = event.find("cost_usd");
    const double usd = cost != event.end() && cost->is_number() ? cost->get<double>() : 0.0;
    node.input_tokens += in;
    node.output_tokens += out;
    node.cost_usd += usd;
    input_tokens_ += in;
    output_tokens_ += out;
    cost_usd_ += usd;
  } else if (type == "node.retry") {
    const Json& event = live.json();
    node.activity = "retry after attempt " + std::to_string(intField(event, "attempt")) + ": " +
                    safeLine(stringField(event, "error"));
    addFeed("retry   " + node.label + " " + node.activity);
  } else if (type == "node.log") {
    const Json& event = live.json();
    addFeed("log     " + node.label + ": " + safeLine(stringField(event, "message")));
  } else {
    return;  // node.ready, state.write, ...: no change (reference §10)
  }
  ++version_;
}

void Dashboard::setStatus(uint32_t index, NodeStatus status) {
  NodeState& node = nodes_[index];
  if (node.status == status) {
    return;
  }
  GroupState& group = groups_[node.group];
  const auto isSettled = [](NodeStatus s) {
    return s != NodeStatus::kPending && s != NodeStatus::kRunning;
  };
  settled_ += isSettled(status) ? 1 : 0;
  settled_ -= isSettled(node.status) ? 1 : 0;
  --group.counts[static_cast<size_t>(node.status)];
  ++group.counts[static_cast<size_t>(status)];
  if (node.status == NodeStatus::kRunning) {
    unlinkRunning(index);
  }
  node.status = status;
  if (status == NodeStatus::kRunning) {
    node.prev_running = group.running_tail;
    node.next_running = kNoNode;
    if (group.running_tail != kNoNode) {
      nodes_[group.running_tail].next_running = index;
    } else {
      group.running_head = index;
    }
    group.running_tail = index;
  } else if (status == NodeStatus::kFailed) {
    group.failed.push_back(index);
  }
}

void Dashboard::unlinkRunning(uint32_t index) {
  NodeState& node = nodes_[index];
  GroupState& group = groups_[node.group];
  if (node.prev_running != kNoNode) {
    nodes_[node.prev_running].next_running = node.next_running;
  } else {
    group.running_head = node.next_running;
  }
  if (node.next_running != kNoNode) {
    nodes_[node.next_running].prev_running = node.prev_running;
  } else {
    group.running_tail = node.prev_running;
  }
  node.prev_running = kNoNode;
  node.next_running = kNoNode;
}

void Dashboard::itemSettled(uint32_t index, bool ok) {
  NodeState& node = nodes_[index];
  ++(ok ? node.items_done : node.items_failed);
  if (node.items >= 0 && node.items_done + node.items_failed >= node.items) {
    // Upstream's rule for a for_each: it failed when any item failed.
    setStatus(index, node.items_failed > 0 ? NodeStatus::kFailed : NodeStatus::kDone);
  } else if (node.status != NodeStatus::kRunning) {
    setStatus(index, NodeStatus::kRunning);  // a cached item arrives without node.started
  }
}

void Dashboard::callEnded(uint32_t index) {
  NodeState& node = nodes_[index];
  node.calls = std::max<int64_t>(0, node.calls - 1);  // a cache replay never started a call
}

void Dashboard::addFeed(const std::string& line) {
  if (feed_.size() == kFeedSize) {
    feed_.pop_front();
  }
  feed_.push_back(safeLine(line));  // node ids are the experience's, unchecked
}

}  // namespace oe::view

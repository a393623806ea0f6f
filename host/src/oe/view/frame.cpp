// The live view's frame; see frame.hpp.
#include "oe/view/frame.hpp"

#include <algorithm>
#include <cstdio>

#include "oe/view/text.hpp"

namespace oe::view {

namespace {

constexpr size_t kMaxIdColumns = 28;
constexpr size_t kKindColumns = 10;
constexpr size_t kFeedRows = 5;

const char* statusTag(NodeStatus status) {
  switch (status) {
    case NodeStatus::kPending:
      return "wait  ";
    case NodeStatus::kRunning:
      return "run   ";
    case NodeStatus::kDone:
      return "ok    ";
    case NodeStatus::kCached:
      return "cached";
    case NodeStatus::kFailed:
      return "FAILED";
    case NodeStatus::kSkipped:
      return "skip  ";
    default:
      return "?     ";
  }
}

std::string money(double usd) {
  char text[32];
  std::snprintf(text, sizeof text, "$%.4f", usd);
  return text;
}

std::string header(const Dashboard& d, int64_t elapsed_ms) {
  std::string line = "oe";
  if (!d.runId().empty()) {
    line += " run " + d.runId().substr(0, 8);
  }
  line += "  " + d.runStatus() + "  " + elapsedText(elapsed_ms) + "  " +
          std::to_string(d.settled()) + "/" + std::to_string(d.nodes().size()) + " nodes";
  if (d.inputTokens() > 0 || d.outputTokens() > 0) {
    line += "  tokens " + std::to_string(d.inputTokens()) + " in / " +
            std::to_string(d.outputTokens()) + " out";
  }
  if (d.costUsd() > 0) {
    line += "  " + money(d.costUsd());
  }
  return line;
}

std::string groupLine(const GroupState& g) {
  const size_t settled = g.total - g.count(NodeStatus::kPending) - g.count(NodeStatus::kRunning);
  std::string line = (g.title.empty() ? std::string("(no phase)") : g.title) + "  " +
                     std::to_string(settled) + "/" + std::to_string(g.total);
  const std::pair<NodeStatus, const char*> parts[] = {
      {NodeStatus::kRunning, "running"}, {NodeStatus::kDone, "ok"},
      {NodeStatus::kCached, "cached"},   {NodeStatus::kFailed, "failed"},
      {NodeStatus::kSkipped, "skipped"}, {NodeStatus::kPending, "waiting"}};
  for (const auto& [status, word] : parts) {
    if (g.count(status) > 0) {
      line += "  " + std::to_string(g.count(status)) + " " + word;
    }
  }
  return line;
}

std::string nodeRow(const NodeState& n, size_t id_columns) {
  std::string line = "  " + std::string(statusTag(n.status)) + " " + padWidth(n.label, id_columns) +
                     " " + padWidth(n.kind, kKindColumns);
  if (n.for_each) {
    line += " " + std::to_string(n.items_done + n.items_failed);
    line += n.items >= 0 ? "/" + std::to_string(n.items) : " items";
    if (n.items_failed > 0) {
      line += " (" + std::to_string(n.items_failed) + " failed)";
    }
  }
  if (n.input_tokens > 0 || n.output_tokens > 0) {
    line += " " + std::to_string(n.input_tokens) + "/" + std::to_string(n.output_tokens) + " tok";
  }
  if (n.cost_usd > 0) {
    line += " " + money(n.cost_usd);
  }
  if (n.status == NodeStatus::kFailed && !n.error.empty()) {
    line += "  " + n.error;
  } else if (!n.activity.empty() && n.status == NodeStatus::kRunning) {
    line += "  " + n.activity;
  }
  return line;
}

size_t idColumns(const Dashboard& d, const std::vector<uint32_t>& shown) {
  size_t widest = 4;
  for (uint32_t i : shown) {
    widest = std::max(widest, displayWidth(d.nodes()[i].label));
  }
  return std::min(widest, kMaxIdColumns);
}

}  // namespace

std::string elapsedText(int64_t ms) {
  char text[32];
  ms = std::max<int64_t>(ms, 0);
  if (ms < 60'000) {
    std::snprintf(text, sizeof text, "%lld.%llds", static_cast<long long>(ms / 1000),
                  static_cast<long long>(ms % 1000 / 100));
  } else if (ms < 3'600'000) {
    std::snprintf(text, sizeof text, "%lldm%02llds", static_cast<long long>(ms / 60'000),
                  static_cast<long long>(ms / 1000 % 60));
  } else {
    std::snprintf(text, sizeof text, "%lldh%02lldm", static_cast<long long>(ms / 3'600'000),
                  static_cast<long long>(ms / 60'000 % 60));
  }
  return text;
}

std::vector<std::string> renderFrame(const Dashboard& d, FrameSize size, int64_t elapsed_ms) {
  const size_t width = size.columns > 1 ? size.columns - 1 : 1;
  const size_t height = size.rows > 1 ? size.rows - 1 : 1;
  const auto& nodes = d.nodes();
  const auto& groups = d.groups();
  const bool titled = groups.size() > 1 || (!groups.empty() && !groups.front().phase.empty());

  // Each entry: a group header (kNoNode, group index) or a node row (node index).
  struct Row {
    uint32_t node;
    size_t group;
  };
  std::vector<Row> rows;
  const size_t group_lines = titled ? groups.size() : 0;
  const size_t feed_wanted = std::min(d.feed().size(), kFeedRows);
  size_t budget = height - 1;  // below the header
  const bool full = 1 + group_lines + nodes.size() <= height;
  if (full) {
    // Everything fits: every node in its group, in the experience's order. Only here does a
    // frame visit every node, and then there are fewer nodes than screen lines.
    std::vector<std::vector<uint32_t>> members(groups.size());
    for (uint32_t i = 0; i < nodes.size(); ++i) {
      members[nodes[i].group].push_back(i);
    }
    for (size_t g = 0; g < groups.size(); ++g) {
      if (titled) {
        rows.push_back({kNoNode, g});
      }
      for (uint32_t i : members[g]) {
        rows.push_back({i, g});
      }
    }
    budget -= rows.size();
  } else {
    // Collapsed: a line per group with its counts, then its running and failed nodes while
    // lines are left (a few kept for the feed). A group line is always shown for the groups
    // that fit; "... N more phases" says what did not.
    const size_t feed_lines =
        feed_wanted > 0 && budget >= 8 ? std::min<size_t>(feed_wanted, 3) + 1 : 0;
    size_t left = budget - feed_lines;
    size_t shown_groups = std::min(groups.size(), std::max<size_t>(1, left / 2));
    const bool more_groups = shown_groups < groups.size();
    if (more_groups && shown_groups > 1) {
      --shown_groups;  // room for the "more phases" line
    }
    left -= std::min(left, shown_groups + (more_groups ? 1 : 0));
    std::vector<std::vector<uint32_t>> listed(shown_groups);
    for (size_t g = 0; g < shown_groups && left > 0; ++g) {
      for (uint32_t i = groups[g].running_head; i != kNoNode && left > 0;
           i = nodes[i].next_running) {
        listed[g].push_back(i);
        --left;
      }
      // The latest failures first: the most useful while the run goes on.
      const auto& failed = groups[g].failed;
      for (auto it = failed.rbegin(); it != failed.rend() && left > 0; ++it) {
        if (nodes[*it].status == NodeStatus::kFailed) {
          listed[g].push_back(*it);
          --left;
        }
      }
    }
    for (size_t g = 0; g < shown_groups; ++g) {
      rows.push_back({kNoNode, g});
      for (uint32_t i : listed[g]) {
        rows.push_back({i, g});
      }
    }
    if (more_groups) {
      rows.push_back({kNoNode, groups.size()});
    }
    budget -= std::min(budget, rows.size());
  }

  std::vector<uint32_t> shown;
  for (const auto& row : rows) {
    if (row.node != kNoNode) {
      shown.push_back(row.node);
    }
  }
  const size_t id_columns = idColumns(d, shown);
  std::vector<std::string> lines;
  lines.reserve(height);
  lines.push_back(fitWidth(header(d, elapsed_ms), width));
  size_t groups_listed = 0;
  for (const auto& row : rows) {
    if (row.node != kNoNode) {
      lines.push_back(fitWidth(nodeRow(nodes[row.node], id_columns), width));
    } else if (row.group < groups.size()) {
      ++groups_listed;
      lines.push_back(fitWidth(groupLine(groups[row.group]), width));
    } else {
      lines.push_back(
          fitWidth("... " + std::to_string(groups.size() - groups_listed) + " more phases", width));
    }
  }
  if (feed_wanted > 0 && budget >= 2) {
    const size_t feed_rows = std::min(feed_wanted, budget - 1);
    lines.push_back(fitWidth("recent:", width));
    const auto& feed = d.feed();
    for (size_t i = feed.size() - feed_rows; i < feed.size(); ++i) {
      lines.push_back(fitWidth("  " + feed[i], width));
    }
  }
  if (lines.size() > height) {
    lines.resize(height);  // a screen of one or two lines: the header first
  }
  for (auto& line : lines) {
    while (!line.empty() && line.back() == ' ') {
      line.pop_back();  // a padded last cell
    }
  }
  return lines;
}

}  // namespace oe::view

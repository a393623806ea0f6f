// The HTML run report of `oe inspect --html` (see run_report.hpp).
#include "oe/report/run_report.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <iomanip>
#include <set>
#include <sstream>
#include <utility>

#include "oe/events/event_log.hpp"
#include "oe/report/graph_render.hpp"
#include "oe/runs/run_analysis.hpp"
#include "oe/spec/loader.hpp"
#include "oe/spec/workspace.hpp"

namespace oe::report {

using runs::analyse;
using runs::asDouble;
using runs::asInt;
using runs::Call;
using runs::findRun;
using runs::kMaxNestedDepth;
using runs::loadRunReport;
using runs::member;
using runs::NodeSummary;
using runs::parseIsoMs;
using runs::RunModel;

namespace {

// A value longer than this is cut (on a UTF-8 boundary): an agent's output can be megabytes.
constexpr size_t kMaxValueBytes = 4000;
// Rows of the Gantt drawn; a for_each of thousands of items is summarised past this.
constexpr size_t kMaxGanttRows = 400;

// Gantt geometry, in pixels.
constexpr int kLabelWidth = 240;
constexpr int kPlotWidth = 760;
constexpr int kRowHeight = 18;
constexpr int kAxisHeight = 24;

// A node status and its colours (fill, stroke); the order is the legend's.
struct StatusStyle {
  std::string_view status;
  std::string_view fill;
  std::string_view stroke;
  std::string_view meaning;
};
constexpr std::array<StatusStyle, 6> kStatusStyles = {{
    {"success", "#c8e6c9", "#2e7d32", "ran and finished"},
    {"cached", "#bbdefb", "#1565c0", "replayed from the node cache"},
    {"failed", "#ffcdd2", "#c62828", "failed (after its retries)"},
    {"skipped", "#eeeeee", "#757575", "skipped (when, or an upstream failure)"},
    {"running", "#fff9c4", "#f9a825", "started, never ended (killed or still running)"},
    {"not run", "#ffffff", "#bdbdbd", "in the graph, no event in this run"},
}};

const StatusStyle& statusStyle(std::string_view status) {
  for (const StatusStyle& style : kStatusStyles) {
    if (style.status == status) {
      return style;
    }
  }
  return kStatusStyles.back();
}

// The longest prefix of `text` of at most `bytes` bytes that does not split a UTF-8 sequence.
std::string_view utf8Prefix(std::string_view text, size_t bytes) {
  if (text.size() <= bytes) {
    return text;
  }
  while (bytes > 0 && (static_cast<unsigned char>(text[bytes]) & 0xC0U) == 0x80U) {
    --bytes;
  }
  return text.substr(0, bytes);
}

// `text` cut to kMaxValueBytes on a UTF-8 boundary, saying how much was left out.
std::string shortened(const std::string& text) {
  if (text.size() <= kMaxValueBytes) {
    return text;
  }
  const size_t cut = utf8Prefix(text, kMaxValueBytes).size();
  return text.substr(0, cut) + "\n\xE2\x80\xA6 (" + std::to_string(text.size() - cut) +
         " more bytes; `oe inspect --json` and `oe state` show the whole value)";
}

std::string jsonText(const Json& value) {
  return value.is_string() ? value.get<std::string>()
                           : value.dump(2, ' ', false, Json::error_handler_t::replace);
}

// A <pre> holding a value, escaped and shortened.
std::string pre(const std::string& text, std::string_view cls = "") {
  std::string out = "<pre";
  if (!cls.empty()) {
    out += " class=\"" + std::string(cls) + "\"";
  }
  return out + ">" + htmlEscape(shortened(text)) + "</pre>";
}

std::string durationText(int64_t ms) {
  if (ms < 0) {
    return "-";
  }
  if (ms < 1000) {
    return std::to_string(ms) + " ms";
  }
  std::ostringstream out;
  out << std::fixed << std::setprecision(ms < 60'000 ? 2 : 0) << static_cast<double>(ms) / 1000.0
      << " s";
  return out.str();
}

std::string costText(double usd) {
  std::ostringstream out;
  out << '$' << std::fixed << std::setprecision(usd < 1 ? 4 : 2) << usd;
  return out.str();
}

// `text` in a badge of `status`'s colours (the status itself by default).
std::string badge(std::string_view status, std::string_view text = {}) {
  const StatusStyle& style = statusStyle(status);
  return "<span class=\"badge\" style=\"background:" + std::string(style.fill) +
         ";border-color:" + std::string(style.stroke) + "\">" +
         htmlEscape(text.empty() ? status : text) + "</span>";
}

// A run's status (success, partial, failed, interrupted, unfinished) in the colours of the node
// status closest to it: partial and unfinished are amber, not red.
std::string runBadge(const std::string& status) {
  return badge(status == "success"                             ? "success"
               : status == "partial" || status == "unfinished" ? "running"
                                                               : "failed",
               status);
}

// The nested runs' calls, as Gantt rows under the node that started them.
void appendNested(const RunReportInput& input, const NodeSummary& node, int depth,
                  const std::string& prefix, std::vector<Call>& rows,
                  std::vector<std::string>& notes, size_t& expanded);

void appendRows(const RunReportInput& input, const RunModel& model, int depth,
                const std::string& prefix, std::vector<Call>& rows,
                std::vector<std::string>& notes, size_t& expanded) {
  for (const NodeSummary& node : model.nodes) {
    for (size_t call : node.call_rows) {
      Call row = model.calls[call];
      row.label = prefix + row.label;
      row.depth = depth;
      rows.push_back(std::move(row));
    }
    appendNested(input, node, depth, prefix, rows, notes, expanded);
  }
}

void appendNested(const RunReportInput& input, const NodeSummary& node, int depth,
                  const std::string& prefix, std::vector<Call>& rows,
                  std::vector<std::string>& notes, size_t& expanded) {
  // Enough rows to fill the Gantt, or enough nested runs read, stop the descent: an edited log
  // naming itself many times would otherwise multiply its rows (or, without calls, its reads)
  // at every level.
  if (depth >= kMaxNestedDepth || rows.size() > kMaxGanttRows || expanded > kMaxGanttRows) {
    return;
  }
  for (const std::string& sub : node.sub_logs) {
    auto it = input.nested.find(sub);
    if (it == input.nested.end()) {
      notes.push_back("the nested run log " + sub + " (node " + node.id + ") was not read");
      continue;
    }
    ++expanded;
    appendRows(input, analyse(it->second), depth + 1, prefix + node.id + " \xE2\x80\xBA ", rows,
               notes, expanded);
  }
}

// The Gantt of every call: a queued part (ready, not started: waiting for a slot) in grey, then
// the attempts in the outcome's colour, a tick where an attempt failed and was retried.
std::string gantt(const std::vector<Call>& all_rows, int64_t run_start, int64_t run_end) {
  const size_t shown = std::min(all_rows.size(), kMaxGanttRows);
  int64_t t0 = run_start;
  int64_t t1 = run_end;
  for (size_t r = 0; r < shown; ++r) {
    const Call& row = all_rows[r];
    for (int64_t ts : {row.ready, row.started, row.ended}) {
      if (ts >= 0) {
        t0 = t0 < 0 ? ts : std::min(t0, ts);
        t1 = std::max(t1, ts);
      }
    }
  }
  if (t0 < 0) {
    return "<p>No node was called.</p>\n";
  }
  const int64_t span = std::max<int64_t>(t1 - t0, 1);
  auto x_of = [&](int64_t ts) {  // in double: an edited log's timestamps can be centuries apart
    const double x = static_cast<double>(ts - t0) * kPlotWidth / static_cast<double>(span);
    return kLabelWidth + static_cast<int>(std::clamp(x, 0.0, static_cast<double>(kPlotWidth)));
  };
  const int height = kAxisHeight + static_cast<int>(shown) * kRowHeight + 4;
  const int width = kLabelWidth + kPlotWidth + 16;
  std::ostringstream svg;
  svg << "<svg class=\"gantt\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 "
      << width << ' ' << height << "\" role=\"img\" aria-label=\"node calls over time\">\n";
  for (int tick = 0; tick <= 4; ++tick) {
    const int64_t ts = t0 + span * tick / 4;
    const int x = x_of(ts);
    svg << "<line class=\"tick\" x1=\"" << x << "\" y1=\"" << kAxisHeight - 6 << "\" x2=\"" << x
        << "\" y2=\"" << height << "\"/><text class=\"axis\" x=\"" << x << "\" y=\""
        << kAxisHeight - 10 << "\">" << durationText(ts - t0) << "</text>\n";
  }
  for (size_t r = 0; r < shown; ++r) {
    const Call& row = all_rows[r];
    const int y = kAxisHeight + static_cast<int>(r) * kRowHeight;
    const StatusStyle& style = statusStyle(row.outcome);
    const int64_t end = row.ended >= 0 ? row.ended : t1;
    const int64_t begin = row.started >= 0 ? row.started : row.ready;
    std::string label = std::string(static_cast<size_t>(row.depth) * 2, ' ') + row.label;
    int chars = 0;
    std::string cut;
    for (size_t i = 0; i < label.size(); ++i) {  // at most 30 code points
      if ((static_cast<unsigned char>(label[i]) & 0xC0U) != 0x80U && ++chars > 30) {
        cut += "\xE2\x80\xA6";
        break;
      }
      cut.push_back(label[i]);
    }
    svg << "<g class=\"call\"><title>" << htmlEscape(row.label) << ": " << htmlEscape(row.outcome)
        << ", " << durationText(row.ended >= 0 && begin >= 0 ? row.ended - begin : -1);
    if (row.started > row.ready && row.ready >= 0) {
      svg << " (queued " << durationText(row.started - row.ready) << ')';
    }
    if (!row.retries.empty()) {
      svg << ", " << row.retries.size() << (row.retries.size() == 1 ? " retry" : " retries");
    }
    svg << "</title><text class=\"row-label\" x=\"4\" y=\"" << y + 13
        << "\" xml:space=\"preserve\">" << htmlEscape(cut) << "</text>";
    if (row.ready >= 0 && row.started > row.ready) {
      svg << "<rect class=\"queued\" x=\"" << x_of(row.ready) << "\" y=\"" << y + 6 << "\" width=\""
          << std::max(1, x_of(row.started) - x_of(row.ready)) << "\" height=\"6\"/>";
    }
    svg << "<rect class=\"bar bar-" << (row.outcome == "not run" ? "not-run" : row.outcome)
        << "\" x=\"" << x_of(begin) << "\" y=\"" << y + 3 << "\" width=\""
        << std::max(2, x_of(end) - x_of(begin)) << "\" height=\"" << kRowHeight - 6 << "\" fill=\""
        << style.fill << "\" stroke=\"" << style.stroke << "\"/>";
    for (int64_t ts : row.retries) {
      svg << "<line class=\"retry\" x1=\"" << x_of(ts) << "\" y1=\"" << y + 1 << "\" x2=\""
          << x_of(ts) << "\" y2=\"" << y + kRowHeight - 1 << "\"/>";
    }
    svg << "</g>\n";
  }
  svg << "</svg>\n";
  std::string out = svg.str();
  if (shown < all_rows.size()) {
    out += "<p class=\"note\">Only the first " + std::to_string(kMaxGanttRows) +
           " calls are drawn; " + std::to_string(all_rows.size() - shown) +
           " more were counted (nested runs past that point are not read).</p>\n";
  }
  return out;
}

std::string row(std::string_view name, const std::string& value_html) {
  return "<tr><th>" + std::string(name) + "</th><td>" + value_html + "</td></tr>\n";
}

std::string totals(const RunReportInput& input, const RunModel& model,
                   const std::vector<NodeSummary>& nodes) {
  std::string out = "<table class=\"totals\">\n";
  out += row("run", "<code>" + htmlEscape(input.run_id) + "</code>");
  if (const std::string exp = stringField(model.started_event, "experience"); !exp.empty()) {
    out += row("experience", "<code>" + htmlEscape(exp) + "</code>");
  }
  std::string status = runBadge(model.status);
  if (!model.reason.empty()) {
    status += " (" + htmlEscape(model.reason) + ")";
  }
  if (model.ended < 0) {
    status += " \xE2\x80\x94 no run.finished: killed or still running";
  }
  out += row("status", status);
  out += row("started", htmlEscape(stringField(model.started_event, "ts")));
  const int64_t end = model.ended >= 0 ? model.ended : model.last_ts;
  out +=
      row("duration", model.started >= 0 && end >= model.started ? durationText(end - model.started)
                                                                 : std::string("-"));
  if (const std::string from = stringField(model.started_event, "resumed_from"); !from.empty()) {
    out += row("resumed from", "<code>" + htmlEscape(from) + "</code>");
  }
  if (const std::string parent = stringField(model.started_event, "parent_run_id");
      !parent.empty()) {
    out +=
        row("nested in", "<code>" + htmlEscape(parent) + "</code> (node " +
                             htmlEscape(stringField(model.started_event, "parent_node_id")) + ")");
  }
  // The counts run.finished wrote, else counted from the events (an unfinished run).
  Json counts = member(model.finished_event, "nodes");
  if (!counts.is_object()) {
    counts = Json::object();
    for (const NodeSummary& node : nodes) {
      counts["ran"] = asInt(member(counts, "ran")) + (node.finished - node.cached);
      counts["cached"] = asInt(member(counts, "cached")) + node.cached;
      counts["failed"] = asInt(member(counts, "failed")) + node.failed;
      counts["skipped"] = asInt(member(counts, "skipped")) + node.skipped;
    }
  }
  std::string count_html;
  for (const char* key : {"ran", "cached", "failed", "skipped", "reused"}) {
    if (counts.contains(key)) {
      count_html +=
          (count_html.empty() ? "" : ", ") + std::to_string(asInt(counts[key])) + " " + key;
    }
  }
  out += row("nodes", count_html.empty() ? "-" : count_html);
  int64_t tokens_in = 0;
  int64_t tokens_out = 0;
  double cost = 0;
  int64_t llm_calls = -1;
  if (auto usage = model.finished_event.find("usage");
      usage != model.finished_event.end() && usage->is_object()) {
    tokens_in = asInt(member(*usage, "input_tokens"));
    tokens_out = asInt(member(*usage, "output_tokens"));
    cost = asDouble(member(*usage, "cost_usd"));
    llm_calls = asInt(member(*usage, "llm_calls"));
  } else {
    for (const NodeSummary& node : nodes) {
      tokens_in += node.tokens_in;
      tokens_out += node.tokens_out;
      cost += node.cost_usd;
    }
  }
  if (llm_calls > 0 || tokens_in > 0 || tokens_out > 0 || cost > 0) {
    out +=
        row("tokens", std::to_string(tokens_in) + " in, " + std::to_string(tokens_out) + " out" +
                          (llm_calls >= 0 ? ", " + std::to_string(llm_calls) + " LLM calls" : ""));
    out += row("cost", costText(cost));
  } else {
    out += row("tokens", "none (no LLM call)");
  }
  if (auto args = model.started_event.find("args");
      args != model.started_event.end() && !(args->is_object() && args->empty())) {
    out += row("args", pre(jsonText(*args)));
  }
  return out + "</table>\n";
}

std::string legend() {
  std::string out = "<ul class=\"legend\">";
  for (const StatusStyle& style : kStatusStyles) {
    out += "<li><span class=\"swatch\" style=\"background:" + std::string(style.fill) +
           ";border-color:" + std::string(style.stroke) + "\"></span><b>" +
           std::string(style.status) + "</b> " + std::string(style.meaning) + "</li>";
  }
  return out +
         "<li><span class=\"swatch queued\"></span><b>queued</b> ready, waiting for a "
         "slot (Gantt)</li><li><span class=\"swatch retry\"></span><b>retry</b> an attempt "
         "failed and was retried (Gantt)</li></ul>\n";
}

// Files of a diff listed by name; the rest are counted (the diff text names them all).
constexpr size_t kMaxDiffFilesListed = 100;

std::string bytesText(uint64_t bytes) {
  if (bytes < 1024) {
    return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  }
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << static_cast<double>(bytes) / 1024.0 << " KiB";
  return out.str();
}

// A diff's text, escaped, a line at a time: added, removed, hunk and file header lines in
// classes of their own, for their colours.
std::string diffLines(std::string_view text) {
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    end = end == std::string_view::npos ? text.size() : end;
    const std::string_view line = text.substr(at, end - at);
    std::string_view cls;
    if (line.rfind("diff --git ", 0) == 0 || line.rfind("+++ ", 0) == 0 ||
        line.rfind("--- ", 0) == 0) {
      cls = "file";
    } else if (line.rfind("@@", 0) == 0) {
      cls = "hunk";
    } else if (!line.empty() && line[0] == '+') {
      cls = "add";
    } else if (!line.empty() && line[0] == '-') {
      cls = "del";
    }
    if (cls.empty()) {
      out += htmlEscape(line);
    } else {
      out += "<span class=\"" + std::string(cls) + "\">" + htmlEscape(line) + "</span>";
    }
    if (end < text.size()) {
      out += '\n';
    }
    at = end + 1;
  }
  return out;
}

// What one attempt in a worktree changed (its node.diff event): files, +/-, the artifact, the
// files by name and, folded, the diff itself as far as the report carries it.
std::string diffDetail(const RunReportInput& input, const Json& event) {
  const Json& files = member(event, "files");
  const size_t count = files.is_array() ? files.size() : 0;
  const std::string id = stringField(event, "artifact");
  std::string out = "<span class=\"diff-stat\">" + std::to_string(count) +
                    (count == 1 ? " file" : " files") + ", <span class=\"add\">+" +
                    std::to_string(asInt(member(event, "insertions"))) +
                    "</span> <span class=\"del\">\xE2\x88\x92" +
                    std::to_string(asInt(member(event, "deletions"))) +
                    "</span></span> \xC2\xB7 artifact <code>" + htmlEscape(id) + "</code>";
  if (member(event, "cached") == Json(true)) {
    out += " (replayed from the node cache)";
  }
  if (count > 0) {
    out += "<ul class=\"diff-files\">";
    for (size_t i = 0; i < std::min(count, kMaxDiffFilesListed); ++i) {
      out += "<li><code>" + htmlEscape(jsonText(files[i])) + "</code></li>";
    }
    out += "</ul>";
    if (count > kMaxDiffFilesListed) {
      out += "<p class=\"note\">\xE2\x80\xA6 and " + std::to_string(count - kMaxDiffFilesListed) +
             " more files</p>";
    }
  }
  const std::string file = ".openexpertise/artifacts/" + id + ".diff";
  auto it = input.diffs.find(id);
  if (it == input.diffs.end()) {
    return out + "<p class=\"note\">No diff text: the event names no artifact.</p>";
  }
  const runs::DiffText& diff = it->second;
  if (!diff.error.empty()) {
    return out + "<p class=\"note\">The diff text is not shown: " + htmlEscape(diff.error) +
           ".</p>";
  }
  if (diff.size == 0) {
    return out;  // nothing changed: nothing to unfold
  }
  out += "<details class=\"diff\"><summary>the diff (" + bytesText(diff.size) +
         ")</summary><pre class=\"diff\">" + diffLines(diff.text) + "</pre>";
  if (diff.text.size() < diff.size) {
    out += "<p class=\"note\">\xE2\x80\xA6 " + bytesText(diff.size - diff.text.size()) +
           " more not shown (a report shows the first " +
           std::to_string(runs::kReportDiffBytes / 1024) + " KiB of each diff and " +
           std::to_string(runs::kReportDiffBudget / 1024) + " KiB in all): the whole diff is " +
           htmlEscape(file) + "</p>";
  }
  return out + "</details>";
}

std::string nodeDetail(const RunReportInput& input, const NodeSummary& node, size_t n) {
  const std::string status = node.status();
  const spec::NodeSpec* spec = input.experience ? input.experience->findNode(node.id) : nullptr;
  std::ostringstream out;
  out << "<details class=\"node-detail status-" << (status == "not run" ? "not-run" : status)
      << "\" id=\"node-" << n << '"' << (status == "failed" ? " open" : "") << "><summary>"
      << badge(status) << " <b>" << htmlEscape(node.id) << "</b>";
  if (node.first_ts >= 0 && node.last_ts >= node.first_ts) {
    out << " \xC2\xB7 " << durationText(node.last_ts - node.first_ts);
  }
  if (node.calls > 1) {
    out << " \xC2\xB7 " << node.calls << " calls";
  }
  if (!node.retries.empty()) {
    out << " \xC2\xB7 " << node.retries.size()
        << (node.retries.size() == 1 ? " retry" : " retries");
  }
  if (node.diffs.size() == 1) {
    const Json& files = member(node.diffs[0], "files");
    const size_t count = files.is_array() ? files.size() : 0;
    out << " \xC2\xB7 diff: " << count << (count == 1 ? " file" : " files") << " +"
        << asInt(member(node.diffs[0], "insertions")) << " \xE2\x88\x92"
        << asInt(member(node.diffs[0], "deletions"));
  } else if (node.diffs.size() > 1) {
    out << " \xC2\xB7 " << node.diffs.size() << " diffs";
  }
  out << "</summary>\n<table>\n";
  if (spec != nullptr) {
    out << row("kind", htmlEscape(spec->kind));
  }
  if (!node.phase.empty()) {
    out << row("phase", htmlEscape(node.phase));
  }
  out << row("calls", std::to_string(node.calls) + " (" +
                          std::to_string(node.finished - node.cached) + " ran, " +
                          std::to_string(node.cached) + " cached, " + std::to_string(node.failed) +
                          " failed)");
  if (spec != nullptr && !(spec->args.is_object() && spec->args.empty())) {
    out << row("args (as written)", pre(jsonText(spec->args)));
  }
  for (const std::string& error : node.errors) {
    out << row("error", pre(error, "error"));
  }
  if (!node.skip_reason.empty()) {
    out << row("skipped", htmlEscape(node.skip_reason));
  }
  if (!node.policy.is_null()) {
    out << row("policy", pre(jsonText(node.policy)));
  }
  for (const std::string& denial : node.denials) {
    out << row("denied by policy", htmlEscape(denial));
  }
  for (const Json& retry : node.retries) {
    out << row("retry after attempt " + std::to_string(asInt(member(retry, "attempt"))),
               "waited " + durationText(asInt(member(retry, "delay_ms"))) +
                   pre(stringField(retry, "error"), "error"));
  }
  bool wrote_values = false;
  for (const state::HistoryRow& write : input.state_rows) {
    if (write.node_id == node.id) {
      out << row("state " + htmlEscape(write.field) + (write.append_from ? " (appended)" : ""),
                 pre(jsonText(write.value_new)));
      wrote_values = true;
    }
  }
  if (!wrote_values && !node.writes.empty()) {
    std::string fields;
    for (const std::string& field : node.writes) {
      fields += (fields.empty() ? "" : ", ") + htmlEscape(field);
    }
    out << row("state writes", fields);
  }
  if (auto edge = input.edge_outputs.find(node.id); edge != input.edge_outputs.end()) {
    out << row("edge output", pre(jsonText(edge->second)));
  }
  for (const Json& diff : node.diffs) {
    const Json& item = member(diff, "item");
    out << row(item.is_number_integer() ? "diff of item " + std::to_string(asInt(item)) : "diff",
               diffDetail(input, diff));
  }
  if (node.has_usage) {
    out << row("tokens",
               std::to_string(node.tokens_in) + " in, " + std::to_string(node.tokens_out) + " out");
    out << row("cost", costText(node.cost_usd));
  }
  for (const std::string& sub : node.sub_logs) {
    auto it = input.nested.find(sub);
    std::string text = "<code>" + htmlEscape(sub) + "</code>";
    if (it != input.nested.end()) {
      const RunModel child = analyse(it->second);
      text += " " + runBadge(child.status);
    }
    out << row("nested run", text);
  }
  out << "</table>\n</details>\n";
  return out.str();
}

constexpr std::string_view kCss =
    "body { font-family: sans-serif; margin: 24px; color: #222; max-width: 1100px; }\n"
    "h2 { border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 32px; }\n"
    "table { border-collapse: collapse; }\n"
    "th { text-align: left; vertical-align: top; padding: 3px 12px 3px 0; color: #555; "
    "font-weight: normal; white-space: nowrap; }\n"
    "td { padding: 3px 0; vertical-align: top; }\n"
    "pre { background: #f6f8fa; padding: 8px; margin: 0; overflow: auto; max-height: 320px; "
    "white-space: pre-wrap; word-break: break-word; }\n"
    "pre.error { background: #fff0f0; color: #8e0000; }\n"
    ".badge { display: inline-block; border: 1px solid; border-radius: 4px; padding: 0 6px; "
    "font-size: 12px; }\n"
    ".legend { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 4px 18px; "
    "font-size: 13px; }\n"
    ".swatch { display: inline-block; width: 14px; height: 14px; border: 1px solid; "
    "vertical-align: middle; margin-right: 4px; }\n"
    ".swatch.queued, .gantt .queued { background: #cfd8dc; fill: #cfd8dc; border-color: #90a4ae; "
    "}\n"
    ".swatch.retry { background: #000; width: 2px; }\n"
    ".gantt { max-width: 100%; height: auto; }\n"
    ".gantt .tick { stroke: #e0e0e0; }\n"
    ".gantt .axis { font-size: 11px; fill: #555; text-anchor: middle; }\n"
    ".gantt .row-label { font-size: 12px; font-family: monospace; }\n"
    ".gantt .retry { stroke: #000; stroke-width: 2; }\n"
    "details.node-detail { border: 1px solid #ddd; border-radius: 4px; margin: 6px 0; "
    "padding: 4px 8px; }\n"
    "details.node-detail.status-failed { border-color: #c62828; }\n"
    "details.node-detail summary { cursor: pointer; }\n"
    "details.node-detail table { margin: 6px 0; width: 100%; }\n"
    ".note { color: #8a6d00; }\n"
    ".diff-stat .add { color: #2e7d32; }\n"
    ".diff-stat .del { color: #c62828; }\n"
    "ul.diff-files { margin: 4px 0; padding-left: 20px; font-size: 13px; }\n"
    "details.diff summary { cursor: pointer; color: #555; }\n"
    "pre.diff { max-height: 640px; white-space: pre; }\n"
    "pre.diff .add { background: #e6ffed; }\n"
    "pre.diff .del { background: #ffeef0; }\n"
    "pre.diff .hunk { color: #6f42c1; }\n"
    "pre.diff .file { font-weight: bold; }\n";

}  // namespace

std::string runReportHtml(const RunReportInput& input) {
  const RunModel model = analyse(input.events);
  // The nodes in the graph's order, then those only the log names (renamed or removed since).
  std::vector<NodeSummary> nodes;
  std::set<std::string, std::less<>> listed;
  if (input.experience) {
    for (const spec::NodeSpec& spec : input.experience->nodes) {
      auto it = model.index.find(spec.id);
      if (it != model.index.end()) {
        nodes.push_back(model.nodes[it->second]);
      } else {
        nodes.emplace_back().id = spec.id;
        nodes.back().phase = spec.phase.value_or("");
      }
      listed.insert(spec.id);
    }
  }
  for (const NodeSummary& node : model.nodes) {
    if (listed.count(node.id) == 0) {
      nodes.push_back(node);
    }
  }
  std::vector<std::string> notes = input.notes;
  std::vector<Call> rows;
  size_t expanded = 0;
  appendRows(input, model, 0, "", rows, notes, expanded);

  std::ostringstream page;
  const std::string title =
      (input.experience ? input.experience->name + " \xE2\x80\x94 " : "") + "run " + input.run_id;
  page << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
       << htmlEscape(title) << " \xE2\x80\x94 oe report</title>\n<style>\n"
       << kCss << graphSvgCss() << "</style>\n</head>\n<body>\n<h1>" << htmlEscape(title)
       << "</h1>\n";
  for (const std::string& note : notes) {
    page << "<p class=\"note\">" << htmlEscape(note) << "</p>\n";
  }
  page << "<h2>Totals</h2>\n" << totals(input, model, nodes);
  page << "<h2>Graph</h2>\n" << legend();
  if (input.experience) {
    // `nodes` starts with the experience's nodes, in its order.
    std::vector<NodePaint> paint;
    for (size_t i = 0; i < input.experience->nodes.size(); ++i) {
      const std::string status = nodes[i].status();
      const StatusStyle& style = statusStyle(status);
      std::string tooltip = ": " + status;
      if (!nodes[i].errors.empty()) {
        tooltip += ": " + std::string(utf8Prefix(nodes[i].errors.back(), 300));
      }
      paint.push_back(NodePaint{style.fill, style.stroke, status, tooltip});
    }
    page << graphSvg(*input.experience, GraphDirection::kTopDown, &paint);
  } else {
    page << "<p class=\"note\">The graph is not drawn: the experience did not load.</p>\n";
  }
  page << "<h2>Timeline</h2>\n" << gantt(rows, model.started, model.ended);
  page << "<h2>Nodes</h2>\n";
  for (size_t n = 0; n < nodes.size(); ++n) {
    page << nodeDetail(input, nodes[n], n);
  }
  page << "</body>\n</html>\n";
  return page.str();
}

Result<std::string> inspectHtml(const std::filesystem::path& experience_path,
                                std::string_view run_id, bool last) {
  auto run = findRun(spec::workspaceDir(spec::resolveExperiencePath(experience_path)) / "runs",
                     run_id, last);
  if (!run) {
    return run.error();
  }
  auto input = loadRunReport(experience_path, *run);
  if (!input) {
    return input.error();
  }
  return runReportHtml(*input);
}

}  // namespace oe::report

// What `oe run` prints about a run (see run_summary.hpp).
#include "oe/report/run_summary.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

namespace oe::report {
namespace {

// The final state, each value on one line and cut when long: the summary is for reading, and
// `oe state FIELD` prints a whole value.
void finalState(std::ostream& out, const spec::Experience& experience, const Json& state,
                const std::string& path) {
  constexpr size_t kMaxValue = 200;
  constexpr size_t kShown = 160;
  bool any = false;
  for (const auto& field : experience.state.fields) {
    auto it = state.find(field.name);
    if (it == state.end()) {
      continue;
    }
    const std::string value = it->dump();
    out << "  " << field.name << ": ";
    if (value.size() <= kMaxValue) {
      out << value << '\n';
    } else {
      out << oneLine(value, kShown) << " (" << value.size() << " chars; `oe state " << field.name
          << experienceFlag(path) << "` prints it all)\n";
    }
    any = true;
  }
  if (!any) {
    out << "  (empty)\n";
  }
}

// The failed or cancelled calls of a summary, one line per node and error: a for_each's items
// that ended alike share a line ("each (3 calls): cancelled"), so the lines add up to the count.
void calls(std::ostream& out, std::string_view what, const std::vector<run::NodeFailure>& list) {
  constexpr size_t kListed = 10;
  size_t lines = 0;
  for (size_t i = 0; i < list.size();) {
    size_t same = 1;
    while (i + same < list.size() && list[i + same].node_id == list[i].node_id &&
           list[i + same].error == list[i].error) {
      ++same;
    }
    if (lines == kListed) {
      out << what << ": ... and " << list.size() - i << " more\n";
      return;
    }
    out << what << ": " << list[i].node_id;
    if (same > 1) {
      out << " (" << same << " calls)";
    }
    out << ": " << oneLine(list[i].error) << '\n';
    ++lines;
    i += same;
  }
}

std::string idList(const Json& ids) {
  std::string text;
  for (const auto& id : ids) {
    text += (text.empty() ? "" : ", ") + id.get<std::string>();
  }
  return text;
}

}  // namespace

std::string oneLine(std::string_view text, size_t max) {
  size_t end = text.find('\n');
  const bool more_lines = end != std::string_view::npos;
  end = std::min(more_lines ? end : text.size(), max);
  while (end > 0 && end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
    --end;  // not in the middle of a UTF-8 sequence
  }
  std::string line(text.substr(0, end));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) {
    line.pop_back();
  }
  return end < text.size() ? line + " ..." : line;
}

std::string usageLine(const llm::Usage& usage) {
  char cost[32];
  std::snprintf(cost, sizeof cost, "%.4f", usage.cost_usd);
  return "llm: " + std::to_string(usage.calls) + " calls, " + std::to_string(usage.input_tokens) +
         " in + " + std::to_string(usage.output_tokens) + " out tokens, $" + cost;
}

std::string experienceFlag(const std::string& path) {
  if (path == "." || path.empty()) {
    return "";
  }
  const bool plain = std::all_of(path.begin(), path.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("/._-+:,@").find(c) != std::string_view::npos;
  });
  if (plain) {
    return " --experience " + path;
  }
  std::string quoted = "'";
  for (char c : path) {
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return " --experience " + quoted + "'";
}

std::string definitionChangesText(const std::string& run_id, const Json& diff) {
  if (diff["changed"].empty() && diff["added"].empty() && diff["removed"].empty()) {
    return "resuming run " + run_id + ": the experience is unchanged";
  }
  std::string text = "resuming run " + run_id + ": the experience changed since it ran";
  if (!diff["changed"].empty()) {
    text += "; changed: " + idList(diff["changed"]);
  }
  if (!diff["added"].empty()) {
    text += "; added: " + idList(diff["added"]);
  }
  if (!diff["removed"].empty()) {
    text += "; removed: " + idList(diff["removed"]);
  }
  return text +
         ". A resume finishes the run: what had landed in it is kept, not run or applied "
         "again; what had not runs with the experience as it is now.";
}

std::string changedNodeNote(const run::ChangedNode& node, const std::string& path) {
  const std::string id = "node \"" + node.node_id + "\"";
  if (node.landed == 0) {
    return id + " changed and nothing of it had landed: it runs with its new definition";
  }
  const std::string writes =
      node.landed == 1 ? "its write that had landed is"
                       : "its " + std::to_string(node.landed) + " writes that had landed are";
  // `oe run` takes the folder as its argument, where the other commands take --experience.
  std::string folder = experienceFlag(path);
  if (!folder.empty()) {
    folder.erase(0, std::string_view(" --experience").size());
  }
  return id + " changed; " + writes +
         " kept (those calls are not run or applied again; any other runs with the new "
         "definition). To run it again entirely: oe run" +
         folder + " --from " + node.node_id;
}

std::string runSummaryText(const run::RunSummary& s, const spec::Experience& experience,
                           const std::string& path, int64_t ms) {
  std::ostringstream out;
  // The counts are calls (an item of a for_each is one), as the lines below list them.
  out << "run " << s.run_id << ": " << run::toString(s.status) << " in " << ms << " ms (" << s.ran
      << " ran, " << s.cached << " cached, " << s.failed << " failed, ";
  if (s.cancelled > 0) {
    out << s.cancelled << " cancelled, ";
  }
  out << s.skipped << " skipped)\n";
  calls(out, "failed", s.failures);
  calls(out, "cancelled", s.cancellations);
  if (!s.failures.empty() || !s.cancellations.empty()) {
    out << "errors in full: oe inspect " << s.run_id << experienceFlag(path) << '\n';
  }
  constexpr size_t kWarnings = 10;
  for (size_t i = 0; i < s.warnings.size() && i < kWarnings; ++i) {
    out << "warning: " << s.warnings[i] << '\n';
  }
  if (s.warnings.size() > kWarnings) {
    out << "warning: ... and " << s.warnings.size() - kWarnings << " more, each a run.warning in "
        << s.event_log.string() << '\n';
  }
  if (s.held_back_by_default_concurrency > 0) {
    out << "note: one node ran at a time (runtime.concurrency defaults to 1) while up to "
        << s.held_back_by_default_concurrency
        << " more were ready; set runtime.concurrency (or --concurrency N) to run "
           "independent nodes in parallel\n";
  }
  if (s.usage.calls > 0) {
    out << usageLine(s.usage) << '\n';
  }
  if (!s.stop_reason.empty()) {
    out << "stopped: " << s.stop_reason << '\n';
  }
  if (s.stop_reason == "budget_exhausted") {
    out << "raise runtime.budget (or pass --max-tokens / --max-cost-usd) and ";
  }
  if (s.status == run::RunStatus::kWaiting) {
    for (const auto& node : s.waiting) {
      out << "waiting: node \"" << node << "\" for an approval: `oe approve " << s.run_id << ' '
          << node << experienceFlag(path) << "` or `oe reject ...`; `oe runs --waiting` shows "
          << "the question\n";
    }
  }
  if (s.status == run::RunStatus::kInterrupted || s.stop_reason == "budget_exhausted") {
    out << "run `oe resume " << s.run_id << experienceFlag(path) << "` to continue\n";
  }
  out << "events: " << s.event_log.string() << '\n' << "final state:\n";
  finalState(out, experience, s.final_state, path);
  return out.str();
}

Json runSummaryJson(const run::RunSummary& s, const Json& changes) {
  Json failed = Json::array();
  for (const auto& f : s.failures) {
    failed.push_back({{"node_id", f.node_id}, {"error", f.error}});
  }
  Json cancelled = Json::array();
  for (const auto& c : s.cancellations) {
    cancelled.push_back({{"node_id", c.node_id}, {"error", c.error}});
  }
  Json out = {{"run_id", s.run_id},
              {"status", run::toString(s.status)},
              {"final_state", s.final_state},
              {"nodes",
               {{"ran", s.ran},
                {"cached", s.cached},
                {"failed", s.failed},
                {"cancelled", s.cancelled},
                {"skipped", s.skipped},
                {"reused", s.reused}}},
              {"failures", std::move(failed)},
              {"cancelled", std::move(cancelled)},
              {"warnings", s.warnings}};
  if (!s.stop_reason.empty()) {
    out["reason"] = s.stop_reason;
  }
  if (s.signal != 0) {
    out["signal"] = s.signal;
  }
  if (!s.waiting.empty()) {
    out["waiting"] = s.waiting;
  }
  if (!s.chain_id.empty()) {
    out["chain_id"] = s.chain_id;
  }
  if (s.usage.calls > 0) {
    out["usage"] = s.usage.toJson();
  }
  if (!changes.is_null()) {
    out["definition_changes"] = changes;
  }
  return out;
}

}  // namespace oe::report

// `oe inspect <run-id>`: a run's timeline from its event log (node, status, duration, error), or
// with --html its report as a self-contained page (run_report.hpp).
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/cli/run_lookup.hpp"
#include "oe/cli/store_option.hpp"
#include "oe/events/event_log.hpp"
#include "oe/pgstore/event_sink.hpp"
#include "oe/report/run_report.hpp"

namespace oe::cli {

using report::runReportHtml;
using runs::loadRunReport;
using runs::loadStoreRunReport;

namespace {

struct NodeLine {
  std::string id;
  std::string status = "ready";
  int64_t first_ts = -1;
  int64_t last_ts = -1;
  int calls = 0;
  int failures = 0;
  int cancels = 0;  // node.failed with "cancelled": stopped by the run
  bool started = false;
  std::string detail;
  std::vector<std::filesystem::path> sub_logs;  // the nested runs this node started
};

// The deepest nesting --expand follows (a cycle cannot be logged, but a log can be edited).
constexpr int kMaxExpandDepth = 16;

// A nested run's events inlined under the node.activity that announced them (--json --expand).
void expandEvents(Json& events, int depth) {
  for (Json& event : events) {
    auto sub = event.find("sub_event_log");
    if (sub == event.end() || !sub->is_string() || depth >= kMaxExpandDepth) {
      continue;
    }
    auto log = events::readEventLog(sub->get<std::string>());
    if (!log) {
      event["sub_events_error"] = log.error().message;
      continue;
    }
    Json inner(log->events);
    expandEvents(inner, depth + 1);
    event["sub_events"] = std::move(inner);
  }
}

// The timeline of one run, each line after `indent`; with `expand`, each nested run's timeline
// follows the line of the node that ran it, indented one step more.
void printTimeline(const std::vector<Json>& events, const std::string& run_id,
                   const std::string& indent, bool expand, int depth) {
  std::vector<NodeLine> lines;
  std::map<std::string, size_t> index;
  std::string run_status = "unfinished (no run.finished: killed or still running)";
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
      run_status = stringField(e, "status", "?");
      if (e.contains("reason")) {
        run_status += " (" + e["reason"].get<std::string>() + ")";
      }
      continue;
    }
    const std::string id = stringField(e, "node_id");
    if (id.empty()) {
      continue;
    }
    auto [it, inserted] = index.emplace(id, lines.size());
    if (inserted) {
      NodeLine fresh;
      fresh.id = id;
      lines.push_back(std::move(fresh));
    }
    NodeLine& line = lines[it->second];
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
    } else if (type == "node.skipped") {
      line.status = "skipped";
      line.detail = stringField(e, "reason");
    } else if (type == "node.activity" && e.contains("sub_event_log") &&
               e["sub_event_log"].is_string()) {
      line.sub_logs.emplace_back(e["sub_event_log"].get<std::string>());
    }
  }
  std::cout << indent << "run " << run_id << ": " << run_status;
  if (run_start >= 0 && run_end >= run_start) {
    std::cout << " in " << (run_end - run_start) << " ms";
  }
  std::cout << '\n';
  size_t width = 4;
  for (const auto& line : lines) {
    width = std::max(width, line.id.size());
  }
  std::cout << indent << "  " << std::left << std::setw(static_cast<int>(width)) << "NODE" << "  "
            << std::setw(9) << "STATUS" << "  " << std::setw(9) << "DURATION" << "  DETAIL\n";
  for (const auto& line : lines) {
    std::string duration = "-";
    if (line.first_ts >= 0 && line.last_ts >= line.first_ts) {
      duration = std::to_string(line.last_ts - line.first_ts) + " ms";
    }
    std::string detail = line.detail;
    if (line.calls > 1) {
      detail = std::to_string(line.calls) + " calls" +
               (line.failures > 0 ? ", " + std::to_string(line.failures) + " failed" : "") +
               (line.cancels > 0 ? ", " + std::to_string(line.cancels) + " cancelled" : "") +
               (detail.empty() ? "" : "; " + detail);
    }
    if (!expand && !line.sub_logs.empty()) {
      detail += std::string(detail.empty() ? "" : "; ") + std::to_string(line.sub_logs.size()) +
                (line.sub_logs.size() == 1 ? " nested run" : " nested runs") + " (--expand)";
    }
    std::cout << indent << "  " << std::left << std::setw(static_cast<int>(width)) << line.id
              << "  " << std::setw(9) << line.status << "  " << std::setw(9) << duration << "  "
              << detail << '\n';
    if (!expand || depth >= kMaxExpandDepth) {
      continue;
    }
    for (const auto& sub : line.sub_logs) {
      auto log = events::readEventLog(sub);
      if (!log) {
        std::cout << indent << "    (nested run: " << log.error().message << ")\n";
        continue;
      }
      printTimeline(log->events, sub.stem().string(), indent + "    ", expand, depth + 1);
    }
  }
}

}  // namespace

namespace {

// The timeline (or, `json`, the events) of a run's log as read from a file or the store.
int showEvents(const Result<events::LogReadResult>& log, const std::string& run_id, bool json,
               bool expand) {
  if (!log) {
    std::cerr << "oe: " << log.error().message << '\n';
    return kExitFailed;
  }
  for (const auto& warning : log->warnings) {
    std::cerr << "oe: warning: " << warning << '\n';
  }
  if (json) {
    Json events(log->events);
    if (expand) {
      expandEvents(events, 0);
    }
    std::cout << events.dump(2) << '\n';
    return kExitOk;
  }
  printTimeline(log->events, run_id, "", expand, 0);
  return kExitOk;
}

// `oe inspect --store URL`: the run and its lines from the database; with `html`, its report
// written to `out` (stdout when empty).
int inspectFromStore(const std::string& url, const std::string& run_id, bool last,
                     const std::string& experience, bool json, bool expand, bool html,
                     const std::string& out) {
  auto conn = openStore(url);
  if (!conn) {
    std::cerr << "oe: " << conn.error().message << '\n';
    return kExitFailed;
  }
  auto run = resolveStoreRun(**conn, run_id, last, experience);
  if (!run) {
    return kExitUsage;
  }
  if (html) {
    auto input = loadStoreRunReport(**conn, experience, run->run_id);
    if (!input) {
      std::cerr << "oe: " << input.error().message << '\n';
      return kExitFailed;
    }
    for (const auto& note : input->notes) {
      std::cerr << "oe: warning: " << note << '\n';
    }
    return writeOutput(out, runReportHtml(*input), "--out") ? kExitOk : kExitFailed;
  }
  return showEvents(pgstore::readRunEvents(**conn, run->run_id), run->run_id, json, expand);
}

}  // namespace

void addInspectCommand(CLI::App& app, int& exit_code) {
  struct Args {
    std::string run_id;
    std::string experience = ".";
    bool json = false;
    bool last = false;
    bool expand = false;
    bool html = false;
    std::string out;
    std::string store;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("inspect", "Show a run's timeline from its event log");
  auto* run_id = cmd->add_option("run-id", a->run_id, "The run: its id or a unique prefix of it");
  cmd->add_flag("--last", a->last, "The newest run")->excludes(run_id);
  cmd->add_option("--experience", a->experience, "Experience folder")->capture_default_str();
  cmd->add_flag("--json", a->json, "Print the events as a JSON array");
  cmd->add_flag("--expand", a->expand,
                "Show each nested experience's run inline, under the node that ran it");
  auto* html = cmd->add_flag("--html", a->html,
                             "A self-contained HTML report: totals, the graph coloured by node "
                             "status, a timeline of the node calls, per-node detail");
  html->excludes("--json");
  cmd->add_option("-o,--out", a->out, "With --html: write the report to this file, not stdout")
      ->needs(html);
  addStoreOption(*cmd, a->store);
  cmd->callback([a, &exit_code] {
    // --store or OE_STORE: the run's events from the database (it may have run elsewhere).
    if (const std::string url = resolveStore(a->store, nullptr); pg::isUrl(url)) {
      exit_code =
          inspectFromStore(url, a->run_id, a->last, a->experience, a->json, a->expand, a->html,
                           a->out);
      return;
    }
    auto run = resolveRun(a->experience, a->run_id, a->last);
    if (!run) {
      exit_code = kExitUsage;
      return;
    }
    a->run_id = run->id;
    if (a->html) {
      auto input = loadRunReport(a->experience, *run);
      if (!input) {
        std::cerr << "oe: " << input.error().message << '\n';
        exit_code = kExitFailed;
        return;
      }
      for (const auto& note : input->notes) {
        std::cerr << "oe: warning: " << note << '\n';
      }
      exit_code = writeOutput(a->out, runReportHtml(*input), "--out") ? kExitOk : kExitFailed;
      return;
    }
    exit_code = showEvents(events::readEventLog(run->log), a->run_id, a->json, a->expand);
  });
}

}  // namespace oe::cli

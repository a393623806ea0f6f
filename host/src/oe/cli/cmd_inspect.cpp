// `oe inspect <run-id>`: a run's timeline from its event log (node, status, duration, error;
// runs/timeline reads it), or with --html its report as a self-contained page (run_report.hpp).
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>

#include "oe/cli/app.hpp"
#include "oe/cli/commands.hpp"
#include "oe/cli/common.hpp"
#include "oe/cli/run_lookup.hpp"
#include "oe/cli/store_option.hpp"
#include "oe/events/event_log.hpp"
#include "oe/pgstore/event_sink.hpp"
#include "oe/report/run_report.hpp"
#include "oe/runs/timeline.hpp"

namespace oe::cli {

using report::runReportHtml;
using runs::loadRunReport;
using runs::loadStoreRunReport;

namespace {

// The timeline, each line after `indent`; expanded, each nested run's timeline follows the line
// of the node that ran it, indented one step more.
void printTimeline(const runs::Timeline& timeline, const std::string& indent, bool expand) {
  std::cout << indent << "run " << timeline.run_id << ": " << timeline.status;
  if (timeline.duration_ms >= 0) {
    std::cout << " in " << timeline.duration_ms << " ms";
  }
  std::cout << '\n';
  size_t width = 4;
  for (const auto& line : timeline.nodes) {
    width = std::max(width, line.id.size());
  }
  std::cout << indent << "  " << std::left << std::setw(static_cast<int>(width)) << "NODE" << "  "
            << std::setw(9) << "STATUS" << "  " << std::setw(9) << "DURATION" << "  DETAIL\n";
  for (const auto& line : timeline.nodes) {
    const std::string duration =
        line.durationMs() >= 0 ? std::to_string(line.durationMs()) + " ms" : "-";
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
    if (!line.policy.empty()) {
      std::cout << indent << "    policy " << line.policy << '\n';
    }
    for (const auto& denial : line.denials) {
      std::cout << indent << "    denied " << denial << '\n';
    }
    for (const auto& nested : line.nested) {
      if (nested.timeline.empty()) {
        std::cout << indent << "    (nested run: " << nested.error << ")\n";
      } else {
        printTimeline(nested.timeline.front(), indent + "    ", expand);
      }
    }
  }
}

// What the attempts in worktrees changed (node.diff events, docs/workspaces.md): a line per
// node or item with its files and +/-, and the artifact `oe apply-diff` applies.
void printDiffs(const std::vector<Json>& events) {
  bool first = true;
  for (const Json& event : events) {
    if (!event.is_object() || event.value("type", std::string()) != "node.diff") {
      continue;
    }
    if (first) {
      std::cout << "  diffs (oe apply-diff RUN NODE [--item N]):\n";
      first = false;
    }
    std::string who = event.value("node_id", std::string());
    if (event.contains("item")) {
      who += "#" + event["item"].dump();
    }
    const Json files = event.value("files", Json::array());
    std::cout << "    " << who << "  " << files.size() << (files.size() == 1 ? " file" : " files")
              << "  +" << event.value("insertions", 0) << " -" << event.value("deletions", 0)
              << "  .openexpertise/artifacts/" << event.value("artifact", std::string())
              << ".diff\n";
  }
}

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
      runs::expandNestedEvents(events);
    }
    std::cout << events.dump(2) << '\n';
    return kExitOk;
  }
  printTimeline(runs::timelineOf(log->events, run_id, expand), "", expand);
  printDiffs(log->events);
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
      exit_code = inspectFromStore(url, a->run_id, a->last, a->experience, a->json, a->expand,
                                   a->html, a->out);
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

// Live progress of `oe run` / `oe resume` on stderr (docs in the README's "Using it"): a line per
// finished, cached, failed, skipped or retried node, and a periodic "still running" notice; or
// the live view (view/) on a terminal.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "oe/events/event.hpp"
#include "oe/ops/context.hpp"
#include "oe/report/run_summary.hpp"
#include "oe/run/run.hpp"
#include "oe/spec/experience.hpp"
#include "oe/view/live_view.hpp"

namespace oe::cli {

using report::oneLine;

// Live progress on stderr: one line per finished (or cached), failed, skipped or retried node,
// and, every `OE_STILL_RUNNING_INTERVAL_MS` (default 30 s; 0: never), which nodes have been
// running since when, so that a tool that never settles does not look like a hung oe.
// Events arrive from the log's writers and from worker threads: one mutex orders the output.
class Progress {
 public:
  Progress();
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Parses only the events it prints a detail of (failed, skipped, retry, activity, log).
  void onEvent(const events::Event& event);

 private:
  bool closeCall(const std::string& node);
  // A provider's retry wait arrives twice, as a WARN log line and as a node.activity with the
  // same text: the second of two identical lines in a row from a node is not printed.
  void printOnce(const std::string& node, const std::string& prefix, const std::string& text);
  void notifyLoop();

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  int64_t interval_ms_ = 0;
  std::map<std::string, std::deque<std::chrono::steady_clock::time_point>> open_;  // per node
  std::map<std::string, std::string> last_text_;  // per node: its last log/activity line
  std::thread notifier_;
};

// How `oe run` and `oe resume` show a run on stderr: the live view on a terminal (or under
// --tui), else a line per event (Progress), else nothing (--quiet, --json).
class RunDisplay {
 public:
  // `quiet`: --quiet or --json; `tui`/`no_tui`: the flags. A live view that cannot start under
  // --tui says why and falls back to the progress lines.
  RunDisplay(const spec::Experience& experience, bool quiet, bool tui, bool no_tui);

  // A line before the run starts: above the live view, else on stderr.
  void say(const std::string& line);
  // The run's events go to the display, plugin log lines and --wait's notice above the live
  // view (they would tear its frame).
  void attach(run::RunOptions& options, ops::StderrLog& log_sink);
  // After the run: the live view's final frame stays above the summary, no "still running"
  // line comes after it.
  void finish(ops::StderrLog& log_sink);

 private:
  std::unique_ptr<view::LiveView> live_;
  std::unique_ptr<Progress> progress_;
};

}  // namespace oe::cli

// Live progress of `oe run` / `oe resume` on stderr (docs in the README's "Using it"): a line per
// finished, cached, failed, skipped or retried node, and a periodic "still running" notice.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "oe/events/event.hpp"

namespace oe::cli {

// The first line of `text`, cut to `max` bytes (on a UTF-8 boundary) with "..." when longer:
// a stack trace or a long provider body stays one line on the terminal.
[[nodiscard]] std::string oneLine(std::string_view text, size_t max = 300);

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

}  // namespace oe::cli

// The sources of `oe serve`'s live events (docs/serve.md, "Live events"): ONE tailer per run log,
// however many clients watch that run, fanning each new line out to every subscriber; and one
// tailer of every log under the root for the all-runs stream. A single thread polls the logs
// that have subscribers (every 50 ms: a run's log is appended by another process, and a poll
// needs no inotify descriptor per log nor a watch on folders that come and go); it never waits
// on a subscriber: EventSink::push never blocks, and a subscriber whose push() says false is
// dropped (its client reconnects with Last-Event-ID and misses nothing).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "oe/httpd/http.hpp"

namespace oe::service {

// One line of a run's log: `seq` is its line number (1-based), `text` the line without '\n'.
struct LogLine {
  uint64_t seq = 0;
  std::string text;
};

// Reads the complete ('\n'-terminated) lines of an append-only file from a position on; a torn
// last line is left for the next read, when its end has been written.
class LogCursor {
 public:
  explicit LogCursor(std::filesystem::path path, uint64_t offset = 0, uint64_t seq = 0)
      : path_(std::move(path)), offset_(offset), seq_(seq) {}
  // The lines after the position, at most about `max_bytes` of them; an unreadable or missing
  // file reads as no line yet.
  std::vector<LogLine> next(size_t max_bytes);
  // The lines up to (not beyond) byte `end`.
  std::vector<LogLine> upTo(uint64_t end);
  [[nodiscard]] uint64_t offset() const { return offset_; }
  [[nodiscard]] uint64_t seq() const { return seq_; }

 private:
  std::vector<LogLine> read(uint64_t end, size_t max_bytes);

  std::filesystem::path path_;
  uint64_t offset_;
  uint64_t seq_;
};

// True for the line that ends a run's log: the writer puts `type` first (docs/storage.md, "Event
// logs"), so no line is parsed to find it.
[[nodiscard]] bool isRunFinished(std::string_view line);

class LogHub {
 public:
  // `between_catch_up_and_join`, when set, is called by subscribeRun after a subscriber's
  // catch-up from the file and before it joins the tailer: the moment lines can be written and
  // fanned out to the others without it, which its tests use to make that happen every time.
  explicit LogHub(std::chrono::milliseconds poll = std::chrono::milliseconds(50),
                  std::function<void()> between_catch_up_and_join = {});
  ~LogHub();
  LogHub(const LogHub&) = delete;
  LogHub& operator=(const LogHub&) = delete;

  // Streams run `run_id`'s log `log` to `sink` from line `after` + 1 on: catches up from the
  // file on the calling thread, then joins the run's tailer (made by the first subscriber,
  // removed with the last) without a gap or a repeated line; after run.finished, finish(). Each
  // frame's id is the line's seq.
  void subscribeRun(const std::filesystem::path& log, uint64_t after,
                    std::shared_ptr<httpd::EventSink> sink);

  // Streams every line appended from now on to any `<runs dir>/*.jsonl` that `runs_dirs` lists
  // (asked again every second, so new experiences are seen), with id `<run id>:<seq>`.
  void subscribeAll(std::function<std::vector<std::filesystem::path>()> runs_dirs,
                    std::shared_ptr<httpd::EventSink> sink);

  // How many run logs are tailed now (one per log with subscribers), and subscribers in all.
  [[nodiscard]] size_t runTailers() const;
  [[nodiscard]] size_t subscribers() const;

 private:
  struct Subscriber {
    std::shared_ptr<httpd::EventSink> sink;
    uint64_t last_seq = 0;  // the last line it was given
  };
  struct RunTailer {
    explicit RunTailer(LogCursor start) : cursor(std::move(start)) {}
    std::mutex mutex;
    LogCursor cursor;
    bool finished = false;
    std::vector<Subscriber> subscribers;
  };
  struct FileTail {
    LogCursor cursor;
    std::string run_id;
  };
  struct AllTailer {
    std::function<std::vector<std::filesystem::path>()> runs_dirs;
    std::vector<std::filesystem::path> dirs;
    std::chrono::steady_clock::time_point listed;
    std::map<std::filesystem::path, FileTail> files;
    std::vector<std::shared_ptr<httpd::EventSink>> subscribers;
  };

  void loop();
  void pollRun(const std::filesystem::path& log, const std::shared_ptr<RunTailer>& tailer);
  void pollAll();
  void scanAll(bool from_end);

  const std::chrono::milliseconds poll_;
  const std::function<void()> between_catch_up_and_join_;
  mutable std::mutex mutex_;  // taken before a tailer's own mutex, never after it
  std::condition_variable wake_;
  bool stop_ = false;
  std::map<std::filesystem::path, std::shared_ptr<RunTailer>> runs_;
  mutable std::mutex all_mutex_;    // guards all_ (never held with mutex_)
  std::unique_ptr<AllTailer> all_;  // null while nobody watches every run
  std::thread thread_;
};

}  // namespace oe::service

// A run's event lines copied into oe_events (docs/storage.md) by a background writer, so that
// `oe resume`, `oe inspect` and `oe runs` on any machine can read the run from the database.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "oe/events/event_log.hpp"
#include "oe/pg/connection.hpp"
#include "oe/pgstore/fence.hpp"

namespace oe::pgstore {

// The engine thread (any thread: the log's listeners) only appends the line to a batch under a
// lock; the writer thread inserts the batch in one statement every kDelay (or at kMaxBatch
// lines). A kill loses at most the last kDelay of lines (the local JSONL file has them); close()
// writes everything. Each line carries its number in the run's log (oe_events.seq, unique per
// run), so a batch sent again after a lost connection adds nothing twice. With a fence, the
// lines are written only while the run holds its scope's epoch, and a lost connection is
// waited for until the run stops (the lines wait in the batch).
class EventSink {
 public:
  static constexpr std::chrono::milliseconds kDelay{100};
  static constexpr size_t kMaxBatch = 1000;

  static Result<std::unique_ptr<EventSink>> open(const std::string& url, std::string run_id,
                                                 std::chrono::milliseconds retry_for,
                                                 std::shared_ptr<ScopeFence> fence = nullptr);

  EventSink(std::unique_ptr<pg::Connection> conn, std::string run_id,
            std::shared_ptr<ScopeFence> fence = nullptr);
  ~EventSink();  // close()
  EventSink(const EventSink&) = delete;
  EventSink& operator=(const EventSink&) = delete;

  // Subscribes to the log: every line it writes is queued.
  void attach(events::EventLog& log);
  void add(std::string_view line);
  // Writes what is queued and stops the writer; the first error (lines not written), if any.
  std::optional<std::string> close();

 private:
  struct Line {
    int64_t seq;
    std::string text;
  };
  void loop();
  // Inserts `lines` (writer thread); false after a failure that reconnecting did not cure.
  bool insert(const std::vector<Line>& lines);

  std::unique_ptr<pg::Connection> conn_;  // the writer thread's
  std::string run_id_;
  std::shared_ptr<ScopeFence> fence_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Line> queue_;
  int64_t next_seq_ = 1;
  bool refused_ = false;  // the writer thread's: the fence refused a batch
  bool closing_ = false;
  std::optional<std::string> error_;
  events::EventLog* log_ = nullptr;
  size_t subscription_ = 0;
  std::thread writer_;  // last: started when the rest is in place
};

// A run's lines from oe_events, parsed as readEventLog parses a file. An error when the
// database cannot be read; a run with no lines gives no events.
Result<events::LogReadResult> readRunEvents(pg::Connection& conn, const std::string& run_id);

}  // namespace oe::pgstore

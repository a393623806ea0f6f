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

namespace oe::pgstore {

// The engine thread (any thread: the log's listeners) only appends the line to a batch under a
// lock; the writer thread inserts the batch in one statement every kDelay (or at kMaxBatch
// lines). A kill loses at most the last kDelay of lines (the local JSONL file has them); close()
// writes everything. A lost connection reconnects with backoff (the lines wait in the batch).
class EventSink {
 public:
  static constexpr std::chrono::milliseconds kDelay{100};
  static constexpr size_t kMaxBatch = 1000;

  static Result<std::unique_ptr<EventSink>> open(const std::string& url, std::string run_id,
                                                 std::chrono::milliseconds retry_for);

  EventSink(std::unique_ptr<pg::Connection> conn, std::string run_id);
  ~EventSink();  // close()
  EventSink(const EventSink&) = delete;
  EventSink& operator=(const EventSink&) = delete;

  // Subscribes to the log: every line it writes is queued.
  void attach(events::EventLog& log);
  void add(std::string_view line);
  // Writes what is queued and stops the writer; the first error (lines not written), if any.
  std::optional<std::string> close();

 private:
  void loop();
  // Inserts `lines` (writer thread); false after a failure that reconnecting did not cure.
  bool insert(const std::vector<std::string>& lines);

  std::unique_ptr<pg::Connection> conn_;  // the writer thread's
  std::string run_id_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::string> queue_;
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

// What `oe runs`, `oe gc`, `oe inspect` and the MCP tools know about past runs: one record per `.openexpertise/runs/*.jsonl`,
// read cheaply (first and last line) whenever the run finished.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/events/event_log.hpp"

struct stat;

namespace oe::runs {

// The deepest nested run followed (a cycle cannot be logged, but a log can be edited).
inline constexpr int kMaxNestedDepth = 16;

struct RunRecord {
  std::string id;  // the file name without .jsonl
  std::filesystem::path log;
  uint64_t size_bytes = 0;
  int64_t modified_ms = -1;  // the log's mtime
  std::string started_at;    // run.started ts; empty when the first line is not run.started
  int64_t started_ms = -1;   // that ts in ms since the epoch, else the log's mtime
  // Filled only by listRuns(..., details = true):
  std::string finished_at;  // run.finished ts; empty for an unfinished run
  int64_t end_ms = -1;      // run.finished ts, or the last event's for an unfinished run
  std::string status = "unfinished";  // run.finished status (`interrupted` for a signal, also
                                      // in older logs), or "unfinished" (killed, running)
  std::string reason;                 // run.finished reason (fail_run, interrupted)
  std::string resumed_from;           // run.started resumed_from (oe resume)
  std::string chain_id;               // run.started chain_id (empty in logs from before chains)
  std::string parent_run_id;          // run.started parent_run_id: a nested experience's run
  size_t ran = 0;
  size_t cached = 0;
  size_t failed = 0;
  size_t cancelled = 0;  // calls the run stopped (node.failed with "cancelled": true)
  size_t skipped = 0;
  std::vector<std::string> warnings;  // readEventLog's (a torn last line, ...)

  [[nodiscard]] bool finished() const { return !finished_at.empty(); }
  [[nodiscard]] int64_t durationMs() const {
    return started_ms >= 0 && end_ms >= started_ms ? end_ms - started_ms : -1;
  }
  [[nodiscard]] Json toJson() const;
};

// Every `<runs_dir>/*.jsonl`, newest first (run.started ts, else mtime; then id). With
// `details`, the status and node counts come from the run.finished line at the end of the log
// (only the last 64 KiB are read), or, for an unfinished run, from counting its events: ran =
// node.finished paired with a node.started, cached = node.finished without one (a cache hit
// logs no node.started), failed = node.failed, cancelled = node.failed with "cancelled": true,
// skipped = node.skipped. A missing folder is an empty list.
std::vector<RunRecord> listRuns(const std::filesystem::path& runs_dir, bool details);

// listRuns for a server that lists the same folders on every request. A log whose size, mtime
// (ns) and inode are those of the last call is not read again (logs only grow), and while the
// folder's own mtime is unchanged (and was settled, over 2 s old, when last listed: the
// racy-timestamp rule git uses for its index) its names are not listed again and a finished
// run's log (final: nothing appends after run.finished) is not even stat'ed. A new or deleted
// log changes the folder's mtime, so it is seen at once. Thread-safe; logs are read outside
// the lock.
class RunListCache {
 public:
  std::vector<RunRecord> list(const std::filesystem::path& runs_dir, bool details);

 private:
  struct Key {
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    uint64_t inode = 0;
    bool operator==(const Key&) const = default;
  };
  struct Entry {
    Key key;
    bool details = false;  // read with details (serves either kind of call)
    RunRecord record;
    uint64_t seen = 0;  // the folder's generation that last listed it
  };
  struct Folder {
    std::map<std::string, Entry> entries;  // by file name
    int64_t dir_mtime_ns = -1;
    bool names_final = false;  // the names stand while dir_mtime_ns does
    uint64_t generation = 0;   // full listings so far
  };
  static Key keyOf(const struct stat& st);

  std::mutex mutex_;
  std::map<std::filesystem::path, Folder> folders_;
};

// The run `oe inspect` / `oe resume` name: `last` picks the newest run; otherwise `id` is a run
// id or a prefix of exactly one (an exact id wins over a longer id it prefixes). The error says
// what to do: no run at all, no match, or the candidates of an ambiguous prefix.
Result<RunRecord> findRun(const std::filesystem::path& runs_dir, std::string_view id, bool last);

using events::parseIsoMs;

// "7d", "12h", "30m", "45s" (a positive integer and one unit) -> milliseconds.
Result<int64_t> parseDurationMs(std::string_view text);

// 1536 -> "1.5 KiB".
std::string humanBytes(uint64_t bytes);

// ms since the epoch, now (CLOCK_REALTIME, as the logs' timestamps).
int64_t nowMs();

}  // namespace oe::runs

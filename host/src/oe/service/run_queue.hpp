// `oe serve`'s persistent run queue (docs/serve.md, "The queue"): the runs asked for through the
// API that have not finished, queued or running, under the id they will keep, and the queued ones
// cancelled before they started (kept 7 days, so the cancel leaves a trace). SQLite (a file of
// the server's, WAL) or a table of oe's PostgreSQL schema shared by every `oe serve` instance.
// The launcher claims from it; the read side lists it so a queued run shows in GET /api/runs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"

namespace oe::service {

inline constexpr int kMinPriority = 1;
inline constexpr int kMaxPriority = 10;
inline constexpr int kDefaultPriority = 5;
// How long a cancelled entry stays listed (docs/serve.md, "The queue"): then dropCancelled
// removes it.
inline constexpr int64_t kKeepCancelledMs = int64_t{7} * 24 * 3600 * 1000;

// One run the server owes: a fresh `oe run`, or an `oe resume` of `resume_of` (a resume is a new
// run of the same chain, so it has an id of its own).
struct QueuedRun {
  std::string run_id;          // assigned at enqueue: the id the run keeps (`oe run --run-id`)
  std::string experience;      // its name (`name:` of its experience.yaml), as GET /api/experiences
  std::string folder;          // its folder relative to --root ("hello", "team/review"): what runs
  std::string kind = "run";    // "run" or "resume"
  std::string resume_of;       // kind "resume": the run it continues
  Json args = Json::object();  // kind "run": the run's --args
  Json options = Json::object();    // {concurrency?, no_cache?, llm?} as POST /api/runs took them
  int priority = kDefaultPriority;  // 1..10; a higher number starts first, FIFO within one
  int64_t enqueued_ms = 0;          // ms since the epoch
  std::string state = "queued";     // "queued", "running" or "cancelled" (never started)
  int64_t started_ms = 0;           // running: when its child started
  int64_t pid = 0;                  // running: the child's pid, on the owner's host
  std::string owner;                // running: the `oe serve` instance that started it
  int64_t lease_until_ms = 0;       // running, PostgreSQL: the owner renews it while alive
  // The experience's runtime.max_concurrent_runs when it was queued; 0: the server's default.
  int max_concurrent = 0;
  int64_t cancelled_ms = 0;  // cancelled: when

  [[nodiscard]] Json toJson() const;  // what GET /api/runs shows of it
};

// The limits a claim honours.
struct ClaimLimits {
  int global = 0;          // runs at once on this queue (every experience); 0: no cap
  int per_experience = 0;  // the default of an experience without max_concurrent; 0: no cap
};

// Every method is thread-safe (handlers and the launcher share one queue).
class RunQueue {
 public:
  // `where`: a PostgreSQL URL (pg::isUrl) or the path of the SQLite file (created with its
  // folder). The PostgreSQL table is oe's schema's (`oe store migrate`). A SQLite file is held
  // by one queue object at a time (an flock on <file>.lock, released when it is destroyed): a
  // second server on the same root is refused, saying which file.
  static Result<std::unique_ptr<RunQueue>> open(const std::string& where);
  // The SQLite file of a server whose --root is `root`: <root>/.openexpertise/serve/queue.db.
  static std::filesystem::path defaultPath(const std::filesystem::path& root);

  virtual ~RunQueue() = default;
  RunQueue() = default;
  RunQueue(const RunQueue&) = delete;
  RunQueue& operator=(const RunQueue&) = delete;

  // Adds a queued entry (its run_id must be new to the queue: an error otherwise).
  virtual Result<void> enqueue(const QueuedRun& entry) = 0;
  // Every entry, in the order they would start: running first, then queued by priority (high
  // first), then enqueued_ms, then run_id; the cancelled ones last. This is what GET /api/runs
  // lists besides the runs' logs.
  virtual Result<std::vector<QueuedRun>> list() = 0;
  virtual Result<std::optional<QueuedRun>> find(std::string_view run_id) = 0;
  // Takes the next queued entry that the limits allow (counting every running entry of every
  // owner; a cancelled one neither starts nor counts), marks it running under `owner` with a
  // lease of `lease_ms`, and returns it; nullopt when none may start now. Of concurrent
  // claimers, one gets each entry.
  virtual Result<std::optional<QueuedRun>> claim(std::string_view owner, const ClaimLimits& limits,
                                                 int64_t lease_ms) = 0;
  // The child of a claimed entry started: its pid.
  virtual Result<void> setPid(std::string_view run_id, int64_t pid) = 0;
  // Removes the entry (a run that ended, a cancelled one deleted). False when it was not there.
  virtual Result<bool> remove(std::string_view run_id) = 0;
  // Marks the entry cancelled at `now_ms`, only while it is queued (cancel of a queued run): it
  // stays listed but never starts. False when it was not queued (it started meanwhile, was
  // cancelled already, or is gone).
  virtual Result<bool> cancelQueued(std::string_view run_id, int64_t now_ms) = 0;
  // Removes the cancelled entries cancelled before `before_ms` (retention): how many.
  virtual Result<int> dropCancelled(int64_t before_ms) = 0;
  // Puts a running entry back in the queue, unowned (a run whose server died before its child
  // could be started, or whose child cannot be found).
  virtual Result<void> requeue(const QueuedRun& entry) = 0;
  // Renews the lease of every running entry `owner` holds.
  virtual Result<void> renew(std::string_view owner, int64_t lease_ms) = 0;
  // Running entries whose lease ran out at `now_ms` (their owner is gone), taken over by
  // `owner` with a new lease: the caller decides whether each child still runs or resumes it.
  // On SQLite the file is one server's (open() locks it), so every running entry another owner
  // left is taken, whatever its lease.
  virtual Result<std::vector<QueuedRun>> takeOverExpired(std::string_view owner, int64_t now_ms,
                                                         int64_t lease_ms) = 0;
};

// The entry a claim takes from `entries` (every entry, in list()'s order): the first queued one
// whose experience is under its limit, when the running ones are under the global cap.
[[nodiscard]] std::optional<QueuedRun> pickNext(const std::vector<QueuedRun>& entries,
                                                const ClaimLimits& limits);

// Milliseconds since the epoch.
[[nodiscard]] int64_t nowMs();

}  // namespace oe::service

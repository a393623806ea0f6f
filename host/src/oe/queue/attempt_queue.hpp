// The work queue of a run spread over machines (docs/scale-out.md): node attempts as rows of
// oe_attempts, put there by the coordinator, claimed by `oe worker` with FOR UPDATE SKIP LOCKED
// under a lease kept alive by heartbeat, and completed under a fencing token, so that a result
// from a worker whose lease expired (and whose attempt was handed to another) is refused.
// Every statement is short: no transaction is ever open across a node's work.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/pg/connection.hpp"

namespace oe::queue {

// What the coordinator puts in the queue for one attempt of one call of a node.
struct NewAttempt {
  std::string run_id;
  std::string node_id;
  std::string call_key;  // the call's write key: "node", "node#3", "stage@pipe#2"
  int attempt = 1;
  std::string queue = "default";  // the node's `queue:`
  std::string kind;
  std::string config;   // the create config: {"experience_dir":..., "node":...}
  std::string request;  // the invoke request (node_executor.hpp's invokeRequest)
  std::string cache_key;
  std::optional<int64_t> timeout_ms;
  // Unique within the run (the dispatcher's ticket): enqueueing the same attempt again (a
  // retry after a lost connection) returns the row added the first time. Unset: a fresh one.
  std::optional<int64_t> seq;
};

// An attempt a worker holds. `fence` is the token its completion must present.
struct Claimed {
  int64_t id = 0;
  int64_t fence = 0;
  std::string run_id;
  std::string node_id;
  std::string call_key;
  int attempt = 1;
  std::string queue;
  std::string kind;
  std::string config;
  std::string request;
  std::string cache_key;
  std::optional<int64_t> timeout_ms;
};

// The node's cache entry, written with the completion (oe_cache; an existing key wins).
struct CacheEntry {
  std::string key;
  std::string value;
};

// What the worker hands back for an attempt it holds.
struct Completion {
  int64_t id = 0;
  int64_t fence = 0;
  bool ok = false;        // the plugin returned OE_OK
  int result_status = 0;  // the plugin's oe_status
  std::string response;
  std::string error;
  std::optional<CacheEntry> cache;
  std::vector<std::string> events;  // the plugin's events (node.activity, ...), a JSON object each
  std::string llm_usage;            // llm::Usage JSON of the attempt's LLM calls; empty: none
};

// A finished attempt as the coordinator collects it.
struct Finished {
  int64_t id = 0;
  bool ok = false;
  int result_status = 0;
  std::string response;
  std::string error;
  std::string llm_usage;  // as Completion's
  std::string events;     // Completion's events as one JSON array; empty: none
  bool cancelled = false;  // the coordinator gave it up (collect: a cancelled row)
};

// A held lease as the heartbeat renews it.
struct Held {
  int64_t id = 0;
  int64_t fence = 0;
};

// The SQL of the queue over one connection (one thread at a time, as pg::Connection).
class AttemptQueue {
 public:
  explicit AttemptQueue(pg::Connection& conn) : conn_(conn) {}

  // Adds ready attempts in one statement (one round trip for a burst of ready nodes); their ids
  // in the same order. Notifies "oe_attempts" once when `notify` (workers LISTENing wake).
  Result<std::vector<int64_t>> enqueue(const std::vector<NewAttempt>& attempts, bool notify);

  // Claims up to `max` ready attempts of `queues`, oldest first, for `worker` until now+lease;
  // each claim bumps the attempt's fence. Rows another worker is claiming are skipped, not
  // waited for (SKIP LOCKED).
  Result<std::vector<Claimed>> claim(const std::string& worker,
                                     const std::vector<std::string>& queues, int max,
                                     std::chrono::milliseconds lease);

  // Extends the leases `worker` still holds; returns the ones it no longer holds (cancelled by
  // the coordinator, or expired and handed on): their work should stop, their result is refused.
  Result<std::vector<int64_t>> renew(const std::string& worker, const std::vector<Held>& held,
                                     std::chrono::milliseconds lease);

  // One transaction: the completion guarded by the fence, then the cache entry and the events.
  // False (and nothing written) when the attempt is no longer this holder's: a stale fence, a
  // cancelled attempt, or one already completed.
  Result<bool> complete(const std::string& worker, const Completion& completion);

  // The finished and cancelled attempts of `run_id` not marked collected yet, oldest first. Two
  // steps, read then markCollected, so that a connection lost between them loses no result: the
  // next collect reads them again and the coordinator ignores what it already has. A cancelled
  // attempt comes back too (Finished::cancelled), so that a cancel whose answer was lost (sent
  // again, it finds nothing left to cancel) still reaches the run.
  Result<std::vector<Finished>> collect(const std::string& run_id);
  Result<void> markCollected(const std::vector<int64_t>& ids);

  // The coordinator gave up on an attempt (cancel, fail_run, timeout_ms): a worker holding it
  // sees that at its next renew (woken by a NOTIFY on "oe_cancels"), and its completion is
  // refused. False when it was no longer ready or leased: it finished, or a first try of this
  // cancel had landed; collect hands over either.
  Result<bool> cancel(int64_t id);
  // Every attempt of a run not finished yet (the run stops, or a resume takes over from it);
  // nobody will collect them.
  Result<int64_t> cancelRun(const std::string& run_id);

  // Leased attempts whose lease ran out (their worker died or hangs) go back to ready; the fence
  // stays, the next claim bumps it. Returns how many.
  Result<int64_t> rescueExpired();

  // oe_workers: a worker's row, its heartbeat, its end.
  Result<void> registerWorker(const std::string& worker, const std::string& host, int pid,
                              const std::vector<std::string>& queues, int concurrency);
  Result<void> heartbeatWorker(const std::string& worker);
  Result<void> stopWorker(const std::string& worker);

 private:
  pg::Connection& conn_;
};


}  // namespace oe::queue

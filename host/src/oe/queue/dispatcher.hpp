// The coordinator's side of the work queue (docs/scale-out.md): `oe run --store URL --workers`
// hands node attempts to a Dispatcher instead of its thread pool. The dispatcher has its own
// thread and its own connection: it inserts what the run submits (in batches), cancels what the
// run gives up on, collects finished attempts and hands each to its callback exactly once, and
// re-queues the attempts of workers whose lease ran out. A database that goes away is waited
// for (said every 30 s); meanwhile a cancellation is settled at once, so a run that stops never
// waits for the database.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/pg/connection.hpp"
#include "oe/queue/attempt_queue.hpp"

namespace oe::queue {

struct DispatcherOptions {
  // The run this one resumes (`oe resume`): what its coordinator, killed or stopped, left in the
  // queue is cancelled at start, so workers stop spending on it (this run queues what it needs).
  std::string resumes;
  // How long the first connection is tried. Once connected, a lost database is waited for as
  // long as it takes, with backoff, saying so every 30 s.
  std::chrono::milliseconds retry_for{30'000};
  // How often the rescuer looks for expired leases.
  std::chrono::milliseconds rescue_every{1'000};
  // Idle polling for finished attempts backs off from the first to the second.
  std::chrono::milliseconds poll_min{2};
  std::chrono::milliseconds poll_max{50};
  // Where an outage is reported (null: stderr), and how often.
  std::function<void(const std::string&)> say{};
  std::chrono::milliseconds report_every{30'000};
};

class Dispatcher {
 public:
  // Called once per submitted attempt, on the dispatcher's thread: the worker's result, or a
  // cancellation (ok false, result_status OE_CANCELLED), or the queue's own failure.
  using OnFinished = std::function<void(const Finished&)>;

  // Connects (pg::migrate first) and starts the thread.
  static Result<std::unique_ptr<Dispatcher>> start(const std::string& url, std::string run_id,
                                                   DispatcherOptions options = {});
  // Cancels what is still in the queue for the run (when the database answers within a few
  // seconds), then stops the thread.
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Any thread. The ticket names the attempt for cancel().
  uint64_t submit(NewAttempt attempt, OnFinished on_finished);
  // Any thread. The attempt's callback runs with a cancellation unless its result came first.
  void cancel(uint64_t ticket);

 private:
  Dispatcher(std::unique_ptr<pg::Connection> conn, std::string run_id, DispatcherOptions options,
             std::shared_ptr<pg::Patience> patience);
  void loop();
  // One round: insert, cancel, collect, rescue. True when anything happened. Every callback it
  // took runs before it returns, whatever failed after.
  bool round();
  // The database is out of reach: the cancellations asked for are settled here (the attempts
  // stay in the queue until the run's end cancels them).
  void settleCancelsLocally();
  void failAll(const std::string& message);

  std::unique_ptr<pg::Connection> conn_;
  AttemptQueue queue_;
  std::string run_id_;
  DispatcherOptions options_;
  std::shared_ptr<pg::Patience> patience_;  // interrupted by the destructor

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  uint64_t next_ticket_ = 1;
  std::vector<std::pair<uint64_t, NewAttempt>> to_submit_;
  std::vector<uint64_t> to_cancel_;
  std::unordered_map<uint64_t, OnFinished> callbacks_;  // by ticket, until the attempt is over

  // The dispatcher thread's own.
  bool lost_ = false;  // a statement lost the connection: reconnect before the next round
  std::chrono::steady_clock::time_point down_since_{};
  std::string down_why_;
  std::unordered_map<int64_t, uint64_t> ticket_of_;  // attempt id -> ticket
  std::unordered_map<uint64_t, int64_t> id_of_;      // ticket -> attempt id
  std::chrono::steady_clock::time_point next_rescue_{};
  std::thread thread_;
};

}  // namespace oe::queue

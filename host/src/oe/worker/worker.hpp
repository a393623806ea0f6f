// `oe worker` (docs/scale-out.md): claims node attempts from the PostgreSQL work queue, runs them
// with the same plugins `oe run` loads for the attempt's experience folder, and completes them
// under the attempt's fencing token. One claim thread, one heartbeat thread (leases, the
// rescuer, the worker's own row), and a pool of `concurrency` threads running plugin calls.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/llm/llm_service.hpp"
#include "oe/pg/connection.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/queue/attempt_queue.hpp"
#include "oe/secrets/secret_set.hpp"

namespace oe::worker {

struct WorkerOptions {
  std::string url;
  std::vector<std::string> queues{"default"};
  int concurrency = 1;
  // How long a claim holds an attempt without a heartbeat; renewed every lease/3. A killed
  // worker's attempts run again elsewhere about this long after it died.
  std::chrono::milliseconds lease{30'000};
  std::string id;                   // empty: <host>:<pid>:<random>
  plugins::LogSink* log = nullptr;  // plugin and worker messages (null: stderr)
  // Asked before a plugin that is not built in loads (docs/trust.md); null: none loads, and
  // the attempts of an experience that has one fail, naming the `oe trust` command.
  plugins::TrustGate* trust = nullptr;
  // Idle claim polling backs off between these; a NOTIFY from a coordinator wakes it at once.
  std::chrono::milliseconds poll_min{20};
  std::chrono::milliseconds poll_max{500};
  bool listen = true;  // LISTEN for the coordinators' NOTIFY (false: polling alone)
  // How often the worker says, while the database is out of reach, that it still waits.
  std::chrono::milliseconds report_every{30'000};
};

class WorkerCall;

class Worker {
 public:
  // Connects (pg::migrate first) and registers the worker in oe_workers.
  static Result<std::unique_ptr<Worker>> start(WorkerOptions options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Claims and runs attempts until stop(); then lets the attempts it holds finish and complete
  // them. A database that goes away is waited for as long as it takes (said every 30 s), and
  // stop() still ends the wait at once; a completion whose database is away is retried until
  // it lands, or, once stopping, for one more lease. An error: a statement the database
  // refused.
  Result<void> run();
  // Any thread (a signal watcher).
  void stop();

  [[nodiscard]] const std::string& id() const { return options_.id; }
  // Attempts whose completion the database accepted / refused (a stale fence), so far.
  [[nodiscard]] int64_t completed() const { return completed_.load(); }
  [[nodiscard]] int64_t refused() const { return refused_.load(); }

  // For WorkerCall, on pool threads.
  void log(oe_log_level level, std::string_view source, std::string_view message);
  // The run's LLM service, made from its experience's runtime block on first use (null and
  // `error` set when that block cannot be used).
  // The chain the run belongs to (oe_runs), the scope of its shared limits and budget.
  [[nodiscard]] std::string chainOf(const std::string& run_id) const;
  llm::LlmService* llmFor(const std::string& run_id, const std::string& experience_dir,
                          std::string& error);

 private:
  // An experience folder as this worker knows it: the plugins `oe run` would load for it and
  // its runtime block. Loaded once per folder.
  struct Folder {
    std::unique_ptr<plugins::PluginRegistry> registry;
    Json runtime;
    std::string error;  // why the folder cannot serve attempts (no experience.yaml, ...)
    // Its `secrets:` read on this worker's machine, with the provider keys of this worker's
    // environment (docs/policy.md, "Secrets"); null when there is none.
    std::shared_ptr<const secrets::SecretSet> secrets;
  };

  Worker(WorkerOptions options, std::shared_ptr<pg::Patience> patience,
         std::unique_ptr<pg::Connection> claim_conn, std::unique_ptr<pg::Connection> beat_conn,
         std::unique_ptr<pg::Connection> done_conn);
  // Migrates the schema, registers the worker and LISTENs: what start() does once connected.
  static Result<void> setUp(const WorkerOptions& options, pg::Connection& claim_conn,
                            pg::Connection& beat_conn);
  static pg::ConnectOptions connectOptions(const WorkerOptions& options,
                                           std::shared_ptr<pg::Patience> patience);
  Folder& folderFor(const std::string& dir);
  void execute(const queue::Claimed& attempt);
  void finish(const queue::Claimed& attempt, queue::Completion completion);
  // Sends the completion until the database takes it (or refuses it), reconnecting while it is
  // away; once the worker is stopping, for one more lease at most.
  Result<bool> complete(pg::Connection& conn, const queue::Completion& completion);
  void heartbeatLoop();
  // While the database is away: one connection attempt, the outage reported; false when it
  // failed (the caller waits and tries again).
  bool reconnect(pg::Connection& conn, std::chrono::steady_clock::time_point& down_since);
  // Wakes the heartbeat (a stop, the last attempt finished while stopping).
  void wakeHeartbeat();

  WorkerOptions options_;
  std::shared_ptr<pg::Patience> patience_;  // says when the database is out of reach
  int beat_wake_ = -1;   // an eventfd the heartbeat waits on besides its connection
  int claim_wake_ = -1;  // an eventfd stop() makes readable: the idle claim wait ends
  std::unique_ptr<pg::Connection> claim_conn_;
  std::unique_ptr<pg::Connection> beat_conn_;
  // Idle connections for completions: each pool thread takes one for its completion, so the
  // commits of a wave of attempts run side by side (PostgreSQL groups their WAL flushes)
  // instead of queueing behind one connection. At most `concurrency` are ever open.
  std::mutex done_mutex_;
  std::vector<std::unique_ptr<pg::Connection>> done_conns_;

  std::atomic<bool> stopping_{false};
  std::chrono::steady_clock::time_point stopped_at_{};  // guarded by mutex_
  std::mutex mutex_;
  std::condition_variable changed_;  // a slot freed, or stop
  int in_flight_ = 0;
  std::map<int64_t, int64_t> held_;         // attempt id -> fence, while this worker holds it
  std::map<int64_t, WorkerCall*> running_;  // attempt id -> its call, while invoke may run

  std::mutex folders_mutex_;
  std::map<std::string, std::unique_ptr<Folder>> folders_;
  std::mutex llm_mutex_;
  std::map<std::string, std::unique_ptr<llm::LlmService>> llm_by_run_;

  std::atomic<int64_t> completed_{0};
  std::atomic<int64_t> refused_{0};
};

}  // namespace oe::worker

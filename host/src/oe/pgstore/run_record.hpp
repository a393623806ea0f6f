// A run's row in oe_runs and the lock that lets one coordinator at a time run on a scope
// (docs/storage.md): the PostgreSQL counterpart of state::StoreLock and of runs/<id>.pin.json.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/pg/connection.hpp"
#include "oe/pgstore/fence.hpp"

namespace oe::pgstore {

struct RunInfo {
  std::string run_id;
  std::string scope;
  std::string experience;  // the experience file, as the coordinator named it
  std::string chain_id;
  std::string resumed_from;
  std::string status;       // running, success, partial, failed, interrupted
  std::string coordinator;  // host:pid
  std::string started_at;   // ISO-8601 UTC
  std::string finished_at;  // empty while running
  std::optional<Json> pin;  // run::definitionPin of the run
  // Filled by listRuns: the row says running and a coordinator holds the scope's lock now (the
  // newest such row of the scope). A row left running by a killed coordinator is not live.
  bool live = false;
  // Filled by listRuns, from the run's lines in oe_events: node calls that ran, replayed from
  // the cache (node.finished with "cached":true), failed, skipped.
  size_t ran = 0;
  size_t cached = 0;
  size_t failed = 0;
  size_t skipped = 0;
  size_t cancelled = 0;  // node.failed with "cancelled":true: stopped by the run, not failed
};

// How often RunRecord::guard looks at the lock's session: the longest a run goes on, after a
// server restart, before it holds the scope again (or stops).
inline constexpr std::chrono::milliseconds kLockCheckInterval{1000};

// Holds a session-level advisory lock on a hash of the scope for the run's life, on a
// connection of its own: a second coordinator on the same scope is refused, and a killed
// coordinator's session ends, so its lock goes with it (TCP keepalives on both sides end the
// session of a coordinator whose host vanished within a minute). Taking the scope also bumps
// its epoch (oe_scopes): the run's fence, which each of its writes checks, so that a
// coordinator that lost its lock's session, and its scope to another meanwhile, writes nothing
// more.
class RunRecord {
 public:
  // Takes the lock (refused, naming the run that holds it, when another coordinator has it),
  // checks that the session holds it (a transaction-mode pooler would not keep it), bumps the
  // scope's epoch and inserts the run's row (status running, coordinator host:pid, the epoch).
  // With `on_wait` (--wait), a scope another coordinator holds is waited for instead: `on_wait`
  // is called once with who holds it, then the lock is tried again until it is free.
  // `patience`: shared with the run's other connections (lost ones are waited for until it is
  // interrupted); null: a lost connection is retried for `retry_for`.
  static Result<std::unique_ptr<RunRecord>> begin(
      const std::string& url, RunInfo info, std::chrono::milliseconds retry_for,
      const std::function<void(const std::string& holder)>& on_wait = {},
      std::shared_ptr<pg::Patience> patience = nullptr);

  RunRecord(std::unique_ptr<pg::Connection> conn, RunInfo info, int64_t epoch,
            std::shared_ptr<pg::Patience> patience);
  ~RunRecord();  // stops the guard; the connection ends: the lock goes

  // Records the run's definition pin (taken after the lock, once the run is prepared).
  Result<void> setPin(const Json& pin);

  // The scope's epoch this run took, for its state, cache and event writers.
  [[nodiscard]] const std::shared_ptr<ScopeFence>& fence() const { return fence_; }

  // Watches the lock's session on a thread of its own, every `every`. When the session is gone
  // (a server restart, a connection cut), it reconnects and takes the scope's lock again, then
  // checks that the scope's epoch is still the run's and that no other run of the scope
  // started meanwhile. When another coordinator holds the lock by then, or took the scope while
  // it was free, or the session no longer holds the lock (a pooler), it calls `lost` once with
  // what happened (the run stops: two coordinators must not write one state) and watches no
  // more. A write the fence refuses calls `lost` too.
  void guard(std::chrono::milliseconds every, std::function<void(std::string)> lost);
  // Stops the guard (waiting for a `lost` call in progress); finish() and the destructor do.
  void stopGuard();

  // Stops the guard, then sets the row's status and finished_at (reconnecting if the server
  // restarted meanwhile).
  Result<void> finish(std::string_view status);
  // After finish(): true when the record's session was replaced and the lock not taken again
  // (no guard, or the session went after its last look), so the scope's lock was not held
  // from then on: another coordinator could have started on the scope meanwhile. The run
  // reports it as a warning.
  [[nodiscard]] bool lostLock() const { return conn_->backendPid() != locked_pid_; }
  const RunInfo& info() const { return info_; }
  pg::Connection& connection() { return *conn_; }

 private:
  // On the guard's thread, with mutex_ held: an error when the lock could not be kept.
  std::optional<std::string> keepLock();

  std::mutex mutex_;  // conn_ and locked_pid_ while the guard runs
  std::unique_ptr<pg::Connection> conn_;
  RunInfo info_;
  std::shared_ptr<ScopeFence> fence_;
  int locked_pid_ = 0;  // the server session that holds the scope's lock
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread guard_;
};

// Takes the scope's advisory lock on `conn` (held until the session ends) and the scope itself
// (its epoch bumped: a coordinator that lost its lock's session writes nothing more); an error
// naming the run that holds it, and what to do, when another coordinator has it.
Result<void> holdScope(pg::Connection& conn, const std::string& scope);
// Bumps the scope's epoch for `holder` (a run id, or what an oe command is doing); the new epoch.
// The caller holds the scope's lock.
Result<int64_t> takeScope(pg::Connection& conn, const std::string& scope,
                          const std::string& holder);
// An error when `conn`'s server session does not hold the scope's lock after taking it: a
// pooler in transaction mode (PgBouncer's pool_mode = transaction) between oe and PostgreSQL
// hands each statement to any server session, which breaks session locks.
Result<void> checkSessionHoldsScope(pg::Connection& conn, const std::string& scope);
// The same without the message: false when another session holds it.
Result<bool> tryHoldScope(pg::Connection& conn, const std::string& scope);
// Who holds the scope: "run <id> (coordinator host:pid, started ...)", or "another run".
std::string scopeHolder(pg::Connection& conn, const std::string& scope);

// The run `id_or_prefix` (a full id or a unique prefix); `scope` empty = any scope. An error
// names what matched (none, several).
Result<RunInfo> findRun(pg::Connection& conn, const std::string& id_or_prefix,
                        const std::string& scope);
// The runs of `scope`, oldest first, with their node counts.
Result<std::vector<RunInfo>> listRuns(pg::Connection& conn, const std::string& scope);

// `host:pid` of this process.
std::string coordinatorName();

}  // namespace oe::pgstore

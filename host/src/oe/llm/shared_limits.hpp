// runtime.limits and runtime.budget counted in PostgreSQL (tables oe_limit_slots, oe_budget and
// oe_budget_holds of pg/schema.cpp), so that every process serving one run (`oe worker`s on many
// machines, the coordinator) stays under the same limits and budget (docs/llm.md, "Limits and
// budget across workers"). A call in flight is a row its holder renews; a killed holder's rows
// lapse after `ttl`. No transaction stays open while a call waits for room.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/llm/ledger.hpp"
#include "oe/llm/rate_limiter.hpp"
#include "oe/pg/connection.hpp"

namespace oe::llm {

class SharedLimits final : public SharedCounters, public SharedBudget {
 public:
  struct Options {
    // How long a call's slot or hold outlives its holder's last renewal; renewed every ttl/3.
    std::chrono::milliseconds ttl{30000};
    // How long a statement keeps retrying while the server is away (a restart, a failover).
    std::chrono::milliseconds retry_for{10000};
    std::string holder;  // this process's name in the rows; empty: host:pid:random
  };

  // Connects to `url`, brings its schema up to date and starts the renewal thread. `scope`: the
  // run's chain id; `prior`: what the chain spent before shared counting began (the first
  // process of the chain records it, later ones find the row).
  static Result<std::unique_ptr<SharedLimits>> open(const std::string& url, std::string scope,
                                                    const Usage& prior, Options options);
  static Result<std::unique_ptr<SharedLimits>> open(const std::string& url, std::string scope,
                                                    const Usage& prior) {
    return open(url, std::move(scope), prior, Options{});
  }
  ~SharedLimits() override;
  SharedLimits(const SharedLimits&) = delete;
  SharedLimits& operator=(const SharedLimits&) = delete;

  // SharedCounters
  Result<Taken> take(const std::vector<Bucket>& buckets, int64_t tokens) override;
  void release(const std::vector<int64_t>& slots, int64_t actual_tokens) override;
  void onRoom(std::function<void()> wake) override;

  // SharedBudget
  Result<Hold> reserve(const Budget& budget, int64_t tokens, double cost_usd) override;
  Result<void> settle(int64_t id, const Usage& used) override;
  Result<void> cancel(int64_t id) override;
  Result<Totals> totals() override;

  [[nodiscard]] const std::string& holder() const { return options_.holder; }

 private:
  SharedLimits(std::string url, std::string scope, Options options);

  // A connection for one statement or transaction on the calling thread: libpq connections are
  // not thread-safe, and LlmService is called from every worker thread. Idle ones are kept.
  Result<std::unique_ptr<pg::Connection>> borrow();
  void giveBack(std::unique_ptr<pg::Connection> conn);
  template <class T>
  Result<T> withConnection(const std::function<Result<T>(pg::Connection&)>& work);
  // `error` of the database, saying which counters and which store.
  [[nodiscard]] Error failure(std::string_view what, const Error& error) const;
  // `work` in one transaction (pg::Connection::transaction: re-run after a lost connection).
  Result<void> inTransaction(const std::function<Result<void>(pg::Connection&)>& work);

  // The renewal thread: renews this holder's rows every ttl/3 and, between renewals, listens
  // for another process's release to wake the waiters.
  void renewLoop(std::unique_ptr<pg::Connection> conn);

  std::string url_;
  std::string scope_;
  std::string channel_;  // LISTEN/NOTIFY channel of the scope's releases
  Options options_;

  std::mutex pool_mutex_;
  std::vector<std::unique_ptr<pg::Connection>> idle_;

  // The rows this process holds, which the renewal thread keeps alive: a row whose id was lost
  // (a COMMIT whose answer never came) is not renewed and lapses.
  std::mutex live_mutex_;
  std::set<int64_t> live_slots_;
  std::set<int64_t> live_holds_;

  std::mutex wake_mutex_;
  std::function<void()> wake_;

  std::mutex stop_mutex_;
  bool stop_ = false;
  std::thread renewer_;
};

}  // namespace oe::llm

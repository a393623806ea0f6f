// The scope's epoch a coordinator holds (docs/storage.md, "Runs, and one coordinator per
// scope"): each process that takes a scope bumps its epoch in oe_scopes, and every state, mark,
// cache and event write of a run checks, in its own statement, that the epoch is still the one
// it took. A coordinator that lost its scope to another (its lock's session died and another
// took the lock in the gap) writes nothing more, and is told so at its first write.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "oe/pg/connection.hpp"

namespace oe::pgstore {

class ScopeFence {
 public:
  ScopeFence(std::string scope, int64_t epoch, std::shared_ptr<pg::Patience> patience)
      : scope_(std::move(scope)), epoch_(epoch), patience_(std::move(patience)) {}

  [[nodiscard]] const std::string& scope() const { return scope_; }
  [[nodiscard]] int64_t epoch() const { return epoch_; }
  // The run's Patience: its connections wait for a lost database until the run is stopped.
  [[nodiscard]] const std::shared_ptr<pg::Patience>& patience() const { return patience_; }

  // SQL true while `$scope_param`'s epoch is `$epoch_param` (0: no fence), locking the scope's
  // row in share mode until the statement's transaction ends, so a coordinator taking the
  // scope (an UPDATE of that row) waits for a write under way and the write after it sees the
  // new epoch.
  [[nodiscard]] static std::string condition(int scope_param, int epoch_param);

  // A write found the epoch moved: calls the handler (once) and returns the error to report.
  std::string lost();
  // Who is told (the run, which stops); a loss before it was set is told at once.
  void onLost(std::function<void(std::string)> handler);

  // The error of a fenced write, for the scope `scope`.
  [[nodiscard]] static std::string message(const std::string& scope);

 private:
  std::string scope_;
  int64_t epoch_;
  std::shared_ptr<pg::Patience> patience_;
  std::mutex mutex_;
  std::function<void(std::string)> handler_;
  bool lost_ = false;
  bool told_ = false;
};

// The epoch of `fence`, or 0 (no fence) for a component opened without one.
[[nodiscard]] inline int64_t epochOf(const std::shared_ptr<ScopeFence>& fence) {
  return fence ? fence->epoch() : 0;
}

}  // namespace oe::pgstore

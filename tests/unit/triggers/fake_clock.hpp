// Clocks for the scheduler's tests: one the test moves by hand, and the real one that says when
// the scheduler waits on it. Both let a test wait for "the loop is waiting (until D)" on a
// condition variable, bounded by a generous real-time limit that only a hang reaches.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "oe/triggers/scheduler.hpp"

namespace oe::triggers::testing {

// Records each wait of the scheduler; the base of both clocks.
class WaitProbe {
 public:
  bool waitForWaiter(size_t count) {
    std::unique_lock lock(probe_mutex_);
    return probe_cv_.wait_for(lock, std::chrono::seconds(20), [&] { return waits_ >= count; });
  }
  bool waitForDeadline(Clock::TimePoint deadline) {
    std::unique_lock lock(probe_mutex_);
    return probe_cv_.wait_for(lock, std::chrono::seconds(20),
                              [&] { return waiting_ && last_deadline_ == deadline; });
  }
  Clock::TimePoint lastDeadline() const {
    std::lock_guard lock(probe_mutex_);
    return last_deadline_;
  }

 protected:
  void entered(Clock::TimePoint deadline) {
    std::lock_guard lock(probe_mutex_);
    ++waits_;
    waiting_ = true;
    last_deadline_ = deadline;
    probe_cv_.notify_all();
  }
  void left() {
    std::lock_guard lock(probe_mutex_);
    waiting_ = false;
  }

 private:
  mutable std::mutex probe_mutex_;
  std::condition_variable probe_cv_;
  size_t waits_ = 0;
  bool waiting_ = false;
  Clock::TimePoint last_deadline_{};
};

// Time stands still until set(); the scheduler's wait ends when its predicate holds or the set
// time reaches the deadline (the test calls Scheduler::wake() after set()).
class FakeClock final : public Clock, public WaitProbe {
 public:
  [[nodiscard]] TimePoint now() const override {
    std::lock_guard lock(mutex_);
    return now_;
  }
  void set(TimePoint t) {
    std::lock_guard lock(mutex_);
    now_ = t;
  }
  void waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 TimePoint deadline, const std::function<bool()>& done) override {
    entered(deadline);
    cv.wait(lock, [&] { return done() || now() >= deadline; });
    left();
  }

 private:
  mutable std::mutex mutex_;
  TimePoint now_{};
};

// The system clock, probed.
class ProbedSystemClock final : public Clock, public WaitProbe {
 public:
  [[nodiscard]] TimePoint now() const override { return std::chrono::system_clock::now(); }
  void waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 TimePoint deadline, const std::function<bool()>& done) override {
    entered(deadline);
    cv.wait_until(lock, deadline, done);
    left();
  }
};

}  // namespace oe::triggers::testing

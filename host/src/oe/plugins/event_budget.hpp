// The caps on what one plugin call writes to its run's log through the host table (emit_event,
// and log, whose lines are node.log events too): a size per event and a rate, as token buckets
// for the count and the bytes. A plugin in a loop cannot fill the disk through the run log; a
// plugin that reports progress as it should never meets them (docs/abi.md, "Events").
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace oe::plugins {

struct EventLimits {
  size_t max_event_bytes = size_t{64} << 10;  // one event's fields, or one log line
  double burst_events = 1000;                 // in a burst, then ...
  double events_per_second = 100;             // ... on average
  double burst_bytes = double(size_t{1} << 20);
  double bytes_per_second = double(size_t{256} << 10);
};

class EventBudget {
 public:
  using Clock = std::chrono::steady_clock;
  using Limits = EventLimits;

  enum class Verdict { kAdmitted, kTooLarge, kTooFast };

  explicit EventBudget(Limits limits = Limits(), Clock::time_point now = Clock::now())
      : limits_(limits) {
    reset(now);
  }

  // A fresh budget, for the next call.
  void reset(Clock::time_point now = Clock::now());

  // Whether an event (or line) of `bytes` may be written now; a refusal costs nothing.
  Verdict admit(size_t bytes, Clock::time_point now = Clock::now());

  // The refusals since reset; and, once per reset, true at the first (so its cause is logged
  // once rather than once per refusal, which would flood the log the caps protect).
  [[nodiscard]] uint64_t refused() const;
  [[nodiscard]] bool firstRefusal();

  [[nodiscard]] const Limits& limits() const { return limits_; }

 private:
  Limits limits_;
  mutable std::mutex mutex_;
  double events_ = 0;
  double bytes_ = 0;
  Clock::time_point last_{};
  uint64_t refused_ = 0;
  bool reported_ = false;
};

}  // namespace oe::plugins

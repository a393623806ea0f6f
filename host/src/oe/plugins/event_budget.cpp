// See event_budget.hpp.
#include "oe/plugins/event_budget.hpp"

#include <algorithm>

namespace oe::plugins {

void EventBudget::reset(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  events_ = limits_.burst_events;
  bytes_ = limits_.burst_bytes;
  last_ = now;
  refused_ = 0;
  reported_ = false;
}

EventBudget::Verdict EventBudget::admit(size_t bytes, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (bytes > limits_.max_event_bytes) {
    ++refused_;
    return Verdict::kTooLarge;
  }
  if (now > last_) {
    const double seconds = std::chrono::duration<double>(now - last_).count();
    events_ = std::min(limits_.burst_events, events_ + seconds * limits_.events_per_second);
    bytes_ = std::min(limits_.burst_bytes, bytes_ + seconds * limits_.bytes_per_second);
    last_ = now;
  }
  const auto size = static_cast<double>(bytes);
  if (events_ < 1 || bytes_ < size) {
    ++refused_;
    return Verdict::kTooFast;
  }
  events_ -= 1;
  bytes_ -= size;
  return Verdict::kAdmitted;
}

uint64_t EventBudget::refused() const {
  std::lock_guard lock(mutex_);
  return refused_;
}

bool EventBudget::firstRefusal() {
  std::lock_guard lock(mutex_);
  if (reported_ || refused_ == 0) {
    return false;
  }
  reported_ = true;
  return true;
}

}  // namespace oe::plugins

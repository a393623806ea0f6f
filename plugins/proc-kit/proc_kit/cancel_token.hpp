// CancelToken: how one invocation learns it should stop, from kind.cancel (any thread) or
// from the host's is_cancelled, and how the invocation wakes itself up when that happens.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <utility>

namespace oe::prockit {

class CancelToken {
 public:
  // host_poll: the host's is_cancelled for this call; cheap, called from the waiting thread.
  explicit CancelToken(std::function<bool()> host_poll) : host_poll_(std::move(host_poll)) {}

  // [thread-safe] Marks the call cancelled and runs the waker, if one is set.
  void cancel() noexcept {
    flag_.store(true, std::memory_order_release);
    std::lock_guard lock(mutex_);
    if (waker_) {
      waker_();
    }
  }

  // True once cancel() ran or the host says the call should stop.
  [[nodiscard]] bool requested() const {
    if (flag_.load(std::memory_order_acquire)) {
      return true;
    }
    if (host_poll_ && host_poll_()) {
      flag_.store(true, std::memory_order_release);
      return true;
    }
    return false;
  }

  // Installs what cancel() does to interrupt a blocking wait (signal a child, notify a waiter).
  // Runs it at once when the call is already cancelled.
  void setWaker(std::function<void()> waker) {
    std::lock_guard lock(mutex_);
    waker_ = std::move(waker);
    if (flag_.load(std::memory_order_acquire) && waker_) {
      waker_();
    }
  }

  // Removes the waker; after this returns, cancel() no longer touches what it referred to.
  void clearWaker() {
    std::lock_guard lock(mutex_);
    waker_ = nullptr;
  }

 private:
  std::function<bool()> host_poll_;
  mutable std::atomic<bool> flag_{false};
  std::mutex mutex_;
  std::function<void()> waker_;
};

}  // namespace oe::prockit

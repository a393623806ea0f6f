// CancelToken: how one invocation learns it should stop, from kind.cancel (any thread) or
// from the host's is_cancelled, and how the invocation wakes itself up when that happens.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <unordered_map>
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

// The invocations of one node that are running now, by call context, so that kind.cancel (any
// thread, any call context) reaches the right token.
class CallRegistry {
 public:
  // [thread-safe] Cancels the invocation running under `call`, if any.
  void cancel(const void* call) noexcept {
    std::lock_guard lock(mutex_);
    if (auto it = active_.find(call); it != active_.end()) {
      it->second->cancel();
    }
  }

  // Makes `token` reachable under `call` for the scope's lifetime.
  class Scope {
   public:
    Scope(CallRegistry& registry, const void* call, CancelToken& token)
        : registry_(registry), call_(call) {
      std::lock_guard lock(registry_.mutex_);
      registry_.active_[call_] = &token;
    }
    ~Scope() {
      std::lock_guard lock(registry_.mutex_);
      registry_.active_.erase(call_);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    CallRegistry& registry_;
    const void* call_;
  };

 private:
  std::mutex mutex_;
  std::unordered_map<const void*, CancelToken*> active_;
};

}  // namespace oe::prockit

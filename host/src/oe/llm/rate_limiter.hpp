// `runtime.limits` enforcement: requests in flight, requests per minute and tokens per minute,
// per provider and per model, shared by every node of a run. A call waits (on its worker
// thread) until every limit that applies to it has room, then takes its share of all of them at
// once, so two limits can never deadlock each other. With SharedCounters, the counters live in a
// database shared by every process of the run (shared_limits.hpp) instead of in this object.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/llm/settings.hpp"

namespace oe::llm {

// runtime.limits counters held outside the process, for limits that several processes share.
// [thread-safe, blocking: each call is a few database round trips]
class SharedCounters {
 public:
  virtual ~SharedCounters() = default;
  struct Bucket {
    std::string_view name;  // "runtime.limits.openai", as RateLimiter names it
    const Limit* limit = nullptr;
  };
  struct Taken {
    bool granted = false;
    std::vector<int64_t> slots;  // what release() gives back, when granted
    // When not granted and a per-minute window is full: how long until its oldest call leaves.
    std::optional<std::chrono::milliseconds> retry_in;
  };
  // Takes a share of every bucket at once when each has room for one more call of `tokens`.
  virtual Result<Taken> take(const std::vector<Bucket>& buckets, int64_t tokens) = 0;
  // Ends the calls of `slots`; `actual_tokens` replaces their estimate in the windows.
  virtual void release(const std::vector<int64_t>& slots, int64_t actual_tokens) = 0;
  // `wake` is called (from any thread) when another process may have freed room.
  virtual void onRoom(std::function<void()> wake) = 0;
};

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kWindow{60};

  // `shared` (not owned, outlives this; may be null): where the counters live instead.
  explicit RateLimiter(const std::map<std::string, ProviderLimits, std::less<>>& limits,
                       SharedCounters* shared = nullptr);
  ~RateLimiter();
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  // What a granted call holds; give it back with release().
  struct Ticket {
    std::vector<size_t> buckets;
    int64_t tokens = 0;                 // the estimate counted against tokens_per_minute
    uint64_t id = 0;                    // finds the token entries to correct at release
    bool waited = false;                // the call had to wait for room
    std::vector<int64_t> shared_slots;  // SharedCounters' rows, with shared counters
  };

  // Decides without blocking: a ticket when every bucket of (provider, model) has room at `now`,
  // else the time at which room may appear (when the oldest request of a full minute window
  // leaves it; a full max_in_flight bucket frees on a release and has no such time: nullopt).
  struct Decision {
    std::optional<Ticket> ticket;
    std::optional<Clock::time_point> retry_at;
  };
  Decision tryAcquire(std::string_view provider, std::string_view model, int64_t tokens,
                      Clock::time_point now);

  // Blocks until granted, or returns nullopt when `cancelled` turns true (checked every 50 ms).
  // `on_wait` is called once, before the first wait, with the name of the full limit.
  std::optional<Ticket> acquire(std::string_view provider, std::string_view model,
                                int64_t tokens, const std::function<bool()>& cancelled,
                                const std::function<void(const std::string&)>& on_wait);

  // Frees the in-flight slots and replaces the token estimate by what the call really used.
  void release(const Ticket& ticket, int64_t actual_tokens);

  // True when some limit applies to (provider, model).
  [[nodiscard]] bool limits(std::string_view provider, std::string_view model) const;

 private:
  struct Bucket {
    std::string name{};  // "runtime.limits.openai" or "runtime.limits.openai.models.gpt-4o"
    Limit limit{};
    int in_flight = 0;
    std::deque<Clock::time_point> starts{};  // requests in the last window
    std::deque<std::pair<Clock::time_point, std::pair<uint64_t, int64_t>>> tokens{};  // (id, n)
    int64_t tokens_in_window = 0;
  };
  void expire(Bucket& bucket, Clock::time_point now);
  std::vector<size_t> bucketsFor(std::string_view provider, std::string_view model) const;
  Decision tryAcquireShared(const std::vector<size_t>& ids, int64_t tokens, Clock::time_point now);

  mutable std::mutex mutex_;
  std::condition_variable room_;
  std::vector<Bucket> buckets_;
  std::map<std::string, size_t, std::less<>> provider_index_;            // provider -> bucket
  std::map<std::string, size_t, std::less<>> model_index_;               // "p\x1fmodel" -> bucket
  uint64_t next_id_ = 1;
  SharedCounters* shared_ = nullptr;
};

}  // namespace oe::llm

// Shared per-provider and per-model limits; see rate_limiter.hpp.
#include "oe/llm/rate_limiter.hpp"

#include <algorithm>

namespace oe::llm {
namespace {

std::string modelKey(std::string_view provider, std::string_view model) {
  std::string key(provider);
  key += '\x1f';
  key += model;
  return key;
}

}  // namespace

RateLimiter::RateLimiter(const std::map<std::string, ProviderLimits, std::less<>>& limits,
                         SharedCounters* shared)
    : shared_(shared) {
  for (const auto& [provider, entry] : limits) {
    provider_index_[provider] = buckets_.size();
    buckets_.push_back(Bucket{.name = "runtime.limits." + provider, .limit = entry.limit});
    for (const auto& [model, limit] : entry.models) {
      model_index_[modelKey(provider, model)] = buckets_.size();
      buckets_.push_back(
          Bucket{.name = "runtime.limits." + provider + ".models." + model, .limit = limit});
    }
  }
  if (shared_ != nullptr) {
    shared_->onRoom([this] { room_.notify_all(); });
  }
}

RateLimiter::~RateLimiter() {
  if (shared_ != nullptr) {
    shared_->onRoom(nullptr);
  }
}

std::vector<size_t> RateLimiter::bucketsFor(std::string_view provider,
                                            std::string_view model) const {
  std::vector<size_t> found;
  if (auto it = provider_index_.find(provider); it != provider_index_.end()) {
    found.push_back(it->second);
  }
  if (auto it = model_index_.find(modelKey(provider, model)); it != model_index_.end()) {
    found.push_back(it->second);
  }
  return found;
}

bool RateLimiter::limits(std::string_view provider, std::string_view model) const {
  return !bucketsFor(provider, model).empty();
}

void RateLimiter::expire(Bucket& bucket, Clock::time_point now) {
  const auto horizon = now - kWindow;
  while (!bucket.starts.empty() && bucket.starts.front() <= horizon) {
    bucket.starts.pop_front();
  }
  while (!bucket.tokens.empty() && bucket.tokens.front().first <= horizon) {
    bucket.tokens_in_window -= bucket.tokens.front().second.second;
    bucket.tokens.pop_front();
  }
}

RateLimiter::Decision RateLimiter::tryAcquire(std::string_view provider, std::string_view model,
                                              int64_t tokens, Clock::time_point now) {
  std::vector<size_t> ids = bucketsFor(provider, model);
  if (shared_ != nullptr && !ids.empty()) {
    return tryAcquireShared(ids, tokens, now);
  }
  std::lock_guard lock(mutex_);
  Decision decision;
  bool room = true;
  for (size_t i : ids) {
    Bucket& b = buckets_[i];
    expire(b, now);
    const Limit& l = b.limit;
    if (l.max_in_flight && b.in_flight >= *l.max_in_flight) {
      room = false;  // frees on a release, not with time
    }
    if (l.requests_per_minute && std::ssize(b.starts) >= *l.requests_per_minute) {
      room = false;
      const auto at = b.starts.front() + kWindow;
      decision.retry_at = decision.retry_at ? std::min(*decision.retry_at, at) : at;
    }
    // A call bigger than the whole minute's allowance still runs, alone in its window.
    if (l.tokens_per_minute && b.tokens_in_window > 0 &&
        b.tokens_in_window + tokens > *l.tokens_per_minute) {
      room = false;
      const auto at = b.tokens.front().first + kWindow;
      decision.retry_at = decision.retry_at ? std::min(*decision.retry_at, at) : at;
    }
  }
  if (!room) {
    return decision;
  }
  Ticket ticket;
  ticket.id = next_id_++;
  ticket.tokens = tokens;
  for (size_t i : ids) {
    Bucket& b = buckets_[i];
    ++b.in_flight;
    b.starts.push_back(now);
    b.tokens.push_back({now, {ticket.id, tokens}});
    b.tokens_in_window += tokens;
  }
  ticket.buckets = std::move(ids);
  decision.ticket = std::move(ticket);
  decision.retry_at.reset();
  return decision;
}

RateLimiter::Decision RateLimiter::tryAcquireShared(const std::vector<size_t>& ids, int64_t tokens,
                                                    Clock::time_point now) {
  // Only the counters are elsewhere: the buckets' names and limits never change after
  // construction, so they are read without the mutex.
  std::vector<SharedCounters::Bucket> wanted;
  wanted.reserve(ids.size());
  for (size_t i : ids) {
    wanted.push_back({buckets_[i].name, &buckets_[i].limit});
  }
  Decision decision;
  auto taken = shared_->take(wanted, tokens);
  if (!taken) {
    // The database is unreachable past the connection's own retries: wait as for a full
    // limit (a call must not pass a limit it could not check), and ask again shortly.
    decision.retry_at = now + std::chrono::seconds(1);
    return decision;
  }
  if (!taken->granted) {
    if (taken->retry_in) {
      decision.retry_at = now + *taken->retry_in;
    }
    return decision;
  }
  Ticket ticket;
  ticket.tokens = tokens;
  ticket.buckets = ids;
  ticket.shared_slots = std::move(taken->slots);
  decision.ticket = std::move(ticket);
  return decision;
}

std::optional<RateLimiter::Ticket> RateLimiter::acquire(
    std::string_view provider, std::string_view model, int64_t tokens,
    const std::function<bool()>& cancelled,
    const std::function<void(const std::string&)>& on_wait) {
  constexpr auto kPoll = std::chrono::milliseconds(50);
  // Shared counters are asked over the network: back off from 25 ms to 400 ms between asks (a
  // release anywhere wakes the waiters through SharedCounters::onRoom before that).
  auto shared_poll = std::chrono::milliseconds(25);
  bool waited = false;
  for (;;) {
    if (cancelled && cancelled()) {
      return std::nullopt;
    }
    Decision d = tryAcquire(provider, model, tokens, Clock::now());
    if (d.ticket) {
      d.ticket->waited = waited;
      return std::move(d.ticket);
    }
    if (!waited && on_wait) {
      std::string full;
      {
        std::lock_guard lock(mutex_);
        for (size_t i : bucketsFor(provider, model)) {
          full += (full.empty() ? "" : ", ") + buckets_[i].name;
        }
      }
      on_wait(full);
    }
    waited = true;
    std::unique_lock lock(mutex_);
    auto until = Clock::now() + (shared_ != nullptr ? shared_poll : kPoll);
    if (shared_ != nullptr) {
      shared_poll = std::min(shared_poll * 2, std::chrono::milliseconds(400));
    }
    if (d.retry_at && *d.retry_at < until) {
      until = *d.retry_at;
    }
    room_.wait_until(lock, until);
  }
}

void RateLimiter::release(const Ticket& ticket, int64_t actual_tokens) {
  if (shared_ != nullptr) {
    shared_->release(ticket.shared_slots, actual_tokens);
    room_.notify_all();
    return;
  }
  {
    std::lock_guard lock(mutex_);
    for (size_t i : ticket.buckets) {
      Bucket& b = buckets_[i];
      --b.in_flight;
      for (auto& entry : b.tokens) {
        if (entry.second.first == ticket.id) {
          b.tokens_in_window += actual_tokens - entry.second.second;
          entry.second.second = actual_tokens;
          break;
        }
      }
    }
  }
  room_.notify_all();
}

}  // namespace oe::llm

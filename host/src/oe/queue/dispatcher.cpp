// The coordinator's dispatcher (dispatcher.hpp): one thread, one connection, rounds of insert,
// cancel, collect and rescue, polling with backoff while nothing happens.
#include "oe/queue/dispatcher.hpp"

#include <oe/oe.h>

#include <algorithm>

#include "oe/pg/schema.hpp"

namespace oe::queue {

Result<std::unique_ptr<Dispatcher>> Dispatcher::start(const std::string& url, std::string run_id,
                                                      DispatcherOptions options) {
  auto conn = pg::Connection::open(
      url, {.retry_for = options.retry_for, .application_name = "oe run (dispatcher)"});
  if (!conn) {
    return conn.error();
  }
  if (auto migrated = pg::migrate(**conn); !migrated) {
    return migrated.error();
  }
  if (!options.resumes.empty()) {
    if (auto cancelled = AttemptQueue(**conn).cancelRun(options.resumes); !cancelled) {
      return cancelled.error();
    }
  }
  return std::unique_ptr<Dispatcher>(
      new Dispatcher(std::move(conn).value(), std::move(run_id), options));
}

Dispatcher::Dispatcher(std::unique_ptr<pg::Connection> conn, std::string run_id,
                       DispatcherOptions options)
    : conn_(std::move(conn)), queue_(*conn_), run_id_(std::move(run_id)), options_(options) {
  thread_ = std::thread([this] { loop(); });
}

Dispatcher::~Dispatcher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

uint64_t Dispatcher::submit(NewAttempt attempt, OnFinished on_finished) {
  uint64_t ticket = 0;
  {
    std::lock_guard lock(mutex_);
    ticket = next_ticket_++;
    to_submit_.emplace_back(ticket, std::move(attempt));
    callbacks_.emplace(ticket, std::move(on_finished));
  }
  wake_.notify_one();
  return ticket;
}

void Dispatcher::cancel(uint64_t ticket) {
  {
    std::lock_guard lock(mutex_);
    to_cancel_.push_back(ticket);
  }
  wake_.notify_one();
}

void Dispatcher::loop() {
  auto wait = options_.poll_min;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (stopping_) {
        break;
      }
    }
    const bool busy = round();
    wait = busy ? options_.poll_min : std::min(wait * 2, options_.poll_max);
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, wait,
                   [this] { return stopping_ || !to_submit_.empty() || !to_cancel_.empty(); });
  }
  // What the run left in the queue (it stopped before they were collected) is not worth a
  // worker's time any more.
  (void)queue_.cancelRun(run_id_);
}

bool Dispatcher::round() {
  std::vector<std::pair<uint64_t, NewAttempt>> submits;
  std::vector<uint64_t> cancels;
  {
    std::lock_guard lock(mutex_);
    submits.swap(to_submit_);
    cancels.swap(to_cancel_);
  }
  // A failed statement: a lost connection is re-opened and the round's work put back for the
  // next round; what cannot be done (no server within retry_for, a refused statement) fails
  // the attempts in flight, so the run ends instead of waiting for ever.
  auto trouble = [&](const Error& error) {
    if (conn_->lastFailure() == pg::Failure::kConnection && conn_->reconnect()) {
      std::lock_guard lock(mutex_);
      to_submit_.insert(to_submit_.begin(), std::make_move_iterator(submits.begin()),
                        std::make_move_iterator(submits.end()));
      to_cancel_.insert(to_cancel_.begin(), cancels.begin(), cancels.end());
      return;
    }
    failAll(error.message);
  };
  bool busy = !submits.empty() || !cancels.empty();
  if (!submits.empty()) {
    std::vector<NewAttempt> attempts;
    attempts.reserve(submits.size());
    for (const auto& [ticket, attempt] : submits) {
      attempts.push_back(attempt);
      attempts.back().seq = static_cast<int64_t>(ticket);  // a re-sent round adds nothing twice
    }
    auto ids = queue_.enqueue(attempts, /*notify=*/true);
    if (!ids) {
      trouble(ids.error());
      return true;
    }
    for (size_t i = 0; i < submits.size(); ++i) {
      ticket_of_[(*ids)[i]] = submits[i].first;
      id_of_[submits[i].first] = (*ids)[i];
    }
    submits.clear();
  }
  std::vector<std::pair<OnFinished, Finished>> ready;
  auto take = [&](uint64_t ticket, Finished finished) {
    std::lock_guard lock(mutex_);
    auto it = callbacks_.find(ticket);
    if (it != callbacks_.end()) {
      ready.emplace_back(std::move(it->second), std::move(finished));
      callbacks_.erase(it);
    }
  };
  for (size_t i = 0; i < cancels.size(); ++i) {
    auto id = id_of_.find(cancels[i]);
    if (id == id_of_.end()) {
      continue;  // already over
    }
    auto cancelled = queue_.cancel(id->second);
    if (!cancelled) {
      cancels.erase(cancels.begin(), cancels.begin() + static_cast<std::ptrdiff_t>(i));
      trouble(cancelled.error());
      return true;
    }
    if (*cancelled) {
      take(cancels[i], Finished{id->second, false, OE_CANCELLED, "", "cancelled", "", ""});
      ticket_of_.erase(id->second);
      id_of_.erase(id);
    }  // else it had finished: the collect below hands its result over
  }
  cancels.clear();
  auto finished = queue_.collect(run_id_);
  if (!finished) {
    trouble(finished.error());
    return true;
  }
  std::vector<int64_t> seen;
  for (Finished& f : *finished) {
    seen.push_back(f.id);
    auto ticket = ticket_of_.find(f.id);
    if (ticket == ticket_of_.end()) {
      // Already handed over (its mark was lost with a connection), cancelled meanwhile, or a
      // row an insert whose answer was lost left behind: nothing waits for it.
      continue;
    }
    id_of_.erase(ticket->second);
    take(ticket->second, std::move(f));
    ticket_of_.erase(ticket);
  }
  if (auto marked = queue_.markCollected(seen); !marked) {
    trouble(marked.error());  // read again next round, and ignored
  }
  busy = busy || !ready.empty();
  for (auto& [callback, result] : ready) {
    callback(result);
  }
  const auto now = std::chrono::steady_clock::now();
  if (now >= next_rescue_) {
    next_rescue_ = now + options_.rescue_every;
    if (auto rescued = queue_.rescueExpired(); !rescued) {
      trouble(rescued.error());
    }
  }
  return busy;
}

void Dispatcher::failAll(const std::string& message) {
  std::unordered_map<uint64_t, OnFinished> callbacks;
  {
    std::lock_guard lock(mutex_);
    callbacks.swap(callbacks_);
    to_submit_.clear();
    to_cancel_.clear();
  }
  ticket_of_.clear();
  id_of_.clear();
  for (auto& [ticket, callback] : callbacks) {
    callback(Finished{0, false, OE_UNAVAILABLE, "", message, "", ""});
  }
}

}  // namespace oe::queue

// The coordinator's dispatcher (dispatcher.hpp): one thread, one connection, rounds of insert,
// cancel, collect and rescue, polling with backoff while nothing happens.
#include "oe/queue/dispatcher.hpp"

#include <oe/oe.h>

#include <algorithm>

#include "oe/pg/schema.hpp"

namespace oe::queue {

namespace {

using Clock = std::chrono::steady_clock;

// A reconnect attempt while the database is away waits this long after a failure, doubling.
constexpr auto kBackoffMin = std::chrono::milliseconds(50);
constexpr auto kBackoffMax = std::chrono::milliseconds(2000);
// How long the run's end waits for the statement that cancels what it left in the queue.
constexpr auto kFinalTimeout = std::chrono::milliseconds(5000);

Finished cancellation(int64_t id, std::string why = "cancelled") {
  Finished f;
  f.id = id;
  f.ok = false;
  f.result_status = OE_CANCELLED;
  f.error = std::move(why);
  f.cancelled = true;
  return f;
}

}  // namespace

Result<std::unique_ptr<Dispatcher>> Dispatcher::start(const std::string& url, std::string run_id,
                                                      DispatcherOptions options) {
  auto patience = std::make_shared<pg::Patience>(options.say, options.report_every);
  pg::ConnectOptions connect = pg::retrying(options.retry_for, "oe run (dispatcher)");
  connect.reconnect_for = std::chrono::milliseconds(0);  // the loop retries, between rounds
  connect.patience = patience;
  connect.reply_timeout = pg::kReplyTimeout;
  auto conn = pg::Connection::open(url, std::move(connect));
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
  return std::unique_ptr<Dispatcher>(new Dispatcher(std::move(conn).value(), std::move(run_id),
                                                    std::move(options), std::move(patience)));
}

Dispatcher::Dispatcher(std::unique_ptr<pg::Connection> conn, std::string run_id,
                       DispatcherOptions options, std::shared_ptr<pg::Patience> patience)
    : conn_(std::move(conn)),
      queue_(*conn_),
      run_id_(std::move(run_id)),
      options_(std::move(options)),
      patience_(std::move(patience)) {
  thread_ = std::thread([this] { loop(); });
}

Dispatcher::~Dispatcher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  // A reconnect in progress ends now; a statement in flight gets a short grace.
  patience_->interrupt();
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
  auto backoff = kBackoffMin;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (stopping_) {
        break;
      }
    }
    if (lost_ || !conn_->healthy()) {
      // The database is away: what the run gave up is settled now (it may be stopping and
      // waiting for exactly that); then one connection attempt, and a wait that a cancel or
      // the end of the run cuts short.
      settleCancelsLocally();
      if (auto back = conn_->reconnect(std::chrono::milliseconds(0)); !back) {
        if (down_since_ == Clock::time_point{}) {
          down_since_ = Clock::now();
        }
        patience_->outage(
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - down_since_),
            "oe run (work queue)", back.error().message);
        std::unique_lock lock(mutex_);
        wake_.wait_for(lock, backoff, [this] { return stopping_ || !to_cancel_.empty(); });
        backoff = std::min(backoff * 2, kBackoffMax);
        continue;
      }
      lost_ = false;
      down_since_ = {};
      backoff = kBackoffMin;
    }
    const bool busy = round();
    wait = busy ? options_.poll_min : std::min(wait * 2, options_.poll_max);
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, wait,
                   [this] { return stopping_ || !to_submit_.empty() || !to_cancel_.empty(); });
  }
  // What the run left in the queue (it stopped before they were collected) is not worth a
  // worker's time any more; a database that does not answer soon is not waited for.
  settleCancelsLocally();
  if (!lost_ && conn_->healthy()) {
    conn_->setReplyTimeout(kFinalTimeout);
    (void)queue_.cancelRun(run_id_);
  }
}

void Dispatcher::settleCancelsLocally() {
  std::vector<std::pair<OnFinished, Finished>> ready;
  {
    std::lock_guard lock(mutex_);
    for (uint64_t ticket : to_cancel_) {
      auto callback = callbacks_.find(ticket);
      if (callback == callbacks_.end()) {
        continue;  // already over
      }
      int64_t id = 0;
      if (auto known = id_of_.find(ticket); known != id_of_.end()) {
        id = known->second;
        ticket_of_.erase(id);
        id_of_.erase(known);
      }
      // Not inserted yet: it never will be.
      to_submit_.erase(std::remove_if(to_submit_.begin(), to_submit_.end(),
                                      [ticket](const auto& s) { return s.first == ticket; }),
                       to_submit_.end());
      ready.emplace_back(std::move(callback->second),
                         cancellation(id, "cancelled (the work queue's database was out of reach: "
                                          "a worker may still run it; its result is ignored)"));
      callbacks_.erase(callback);
    }
    to_cancel_.clear();
  }
  for (auto& [callback, result] : ready) {
    callback(result);
  }
}

bool Dispatcher::round() {
  std::vector<std::pair<uint64_t, NewAttempt>> submits;
  std::vector<uint64_t> cancels;
  {
    std::lock_guard lock(mutex_);
    submits.swap(to_submit_);
    cancels.swap(to_cancel_);
  }
  // The callbacks this round took, run at its end whatever happened after they were taken: a
  // result taken from callbacks_ and not handed over would leave its call waiting for ever.
  std::vector<std::pair<OnFinished, Finished>> ready;
  auto take = [&](uint64_t ticket, Finished finished) {
    std::lock_guard lock(mutex_);
    auto it = callbacks_.find(ticket);
    if (it != callbacks_.end()) {
      ready.emplace_back(std::move(it->second), std::move(finished));
      callbacks_.erase(it);
    }
  };
  // A failed statement: a lost connection puts the round's work not done back for the next
  // round (the loop reconnects first); a refused statement (not the connection) fails the
  // attempts in flight, so the run ends instead of waiting for ever.
  auto trouble = [&](const Error& error, size_t cancels_done) {
    if (conn_->lastFailure() == pg::Failure::kConnection) {
      lost_ = true;
      std::lock_guard lock(mutex_);
      to_submit_.insert(to_submit_.begin(), std::make_move_iterator(submits.begin()),
                        std::make_move_iterator(submits.end()));
      to_cancel_.insert(to_cancel_.begin(),
                        cancels.begin() + static_cast<std::ptrdiff_t>(cancels_done),
                        cancels.end());
      return;
    }
    failAll(error.message);
  };
  const bool busy = !submits.empty() || !cancels.empty();
  auto work = [&]() -> bool {
    if (!submits.empty()) {
      std::vector<NewAttempt> attempts;
      attempts.reserve(submits.size());
      for (const auto& [ticket, attempt] : submits) {
        attempts.push_back(attempt);
        attempts.back().seq = static_cast<int64_t>(ticket);  // a re-sent round adds nothing twice
      }
      auto ids = queue_.enqueue(attempts, /*notify=*/true);
      if (!ids) {
        trouble(ids.error(), 0);
        return false;
      }
      for (size_t i = 0; i < submits.size(); ++i) {
        ticket_of_[(*ids)[i]] = submits[i].first;
        id_of_[submits[i].first] = (*ids)[i];
      }
      submits.clear();
    }
    for (size_t i = 0; i < cancels.size(); ++i) {
      auto id = id_of_.find(cancels[i]);
      if (id == id_of_.end()) {
        continue;  // already over
      }
      auto cancelled = queue_.cancel(id->second);
      if (!cancelled) {
        trouble(cancelled.error(), i);
        return false;
      }
      if (*cancelled) {
        take(cancels[i], cancellation(id->second));
        ticket_of_.erase(id->second);
        id_of_.erase(id);
      }  // else it had finished, or a first try of this cancel landed: collect hands it over
    }
    cancels.clear();
    auto finished = queue_.collect(run_id_);
    if (!finished) {
      trouble(finished.error(), 0);
      return false;
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
      take(ticket->second, f.cancelled ? cancellation(f.id) : std::move(f));
      ticket_of_.erase(ticket);
    }
    if (auto marked = queue_.markCollected(seen); !marked) {
      trouble(marked.error(), 0);  // read again next round, and ignored
      return false;
    }
    const auto now = Clock::now();
    if (now >= next_rescue_) {
      next_rescue_ = now + options_.rescue_every;
      if (auto rescued = queue_.rescueExpired(); !rescued) {
        trouble(rescued.error(), 0);
        return false;
      }
    }
    return true;
  };
  (void)work();
  for (auto& [callback, result] : ready) {
    callback(result);
  }
  return busy || !ready.empty();
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
    Finished failure;
    failure.result_status = OE_UNAVAILABLE;
    failure.error = message;
    callback(failure);
  }
}

}  // namespace oe::queue

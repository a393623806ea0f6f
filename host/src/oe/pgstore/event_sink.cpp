// EventSink: the event log's lines, batched into oe_events by one writer thread.
#include "oe/pgstore/event_sink.hpp"

#include "oe/pgstore/store_connection.hpp"

namespace oe::pgstore {

Result<std::unique_ptr<EventSink>> EventSink::open(const std::string& url, std::string run_id,
                                                   std::chrono::milliseconds retry_for) {
  auto conn = connect(url, retry_for, "oe events");
  if (!conn) {
    return conn.error();
  }
  return std::make_unique<EventSink>(std::move(*conn), std::move(run_id));
}

EventSink::EventSink(std::unique_ptr<pg::Connection> conn, std::string run_id)
    : conn_(std::move(conn)), run_id_(std::move(run_id)), writer_([this] { loop(); }) {}

EventSink::~EventSink() { (void)close(); }

void EventSink::attach(events::EventLog& log) {
  log_ = &log;
  subscription_ = log.subscribe([this](const events::Event& event) { add(event.line()); });
}

void EventSink::add(std::string_view line) {
  std::lock_guard lock(mutex_);
  queue_.emplace_back(line);
  if (queue_.size() >= kMaxBatch) {
    wake_.notify_one();
  }
}

std::optional<std::string> EventSink::close() {
  if (log_ != nullptr) {
    log_->unsubscribe(subscription_);
    log_ = nullptr;
  }
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  wake_.notify_one();
  if (writer_.joinable()) {
    writer_.join();
  }
  std::lock_guard lock(mutex_);
  return error_;
}

void EventSink::loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    // Woken early by a full batch or close(); otherwise a batch every kDelay.
    wake_.wait_for(lock, kDelay, [this] { return closing_ || queue_.size() >= kMaxBatch; });
    const bool last = closing_;
    std::vector<std::string> lines;
    lines.swap(queue_);
    if (!lines.empty()) {
      lock.unlock();
      const bool ok = insert(lines);
      lock.lock();
      if (!ok && !last) {
        // Back in front of what came meanwhile, for the next round.
        lines.insert(lines.end(), std::make_move_iterator(queue_.begin()),
                     std::make_move_iterator(queue_.end()));
        queue_.swap(lines);
      }
    }
    if (last && queue_.empty()) {
      return;
    }
    if (last) {
      continue;  // close() after a failed round: one more try of what is left, then done
    }
  }
}

bool EventSink::insert(const std::vector<std::string>& lines) {
  for (size_t start = 0; start < lines.size(); start += kMaxBatch) {
    const size_t end = std::min(lines.size(), start + kMaxBatch);
    std::string sql = "INSERT INTO oe_events (run_id, line) VALUES ";
    std::vector<pg::Param> params;
    params.reserve(end - start + 1);
    params.emplace_back(run_id_);
    for (size_t i = start; i < end; ++i) {
      sql += i == start ? "($1, $" : ", ($1, $";
      sql += std::to_string(i - start + 2);
      sql += ')';
      params.emplace_back(lines[i]);
    }
    auto r = execRetrying(*conn_, sql, params);
    if (!r) {
      std::lock_guard lock(mutex_);
      if (!error_) {
        error_ = "cannot copy the event lines of run " + run_id_ + " to " +
                 pg::redact(conn_->url()) + ": " + r.error().message;
      }
      return false;
    }
  }
  return true;
}

Result<events::LogReadResult> readRunEvents(pg::Connection& conn, const std::string& run_id) {
  auto rows = conn.exec("SELECT line FROM oe_events WHERE run_id = $1 ORDER BY id", {run_id});
  if (!rows) {
    return makeError("cannot read the events of run " + run_id + " from " + pg::redact(conn.url()) +
                     ": " + rows.error().message);
  }
  std::vector<std::string_view> lines;
  lines.reserve(static_cast<size_t>(rows->size()));
  for (int i = 0; i < rows->size(); ++i) {
    lines.push_back(rows->text(i, 0));
  }
  return events::parseEventLines("oe_events of run " + run_id, lines);
}

}  // namespace oe::pgstore

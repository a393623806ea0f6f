// EventSink: the event log's lines, batched into oe_events by one writer thread.
#include "oe/pgstore/event_sink.hpp"

#include "oe/pgstore/store_connection.hpp"

namespace oe::pgstore {

Result<std::unique_ptr<EventSink>> EventSink::open(const std::string& url, std::string run_id,
                                                   std::chrono::milliseconds retry_for,
                                                   std::shared_ptr<ScopeFence> fence) {
  auto conn = connect(url, retry_for, "oe events", fence ? fence->patience() : nullptr);
  if (!conn) {
    return conn.error();
  }
  return std::make_unique<EventSink>(std::move(*conn), std::move(run_id), std::move(fence));
}

EventSink::EventSink(std::unique_ptr<pg::Connection> conn, std::string run_id,
                     std::shared_ptr<ScopeFence> fence)
    : conn_(std::move(conn)),
      run_id_(std::move(run_id)),
      fence_(std::move(fence)),
      writer_([this] { loop(); }) {}

EventSink::~EventSink() { (void)close(); }

void EventSink::attach(events::EventLog& log) {
  log_ = &log;
  subscription_ = log.subscribe([this](const events::Event& event) { add(event.line()); });
}

void EventSink::add(std::string_view line) {
  std::lock_guard lock(mutex_);
  queue_.push_back(Line{next_seq_++, std::string(line)});
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
    std::vector<Line> lines;
    lines.swap(queue_);
    if (!lines.empty()) {
      lock.unlock();
      const bool ok = insert(lines);
      lock.lock();
      if (!ok && !last && !refused_) {
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

bool EventSink::insert(const std::vector<Line>& lines) {
  static const std::string sql =
      "WITH fence AS (SELECT " + ScopeFence::condition(4, 5) +
      " AS ok), ins AS (INSERT INTO oe_events (run_id, seq, line) SELECT $1, s, l FROM "
      "unnest($2::bigint[], $3::text[]) AS u(s, l) WHERE (SELECT ok FROM fence) "
      "ON CONFLICT (run_id, seq) DO NOTHING) SELECT ok FROM fence";
  const std::string scope = fence_ ? fence_->scope() : std::string();
  if (refused_) {
    return false;  // the run lost its scope: its lines are not the store's any more
  }
  for (size_t start = 0; start < lines.size(); start += kMaxBatch) {
    const size_t end = std::min(lines.size(), start + kMaxBatch);
    std::string seqs = "{";
    std::vector<std::string_view> texts;
    texts.reserve(end - start);
    for (size_t i = start; i < end; ++i) {
      seqs += (i == start ? "" : ",") + std::to_string(lines[i].seq);
      texts.emplace_back(lines[i].text);
    }
    seqs += '}';
    auto r = execRetrying(
        *conn_, sql,
        {run_id_, seqs,
         arrayLiteral(std::vector<std::optional<std::string_view>>(texts.begin(), texts.end())),
         scope, epochOf(fence_)});
    std::optional<std::string> failure;
    if (!r) {
      failure = r.error().message;
    } else if (r->size() != 1 || !r->boolean(0, 0)) {
      refused_ = true;
      failure = fence_ ? fence_->lost() : ScopeFence::message(scope);
    }
    if (failure) {
      std::lock_guard lock(mutex_);
      if (!error_) {
        error_ = "cannot copy the event lines of run " + run_id_ + " to " +
                 pg::redact(conn_->url()) + ": " + *failure;
      }
      return false;
    }
  }
  return true;
}

Result<events::LogReadResult> readRunEvents(pg::Connection& conn, const std::string& run_id) {
  // In the log's order: seq (older stores: none, and the insertion order).
  auto rows =
      conn.exec("SELECT line FROM oe_events WHERE run_id = $1 ORDER BY seq, id", {run_id});
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

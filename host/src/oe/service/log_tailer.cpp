// The run logs' tailers and their fan-out (log_tailer.hpp).
#include "oe/service/log_tailer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <system_error>

#include "oe/common/scoped_fd.hpp"
#include "oe/httpd/http.hpp"

namespace oe::service {
namespace {

namespace fs = std::filesystem;

// How much one poll reads from one log before it moves on to the others (a run that writes
// faster than that is read over several polls, the others are not held up).
constexpr size_t kPollBytes = size_t{4} * 1024 * 1024;
constexpr size_t kChunk = size_t{64} * 1024;
constexpr auto kListEvery = std::chrono::seconds(1);


std::string frameOf(const std::string& id, const std::string& text) {
  return httpd::sseFrame(id, "", text);
}

}  // namespace

bool isRunFinished(std::string_view line) { return line.starts_with(R"({"type":"run.finished")"); }

std::vector<LogLine> LogCursor::next(size_t max_bytes) { return read(UINT64_MAX, max_bytes); }

std::vector<LogLine> LogCursor::upTo(uint64_t end) { return read(end, SIZE_MAX); }

std::vector<LogLine> LogCursor::read(uint64_t end, size_t max_bytes) {
  std::vector<LogLine> lines;
  if (end <= offset_) {
    return lines;
  }
  const ScopedFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    return lines;
  }
  std::string pending;  // the start of a line whose end is in a later chunk
  std::array<char, kChunk> buffer{};
  uint64_t position = offset_;
  size_t taken = 0;
  while (position < end && taken < max_bytes) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), end - position));
    const ssize_t got = ::pread(fd.get(), buffer.data(), want, static_cast<off_t>(position));
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      break;
    }
    position += static_cast<uint64_t>(got);
    taken += static_cast<size_t>(got);
    size_t start = 0;
    for (size_t i = 0; i < static_cast<size_t>(got); ++i) {
      if (buffer[i] != '\n') {
        continue;
      }
      pending.append(buffer.data() + start, i - start);
      offset_ += pending.size() + 1;
      ++seq_;
      lines.push_back({seq_, std::move(pending)});
      pending.clear();
      start = i + 1;
    }
    pending.append(buffer.data() + start, static_cast<size_t>(got) - start);
  }
  return lines;  // `pending` (a torn or unfinished last line) is read again next time
}

LogHub::LogHub(std::chrono::milliseconds poll, std::function<void()> between_catch_up_and_join)
    : poll_(poll),
      between_catch_up_and_join_(std::move(between_catch_up_and_join)),
      thread_([this] { loop(); }) {}

LogHub::~LogHub() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void LogHub::subscribeRun(const fs::path& log, uint64_t after,
                          std::shared_ptr<httpd::EventSink> sink) {
  // Catch up from the file without holding anything the tailer needs: 1,000 clients joining a
  // long run read the file side by side while the live lines keep flowing to the others.
  LogCursor cursor(log);
  for (;;) {
    auto lines = cursor.next(kPollBytes);
    if (lines.empty()) {
      break;
    }
    for (const auto& line : lines) {
      if (line.seq > after && !sink->push(frameOf(std::to_string(line.seq), line.text))) {
        return;
      }
      if (isRunFinished(line.text)) {
        sink->finish();
        return;
      }
    }
  }
  if (between_catch_up_and_join_) {
    between_catch_up_and_join_();
  }
  {
    const std::lock_guard lock(mutex_);
    auto& tailer = runs_[log];
    if (!tailer) {
      tailer = std::make_shared<RunTailer>(cursor);
    }
    const std::lock_guard tail_lock(tailer->mutex);
    // The lines between where this catch-up stopped and where the tailer is: read from the file
    // under the tailer's lock, so the tailer cannot move on meanwhile (no gap), and the
    // subscriber's last_seq keeps the fan-out from giving it a line it has (no repeat).
    uint64_t last = std::max(after, cursor.seq());
    if (tailer->cursor.seq() > cursor.seq()) {
      for (const auto& line : cursor.upTo(tailer->cursor.offset())) {
        if (line.seq > after && !sink->push(frameOf(std::to_string(line.seq), line.text))) {
          return;
        }
        last = std::max(last, line.seq);
      }
    }
    if (tailer->finished) {
      sink->finish();
      return;
    }
    tailer->subscribers.push_back({std::move(sink), last});
  }
}

void LogHub::subscribeAll(std::function<std::vector<fs::path>()> runs_dirs,
                          std::shared_ptr<httpd::EventSink> sink) {
  {
    const std::lock_guard lock(all_mutex_);
    if (!all_) {
      all_ = std::make_unique<AllTailer>();
      all_->runs_dirs = std::move(runs_dirs);
      scanAll(/*from_end=*/true);
    }
    all_->subscribers.push_back(std::move(sink));
  }
}

size_t LogHub::runTailers() const {
  const std::lock_guard lock(mutex_);
  return runs_.size();
}

size_t LogHub::subscribers() const {
  size_t count = 0;
  {
    const std::lock_guard lock(mutex_);
    for (const auto& [log, tailer] : runs_) {
      const std::lock_guard tail_lock(tailer->mutex);
      count += tailer->subscribers.size();
    }
  }
  const std::lock_guard lock(all_mutex_);
  return count + (all_ ? all_->subscribers.size() : 0);
}

void LogHub::loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    // With nothing to tail a pass costs a map lookup; waking every poll_ rather than on a
    // notification keeps a subscriber that joins between two checks from being missed.
    const auto tailers = runs_;  // poll without holding mutex_, so subscribers may join
    lock.unlock();
    for (const auto& [log, tailer] : tailers) {
      pollRun(log, tailer);
    }
    pollAll();
    lock.lock();
    wake_.wait_for(lock, poll_, [this] { return stop_; });
  }
}

void LogHub::pollRun(const fs::path& log, const std::shared_ptr<RunTailer>& tailer) {
  {
    const std::lock_guard tail_lock(tailer->mutex);
    if (!tailer->finished) {
      for (const auto& line : tailer->cursor.next(kPollBytes)) {
        const std::string frame = frameOf(std::to_string(line.seq), line.text);
        for (auto& subscriber : tailer->subscribers) {
          if (subscriber.sink && line.seq > subscriber.last_seq) {
            if (!subscriber.sink->push(frame)) {
              subscriber.sink.reset();  // dropped: it reconnects with Last-Event-ID
            } else {
              subscriber.last_seq = line.seq;
            }
          }
        }
        if (isRunFinished(line.text)) {
          tailer->finished = true;
          break;
        }
      }
    }
    auto& subs = tailer->subscribers;
    for (auto& subscriber : subs) {
      if (subscriber.sink && tailer->finished) {
        subscriber.sink->finish();
        subscriber.sink.reset();
      } else if (subscriber.sink && !subscriber.sink->open()) {
        subscriber.sink.reset();
      }
    }
    subs.erase(std::remove_if(subs.begin(), subs.end(), [](const auto& s) { return !s.sink; }),
               subs.end());
  }
  // The last subscriber gone: the tailer goes, unless one joined meanwhile (checked under both
  // locks, in their order).
  const std::lock_guard lock(mutex_);
  const std::lock_guard tail_lock(tailer->mutex);
  auto it = runs_.find(log);
  if (it != runs_.end() && it->second == tailer && tailer->subscribers.empty()) {
    runs_.erase(it);
  }
}

void LogHub::scanAll(bool from_end) {
  all_->dirs = all_->runs_dirs ? all_->runs_dirs() : std::vector<fs::path>{};
  all_->listed = std::chrono::steady_clock::now();
  for (const auto& dir : all_->dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& path = it->path();
      if (path.extension() != ".jsonl" || all_->files.count(path) > 0) {
        continue;
      }
      FileTail tail{LogCursor(path), path.stem().string()};
      if (from_end) {
        // Lines written before the first subscriber came are not streamed, but the seq of the
        // next one must still be its line number.
        while (!tail.cursor.next(kPollBytes).empty()) {
        }
      }
      all_->files.emplace(path, std::move(tail));
    }
  }
}

void LogHub::pollAll() {
  const std::lock_guard lock(all_mutex_);
  if (!all_) {
    return;
  }
  auto& subs = all_->subscribers;
  if (std::chrono::steady_clock::now() - all_->listed >= kListEvery) {
    // A log that appeared since is a new run: streamed from its first line, so finding it up to
    // a second late loses nothing.
    scanAll(/*from_end=*/false);
  }
  for (auto& [path, tail] : all_->files) {
    for (const auto& line : tail.cursor.next(kPollBytes)) {
      const std::string frame = frameOf(tail.run_id + ":" + std::to_string(line.seq), line.text);
      for (auto& sink : subs) {
        if (sink && !sink->push(frame)) {
          sink.reset();
        }
      }
    }
  }
  for (auto& sink : subs) {
    if (sink && !sink->open()) {
      sink.reset();
    }
  }
  subs.erase(std::remove(subs.begin(), subs.end(), nullptr), subs.end());
  if (subs.empty()) {
    all_.reset();
  }
}

}  // namespace oe::service

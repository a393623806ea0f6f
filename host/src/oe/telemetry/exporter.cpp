// The batching OTLP/HTTP exporter thread.
#include "oe/telemetry/exporter.hpp"

#include "oe/common/json.hpp"
#include "oe/net/http_client.hpp"

namespace oe::telemetry {

Exporter::Exporter(ExporterOptions options)
    : options_(std::move(options)), thread_([this] { loop(); }) {}

Exporter::~Exporter() { shutdown(std::chrono::milliseconds{0}); }

void Exporter::submit(Span span) {
  std::lock_guard lock(mutex_);
  if (stopping_ || queue_.size() >= options_.max_queue) {
    ++stats_.dropped;
    return;
  }
  queue_.push_back(std::move(span));
  if (queue_.size() == options_.max_batch) {
    wake_.notify_one();
  }
}

bool Exporter::shutdown(std::chrono::milliseconds deadline) {
  {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    wake_.notify_one();
    const bool drained =
        idle_.wait_for(lock, deadline, [this] { return queue_.empty() && in_flight_ == 0; });
    if (!drained) {
      abandon_ = true;  // cancels the POST in progress within ~50 ms
    }
  }
  if (thread_.joinable()) {
    thread_.join();
  }
  std::lock_guard lock(mutex_);
  return stats_.dropped == 0 && stats_.failed == 0;
}

ExporterStats Exporter::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Exporter::loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait_for(lock, options_.schedule_delay,
                   [this] { return stopping_ || queue_.size() >= options_.max_batch; });
    if (abandon_) {
      stats_.failed += queue_.size();
      queue_.clear();
    }
    if (queue_.empty()) {
      idle_.notify_all();
      if (stopping_) {
        return;
      }
      continue;
    }
    std::vector<Span> batch;
    const size_t n = std::min(queue_.size(), options_.max_batch);
    batch.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    in_flight_ = n;
    lock.unlock();
    const std::string failure = send(batch);
    lock.lock();
    in_flight_ = 0;
    if (failure.empty()) {
      stats_.exported += n;
      continue;
    }
    stats_.failed += n;
    if (!warned_ && options_.warn) {
      warned_ = true;
      lock.unlock();  // the callback writes to a terminal: not under the lock submit() takes
      options_.warn(failure);
      lock.lock();
    }
  }
}

std::string Exporter::send(const std::vector<Span>& batch) {
  net::HttpRequest request;
  request.method = "POST";
  request.url = options_.url;
  request.headers = options_.headers;
  request.headers.emplace_back("Content-Type", "application/json");
  request.body = encodeTraces(options_.resource, options_.scope_version, batch);
  request.timeout = options_.timeout;
  request.stall_timeout = options_.timeout;
  request.max_response_bytes = size_t{1} << 20;
  const std::string what = "could not send " + std::to_string(batch.size()) +
                           " spans to the OTLP collector at " + options_.url + ": ";
  auto response = net::request(request, [this] { return abandon_.load(); });
  if (!response) {
    return what + response.error().message;
  }
  if (response->status < 200 || response->status >= 300) {
    return what + "HTTP " + std::to_string(response->status) + " " + response->body.substr(0, 200);
  }
  // OTLP's partial success: a 200 whose body says how many spans the collector rejected.
  const Json body = Json::parse(response->body, nullptr, false);
  if (body.is_object() && body.contains("partialSuccess") && body["partialSuccess"].is_object()) {
    const Json& partial = body["partialSuccess"];
    const Json rejected = partial.value("rejectedSpans", Json());
    if ((rejected.is_string() && rejected != "0") || (rejected.is_number() && rejected != 0)) {
      return "the OTLP collector at " + options_.url + " rejected " + rejected.dump() +
             " spans: " + partial.value("errorMessage", std::string());
    }
  }
  return {};
}

}  // namespace oe::telemetry

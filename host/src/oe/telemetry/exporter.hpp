// The span exporter: spans are queued by the run (never blocking it on the network) and sent in
// batches as OTLP/HTTP JSON by one background thread through the host's HTTP client. A queue
// that is full drops spans and counts them; a collector that is down or refuses costs a warning
// and the spans, never the run.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "oe/telemetry/otlp.hpp"

namespace oe::telemetry {

struct ExporterOptions {
  std::string url;  // e.g. http://localhost:4318/v1/traces
  std::vector<std::pair<std::string, std::string>> headers;
  Attributes resource;
  std::string scope_version;
  size_t max_queue = 8192;  // spans waiting to be sent; more are dropped (and counted)
  size_t max_batch = 512;   // spans per POST
  // A batch smaller than max_batch waits at most this long (OTEL_BSP_SCHEDULE_DELAY's role).
  std::chrono::milliseconds schedule_delay{2000};
  std::chrono::milliseconds timeout{10000};  // one POST, connect to last byte
  // Told about the first batch that could not be delivered (on the exporter thread); later
  // failures are only counted (stats()), so a collector that is down warns once, not per batch.
  std::function<void(const std::string& message)> warn;
};

struct ExporterStats {
  uint64_t exported = 0;  // accepted by the collector
  uint64_t dropped = 0;   // the queue was full
  uint64_t failed = 0;    // in a batch the collector refused or never got, or abandoned
};

class Exporter {
 public:
  explicit Exporter(ExporterOptions options);
  ~Exporter();  // shutdown() with no time to wait if it was not called
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  // [any thread, never waits for the network] Queues a finished span.
  void submit(Span span);

  // [any thread but the exporter's] Sends every span submitted so far, waiting at most
  // `deadline` for it; what is still unsent then is abandoned (a POST in progress is cancelled)
  // and counted as failed. Stops the thread; spans submitted afterwards are dropped. Returns
  // true when every span was delivered. Idempotent.
  bool shutdown(std::chrono::milliseconds deadline);

  [[nodiscard]] ExporterStats stats() const;

 private:
  void loop();
  // Sends one batch; the first failure's message, or empty on success.
  std::string send(const std::vector<Span>& batch);

  ExporterOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;  // the exporter thread: a full batch, or stop
  std::condition_variable idle_;  // shutdown(): the queue drained
  std::deque<Span> queue_;
  size_t in_flight_ = 0;  // spans in the batch being sent
  bool stopping_ = false;
  bool warned_ = false;
  ExporterStats stats_;
  std::atomic<bool> abandon_{false};  // read by the HTTP client's cancellation callback
  std::thread thread_;                // last: starts once the members above exist
};

}  // namespace oe::telemetry

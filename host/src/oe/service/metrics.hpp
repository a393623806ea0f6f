// What `oe serve` counts (docs/serve.md, "Metrics"): per run, its token use, cost and node call
// durations, read from its log once and kept while the log does not change (RunStatsCache, also
// the runs list's tokens and cost); and GET /metrics in Prometheus' text format: runs by status,
// queue depth, node durations, LLM tokens and cost, and on PostgreSQL the workers of oe_workers
// with their leases and the attempts waiting.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "oe/httpd/router.hpp"
#include "oe/runs/run_analysis.hpp"
#include "oe/service/read_context.hpp"

namespace oe::service {

// The node ids of one run that get a duration series of their own (in id order); the calls of
// the others are counted under node="(other)".
inline constexpr size_t kMaxNodeSeries = 100;
inline constexpr std::string_view kOtherNodes = "(other)";

// One run's totals, from its log.
struct RunStats {
  int64_t tokens_in = 0;
  int64_t tokens_out = 0;
  double cost_usd = 0;
  // node id -> the durations (ms) of its calls that ran (a cache hit is not a call that ran)
  std::map<std::string, std::vector<int64_t>> call_ms;
};

[[nodiscard]] RunStats runStatsOf(const runs::RunModel& model);

// RunStats by log, kept while the log's size and mtime stay the same (a finished run's log no
// longer changes, so each is read once). Thread-safe.
class RunStatsCache {
 public:
  RunStats get(const std::filesystem::path& log);

 private:
  struct Entry {
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    RunStats stats;
  };
  std::mutex mutex_;
  std::map<std::filesystem::path, Entry> entries_;
};

// The node call duration histogram's upper bounds, in seconds.
inline constexpr double kDurationBuckets[] = {0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800};

// A Prometheus label value: backslash, double quote and newline escaped.
[[nodiscard]] std::string promLabel(std::string_view value);

// The text of GET /metrics (text/plain; version=0.0.4).
[[nodiscard]] std::string metricsText(const ReadContext& context, RunStatsCache& cache);

void addMetricsRoute(httpd::Router& router, std::shared_ptr<const ReadContext> context,
                     std::shared_ptr<RunStatsCache> cache);

}  // namespace oe::service

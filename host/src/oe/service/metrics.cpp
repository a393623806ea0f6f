// GET /metrics and the per-run totals behind it (metrics.hpp).
#include "oe/service/metrics.hpp"

#include <sys/stat.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <tuple>

#include "oe/events/event_log.hpp"
#include "oe/pg/connection.hpp"
#include "oe/pgstore/store_connection.hpp"
#include "oe/spec/workspace.hpp"

namespace oe::service {
namespace {

namespace fs = std::filesystem;

// The shortest text that reads back as the same double ("0.1", not "0.10000000000000001").
std::string number(double value) {
  if (std::isinf(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  std::array<char, 32> buffer{};
  const auto done = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return {buffer.data(), done.ptr};
}

class Exposition {
 public:
  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  }
  void sample(std::string_view name,
              const std::vector<std::pair<std::string_view, std::string_view>>& labels,
              double value) {
    out_ << name;
    if (!labels.empty()) {
      out_ << '{';
      for (size_t i = 0; i < labels.size(); ++i) {
        out_ << (i > 0 ? "," : "") << labels[i].first << "=\"" << promLabel(labels[i].second)
             << '"';
      }
      out_ << '}';
    }
    out_ << ' ' << number(value) << '\n';
  }
  [[nodiscard]] std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

struct Histogram {
  std::vector<uint64_t> buckets = std::vector<uint64_t>(std::size(kDurationBuckets), 0);
  uint64_t count = 0;
  double sum = 0;
  void observe(double seconds) {
    for (size_t i = 0; i < std::size(kDurationBuckets); ++i) {
      if (seconds <= kDurationBuckets[i]) {
        ++buckets[i];
      }
    }
    ++count;
    sum += seconds;
  }
};

// The PostgreSQL part: the workers, their leases and the attempts waiting. A store that cannot
// be reached shows as oe_store_up 0 (and the rest of the page is still served).
void storeMetrics(const std::string& url, Exposition& out) {
  out.family("oe_store_up", "gauge", "1 when the PostgreSQL store answered this scrape.");
  auto conn = pgstore::connect(url, std::chrono::seconds(2), "oe serve metrics");
  if (!conn) {
    out.sample("oe_store_up", {}, 0);
    return;
  }
  auto workers = (*conn)->exec(
      "SELECT w.id, w.host, w.concurrency, w.stopped_at IS NULL, "
      "extract(epoch FROM now() - w.heartbeat_at)::float8, "
      "(SELECT count(*) FROM oe_attempts a WHERE a.status = 'leased' AND a.lease_owner = w.id) "
      "FROM oe_workers w ORDER BY w.id");
  auto waiting = (*conn)->exec(
      "SELECT queue, count(*) FROM oe_attempts WHERE status = 'ready' GROUP BY queue "
      "ORDER BY queue");
  if (!workers || !waiting) {
    out.sample("oe_store_up", {}, 0);
    return;
  }
  out.sample("oe_store_up", {}, 1);
  out.family("oe_worker_up", "gauge",
             "Each worker of oe_workers: 1 while it has not stopped (see its heartbeat age).");
  for (int i = 0; i < workers->size(); ++i) {
    out.sample("oe_worker_up", {{"worker", workers->text(i, 0)}, {"host", workers->text(i, 1)}},
               workers->text(i, 3) == "t" ? 1 : 0);
  }
  out.family("oe_worker_heartbeat_age_seconds", "gauge", "Seconds since each worker's heartbeat.");
  for (int i = 0; i < workers->size(); ++i) {
    out.sample("oe_worker_heartbeat_age_seconds", {{"worker", workers->text(i, 0)}},
               std::strtod(std::string(workers->text(i, 4)).c_str(), nullptr));
  }
  out.family("oe_worker_concurrency", "gauge", "The attempts each worker runs at once at most.");
  for (int i = 0; i < workers->size(); ++i) {
    out.sample("oe_worker_concurrency", {{"worker", workers->text(i, 0)}},
               std::strtod(std::string(workers->text(i, 2)).c_str(), nullptr));
  }
  out.family("oe_worker_leases", "gauge", "Node attempts each worker holds a lease on now.");
  for (int i = 0; i < workers->size(); ++i) {
    out.sample("oe_worker_leases", {{"worker", workers->text(i, 0)}},
               std::strtod(std::string(workers->text(i, 5)).c_str(), nullptr));
  }
  out.family("oe_attempts_waiting", "gauge", "Node attempts ready and not claimed, by queue.");
  for (int i = 0; i < waiting->size(); ++i) {
    out.sample("oe_attempts_waiting", {{"queue", waiting->text(i, 0)}},
               std::strtod(std::string(waiting->text(i, 1)).c_str(), nullptr));
  }
}

}  // namespace

RunStats runStatsOf(const runs::RunModel& model) {
  RunStats stats;
  for (const auto& node : model.nodes) {
    stats.tokens_in += node.tokens_in;
    stats.tokens_out += node.tokens_out;
    stats.cost_usd += node.cost_usd;
  }
  for (const auto& call : model.calls) {
    if (call.depth == 0 && call.started >= 0 && call.ended >= call.started) {
      // Call labels are "node" or "node#item"; durations are the node's.
      const std::string node = call.label.substr(0, call.label.find('#'));
      stats.call_ms[node].push_back(call.ended - call.started);
    }
  }
  // A label value per node id keeps a scrape small for the graphs people draw by hand; a
  // generated graph of thousands of nodes would make thousands of series (a 10,000-node run
  // made /metrics 13 MB). Beyond kMaxNodeSeries, the rest share one series.
  if (stats.call_ms.size() > kMaxNodeSeries) {
    std::vector<int64_t> others;
    auto it = std::next(stats.call_ms.begin(), static_cast<std::ptrdiff_t>(kMaxNodeSeries));
    while (it != stats.call_ms.end()) {
      others.insert(others.end(), it->second.begin(), it->second.end());
      it = stats.call_ms.erase(it);
    }
    stats.call_ms[std::string(kOtherNodes)] = std::move(others);
  }
  return stats;
}

RunStats RunStatsCache::get(const fs::path& log) {
  struct stat info {};
  if (::stat(log.c_str(), &info) != 0) {
    return {};
  }
  const auto size = static_cast<uint64_t>(info.st_size);
  const int64_t mtime_ns = int64_t{info.st_mtim.tv_sec} * 1000000000 + info.st_mtim.tv_nsec;
  {
    const std::lock_guard lock(mutex_);
    auto it = entries_.find(log);
    if (it != entries_.end() && it->second.size == size && it->second.mtime_ns == mtime_ns) {
      return it->second.stats;
    }
  }
  RunStats stats;
  if (auto read = events::readEventLog(log)) {
    stats = runStatsOf(runs::analyse(read->events));
  }
  const std::lock_guard lock(mutex_);
  entries_[log] = Entry{size, mtime_ns, stats};
  return stats;
}

std::string promLabel(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string metricsText(const ReadContext& context, RunStatsCache& cache) {
  StatusOracle oracle(context);
  std::map<std::pair<std::string, std::string>, uint64_t> by_status;   // (experience, status)
  std::map<std::pair<std::string, std::string>, Histogram> durations;  // (experience, node)
  std::map<std::string, RunStats> usage;                               // experience -> sums
  for (const auto& experience : listExperiences(context)) {
    const fs::path runs_dir = spec::workspaceDir(experience.yaml) / "runs";
    if (!confinedTo(runs_dir, context.root)) {
      continue;
    }
    auto& sums = usage[experience.name];
    const auto records = runsOf(context, experience, /*details=*/true);
    oracle.know(experience, records);
    for (const auto& record : records) {
      ++by_status[{experience.name, oracle.statusOf(record, experience)}];
      const RunStats stats = cache.get(record.log);
      sums.tokens_in += stats.tokens_in;
      sums.tokens_out += stats.tokens_out;
      sums.cost_usd += stats.cost_usd;
      for (const auto& [node, calls] : stats.call_ms) {
        auto& histogram = durations[{experience.name, node}];
        for (const int64_t ms : calls) {
          histogram.observe(static_cast<double>(ms) / 1000.0);
        }
      }
    }
  }
  std::map<std::string, uint64_t> queued;  // experience -> queued entries
  uint64_t depth = 0;
  for (const auto& entry : oracle.queue()) {
    if (entry.status == "queued") {
      ++depth;
      ++queued[entry.experience];
      ++by_status[{entry.experience, "queued"}];
    } else if (entry.status == "cancelled") {  // cancelled before it started: it has no log
      ++by_status[{entry.experience, "cancelled"}];
    }
  }

  Exposition out;
  out.family("oe_runs", "gauge", "Runs under the served root, by experience and status.");
  for (const auto& [key, count] : by_status) {
    out.sample("oe_runs", {{"experience", key.first}, {"status", key.second}},
               static_cast<double>(count));
  }
  out.family("oe_queue_depth", "gauge", "Runs waiting in the run queue for a free slot.");
  out.sample("oe_queue_depth", {}, static_cast<double>(depth));
  out.family("oe_node_duration_seconds", "histogram",
             "How long each node's calls ran (node.started to its end), by experience and node.");
  for (const auto& [key, histogram] : durations) {
    for (size_t i = 0; i < std::size(kDurationBuckets); ++i) {
      const std::string le = number(kDurationBuckets[i]);
      out.sample("oe_node_duration_seconds_bucket",
                 {{"experience", key.first}, {"node", key.second}, {"le", le}},
                 static_cast<double>(histogram.buckets[i]));
    }
    out.sample("oe_node_duration_seconds_bucket",
               {{"experience", key.first}, {"node", key.second}, {"le", "+Inf"}},
               static_cast<double>(histogram.count));
    out.sample("oe_node_duration_seconds_sum", {{"experience", key.first}, {"node", key.second}},
               histogram.sum);
    out.sample("oe_node_duration_seconds_count", {{"experience", key.first}, {"node", key.second}},
               static_cast<double>(histogram.count));
  }
  out.family("oe_llm_tokens_total", "counter",
             "LLM tokens the runs' logs record, by experience and direction.");
  for (const auto& [experience, sums] : usage) {
    out.sample("oe_llm_tokens_total", {{"experience", experience}, {"direction", "input"}},
               static_cast<double>(sums.tokens_in));
    out.sample("oe_llm_tokens_total", {{"experience", experience}, {"direction", "output"}},
               static_cast<double>(sums.tokens_out));
  }
  out.family("oe_llm_cost_usd_total", "counter", "LLM cost the runs' logs record, in USD.");
  for (const auto& [experience, sums] : usage) {
    out.sample("oe_llm_cost_usd_total", {{"experience", experience}}, sums.cost_usd);
  }
  if (pg::isUrl(context.store_url)) {
    storeMetrics(context.store_url, out);
  }
  return out.text();
}

void addMetricsRoute(httpd::Router& router, std::shared_ptr<const ReadContext> context,
                     std::shared_ptr<RunStatsCache> cache) {
  router.add("GET", "/metrics", httpd::Scope::kRead, [context, cache](const httpd::Request&) {
    httpd::Response response;
    response.content_type = "text/plain; version=0.0.4; charset=utf-8";
    response.body = metricsText(*context, *cache);
    return response;
  });
}

}  // namespace oe::service

// The node cache on the hot path: the key (canonical JSON + SHA-256 over the node spec, its
// inputs and its files' digests, D4), a lookup, and a put on a real cache.sqlite.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench_support.hpp"
#include "oe/cache/cache_store.hpp"

namespace {

const std::vector<oe::cache::FileDigest> kFiles = {
    {"./tools/bench_tool.so", std::string(64, 'a')}};

// A node of the scaling benchmark: small spec, two args, no state, no edge inputs.
void BM_CacheKeySmall(benchmark::State& bench) {
  const oe::Json node = oe::bench::benchNode(3);
  const oe::Json args = node["args"];
  const oe::Json empty = oe::Json::object();
  for (auto _ : bench) {
    benchmark::DoNotOptimize(oe::cache::cacheKey(node, empty, empty, args, kFiles));
  }
}
BENCHMARK(BM_CacheKeySmall);

// About 1 KiB of inputs (state view + edge inputs), as machine-limits' composite uses.
void BM_CacheKey1KiB(benchmark::State& bench) {
  const oe::Json node = oe::bench::benchNode(3);
  const oe::Json args = {{"topic", std::string(200, 't')}, {"n", 12}};
  const oe::Json state = {{"notes", std::string(300, 'n')}, {"count", 7}};
  const oe::Json edges = {{"prev", {{"summary", std::string(300, 's')}}}};
  for (auto _ : bench) {
    benchmark::DoNotOptimize(oe::cache::cacheKey(node, state, edges, args, kFiles));
  }
}
BENCHMARK(BM_CacheKey1KiB);

// A hit on an entry an earlier run left in cache.sqlite (a store's own entries are served from
// memory until it closes, so the entry is written by a store that is closed first).
void BM_CacheGetHit(benchmark::State& bench) {
  oe::bench::ScratchDir dir;
  const std::string key(64, 'b');
  (void)oe::cache::CacheStore::open(dir.path() / "cache")
      .value()
      ->put(key, "n1", "run", oe::Json{{"state_delta", {{"f1", 1}}}});
  auto cache = oe::cache::CacheStore::open(dir.path() / "cache").value();
  for (auto _ : bench) {
    benchmark::DoNotOptimize(cache->get(key));
  }
}
BENCHMARK(BM_CacheGetHit);

void BM_CacheGetMiss(benchmark::State& bench) {
  oe::bench::ScratchDir dir;
  auto cache = oe::cache::CacheStore::open(dir.path() / "cache").value();
  const std::string key(64, 'c');
  for (auto _ : bench) {
    benchmark::DoNotOptimize(cache->get(key));
  }
}
BENCHMARK(BM_CacheGetMiss);

// One entry per call: what a node's cache put costs (a line appended to the store's journal,
// and its share of the commits into cache.sqlite, one per 512 entries).
void BM_CachePut(benchmark::State& bench) {
  oe::bench::ScratchDir dir;
  auto cache = oe::cache::CacheStore::open(dir.path() / "cache").value();
  const oe::Json output = {{"state_delta", {{"f1", 1}}}};
  int i = 0;
  for (auto _ : bench) {
    const std::string key = oe::cache::sha256Hex(std::to_string(i++));
    auto put = cache->put(key, "n1", "run", output);
    if (!put) {
      bench.SkipWithError(put.error().message.c_str());
      return;
    }
  }
}
BENCHMARK(BM_CachePut)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

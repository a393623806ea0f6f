// Expressions on the dispatch path: an edge's `when` condition and a node's `$.path` args,
// compiled once (as the run does in prepare) and evaluated against the state per call.
#include <benchmark/benchmark.h>

#include "oe/expr/args_template.hpp"
#include "oe/expr/condition.hpp"
#include "oe/expr/state_path.hpp"
#include "oe/expr/state_reader.hpp"

namespace {

oe::Json benchState() {
  return oe::Json{{"score", 7},
                  {"name", "alpha"},
                  {"items", oe::Json::array({1, 2, 3, 4, 5, 6, 7, 8})},
                  {"profile", {{"city", "Lyon"}, {"tags", {"a", "b", "c"}}}}};
}

void whenCondition(benchmark::State& bench, const char* source) {
  const oe::Json state = benchState();
  const oe::expr::JsonStateReader reader(state);
  auto condition = oe::expr::Condition::compile(source);
  if (!condition) {
    bench.SkipWithError(condition.error().message.c_str());
    return;
  }
  for (auto _ : bench) {
    benchmark::DoNotOptimize(condition->test(reader));
  }
}

void BM_WhenSimple(benchmark::State& bench) { whenCondition(bench, "$.score > 3"); }
BENCHMARK(BM_WhenSimple);

void BM_WhenCompound(benchmark::State& bench) {
  whenCondition(bench, "$.score >= 3 && $.name == 'alpha' && length($.items) > 4 || !$.done");
}
BENCHMARK(BM_WhenCompound);

void BM_WhenCompile(benchmark::State& bench) {
  for (auto _ : bench) {
    auto condition = oe::expr::Condition::compile("$.score >= 3 && $.name == 'alpha'");
    benchmark::DoNotOptimize(condition);
  }
}
BENCHMARK(BM_WhenCompile);

void BM_StatePathLookup(benchmark::State& bench) {
  const oe::Json state = benchState();
  const oe::expr::JsonStateReader reader(state);
  auto path = oe::expr::StatePath::parse("$.profile.city");
  for (auto _ : bench) {
    benchmark::DoNotOptimize(path->lookup(reader));
  }
}
BENCHMARK(BM_StatePathLookup);

// A node's args with two `$.path` leaves and two literals, resolved as at every dispatch.
void BM_ArgsResolve(benchmark::State& bench) {
  const oe::Json state = benchState();
  const oe::expr::JsonStateReader reader(state);
  const auto args = oe::expr::ArgsTemplate::compile(
      oe::Json{{"city", "$.profile.city"}, {"n", "$.score"}, {"out", "f3"}, {"i", 3}});
  for (auto _ : bench) {
    benchmark::DoNotOptimize(args.resolve(reader));
  }
}
BENCHMARK(BM_ArgsResolve);

// The benchmark generator's args (no path): what every node of bench/run_scaling.py pays.
void BM_ArgsResolveConstant(benchmark::State& bench) {
  const oe::Json state = benchState();
  const oe::expr::JsonStateReader reader(state);
  const auto args = oe::expr::ArgsTemplate::compile(oe::Json{{"out", "f3"}, {"i", 3}});
  for (auto _ : bench) {
    benchmark::DoNotOptimize(args.resolve(reader));
  }
}
BENCHMARK(BM_ArgsResolveConstant);

}  // namespace

BENCHMARK_MAIN();

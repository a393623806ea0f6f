// The state write of one node (StateStore::write: checks, merge, one journal line, and its share
// of the batched commits to a real state.sqlite in WAL mode), for the delta shapes the scaling
// benchmark and real graphs use.
#include <benchmark/benchmark.h>

#include <string>

#include "bench_support.hpp"
#include "oe/state/state_store.hpp"

namespace {

oe::spec::StateSpec schema(int fields, oe::spec::MergeStrategy merge) {
  oe::spec::StateSpec spec;
  for (int i = 0; i < fields; ++i) {
    oe::spec::FieldSpec f;
    f.name = "f" + std::to_string(i);
    f.type = merge == oe::spec::MergeStrategy::kArrayAppend ? oe::spec::FieldType::kArray
                                                            : oe::spec::FieldType::kNumber;
    f.merge = merge;
    spec.index.emplace(f.name, spec.fields.size());
    spec.fields.push_back(std::move(f));
  }
  return spec;
}

// One node's delta of N last_wins number fields (the argument), one journal line: 1 is what
// every node of bench/run_scaling.py writes; 4 shows the line and the rows growing with it.
void BM_StateWrite(benchmark::State& bench) {
  oe::bench::ScratchDir dir;
  auto store =
      oe::state::StateStore::open(dir.path() / "state.sqlite", schema(16, {})).value();
  const auto fields = static_cast<int>(bench.range(0));
  int i = 0;
  const std::string run_id = "00000000-0000-4000-8000-000000000000";
  for (auto _ : bench) {
    oe::Json delta = oe::Json::object();
    for (int k = 0; k < fields; ++k) {
      delta["f" + std::to_string((i + k) % 16)] = i;
    }
    auto written = store->write(delta, {run_id, "n" + std::to_string(i)});
    if (!written) {
      bench.SkipWithError(written.error().message.c_str());
      return;
    }
    ++i;
  }
}
BENCHMARK(BM_StateWrite)->Arg(1)->Arg(4)->UseRealTime();

// A 10,000-node run's state writes (one last_wins field each), as the engine does them: /0
// untracked (as before issue 10), /1 in a chain, with a landed() lookup before each write and a
// write_key and 64-hex input_key, so every journal line carries a mark and every batch commits
// its marks. /1 minus /0 is the per-node cost of landed-write marks. Fixed at 10,000
// iterations so the set of marks is the size a real run's is.
void BM_StateWriteChain(benchmark::State& bench) {
  oe::bench::ScratchDir dir;
  auto store =
      oe::state::StateStore::open(dir.path() / "state.sqlite", schema(16, {})).value();
  const bool tracked = bench.range(0) != 0;
  const std::string run_id = "00000000-0000-4000-8000-000000000000";
  if (auto r = store->beginChain(run_id); tracked && !r) {
    bench.SkipWithError(r.error().message.c_str());
    return;
  }
  const std::string input_key(64, 'a');
  int i = 0;
  for (auto _ : bench) {
    oe::Json delta = oe::Json::object();
    delta["f" + std::to_string(i % 16)] = i;
    const std::string node = "n" + std::to_string(i);
    oe::state::WriteMeta meta{run_id, node};
    if (tracked) {
      if (store->landed(node, input_key)) {
        bench.SkipWithError("a fresh key reads as landed");
        return;
      }
      meta.write_key = node;
      meta.input_key = input_key;
    }
    auto written = store->write(delta, meta);
    if (!written) {
      bench.SkipWithError(written.error().message.c_str());
      return;
    }
    ++i;
  }
  if (auto r = store->flush(); !r) {  // the last batch's commit belongs to the run
    bench.SkipWithError(r.error().message.c_str());
  }
}
BENCHMARK(BM_StateWriteChain)->Arg(0)->Arg(1)->Iterations(10000)->Repetitions(7)->UseRealTime();

// A set_once field written again with the same value: a no-op, no transaction (D2).
void BM_StateWriteSetOnceNoop(benchmark::State& bench) {
  oe::bench::ScratchDir dir;
  auto store = oe::state::StateStore::open(dir.path() / "state.sqlite",
                                           schema(1, oe::spec::MergeStrategy::kSetOnce))
                   .value();
  const oe::Json delta = {{"f0", 42}};
  (void)store->write(delta, {"run", "n"});
  for (auto _ : bench) {
    benchmark::DoNotOptimize(store->write(delta, {"run", "n"}));
  }
}
BENCHMARK(BM_StateWriteSetOnceNoop);

// The mirror read every `$.path` and every bundle goes through.
void BM_StateFieldRead(benchmark::State& bench) {
  oe::bench::ScratchDir dir;
  auto store =
      oe::state::StateStore::open(dir.path() / "state.sqlite", schema(16, {})).value();
  (void)store->write(oe::Json{{"f7", 1}}, {"run", "n"});
  for (auto _ : bench) {
    benchmark::DoNotOptimize(store->field("f7"));
  }
}
BENCHMARK(BM_StateFieldRead);

}  // namespace

BENCHMARK_MAIN();

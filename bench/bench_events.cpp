// Event append: one JSONL line built by hand and written with one write(2) (EventLog), for the
// lines every node produces, with and without a listener on the bus.
#include <benchmark/benchmark.h>

#include <optional>
#include <string>

#include "bench_support.hpp"
#include "oe/events/event_log.hpp"

namespace {

std::unique_ptr<oe::events::EventLog> openLog(const oe::bench::ScratchDir& dir) {
  return oe::events::EventLog::open(dir.path() / "runs" / "bench.jsonl",
                                    "5f0c7a6e-0000-4000-8000-000000000000")
      .value();
}

void BM_EventNodeStarted(benchmark::State& bench) {
  oe::bench::ScratchDir dir;
  auto log = openLog(dir);
  const std::optional<std::string> phase;
  for (auto _ : bench) {
    log->nodeStarted("n1234", phase);
  }
}
BENCHMARK(BM_EventNodeStarted)->UseRealTime();

void BM_EventStateWrite(benchmark::State& bench) {
  oe::bench::ScratchDir dir;
  auto log = openLog(dir);
  for (auto _ : bench) {
    log->stateWrite("n1234", "f7");
  }
}
BENCHMARK(BM_EventStateWrite)->UseRealTime();

void BM_EventNodeFinishedWithMetrics(benchmark::State& bench) {
  oe::bench::ScratchDir dir;
  auto log = openLog(dir);
  const std::optional<std::string> phase = "collect";
  const oe::Json metrics = {{"tokens", 812}, {"latency_ms", 1530}};
  for (auto _ : bench) {
    log->nodeFinished("n1234", phase, &metrics);
  }
}
BENCHMARK(BM_EventNodeFinishedWithMetrics)->UseRealTime();

// A plugin's own event (node.tokens): its fields arrive as JSON text and are spliced in.
void BM_EventPluginEvent(benchmark::State& bench) {
  oe::bench::ScratchDir dir;
  auto log = openLog(dir);
  const std::string fields = R"({"input_tokens":120,"output_tokens":48,"model":"gpt-4o-mini"})";
  for (auto _ : bench) {
    benchmark::DoNotOptimize(log->nodeEvent("node.tokens", "n1234", fields));
  }
}
BENCHMARK(BM_EventPluginEvent)->UseRealTime();

// With a subscriber that reads only the type and node id (the CLI's progress printer, the TUI,
// for node.started): the line is not parsed.
void BM_EventNodeStartedWithListener(benchmark::State& bench) {
  oe::bench::ScratchDir dir;
  auto log = openLog(dir);
  size_t seen = 0;
  log->subscribe([&seen](const oe::events::Event& event) { seen += event.nodeId().size(); });
  const std::optional<std::string> phase;
  for (auto _ : bench) {
    log->nodeStarted("n1234", phase);
  }
  benchmark::DoNotOptimize(seen);
}
BENCHMARK(BM_EventNodeStartedWithListener)->UseRealTime();

// With a subscriber that asks for the event's JSON (a node.failed's error, a node.activity's
// text): the line is parsed, once for all the listeners.
void BM_EventNodeStartedWithParsingListener(benchmark::State& bench) {
  oe::bench::ScratchDir dir;
  auto log = openLog(dir);
  size_t seen = 0;
  log->subscribe([&seen](const oe::events::Event& event) { seen += event.json().size(); });
  const std::optional<std::string> phase;
  for (auto _ : bench) {
    log->nodeStarted("n1234", phase);
  }
  benchmark::DoNotOptimize(seen);
}
BENCHMARK(BM_EventNodeStartedWithParsingListener)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

// What a plugin call costs under isolation: process (docs/trust.md, "Process isolation")
// against the same call in-process: the benchmark's trivial kind (the plugin layer alone) and
// the tool plugin running the benchmark's native tool (bench_plugin.cpp's call), each loaded
// with PluginLibrary::open and with openIsolated (a helper `oe plugin-host` over a socket).
// The isolated calls run from 1 and 4 threads at once on one reentrant node, as a run's
// parallel nodes do. docs/performance.md quotes the numbers.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <string_view>

#include "oe/plugins/host_context.hpp"
#include "oe/plugins/plugin_isolation.hpp"
#include "oe/plugins/plugin_library.hpp"

#ifndef OE_BENCH_TRIVIAL_PLUGIN
#error "OE_BENCH_TRIVIAL_PLUGIN (path of bench_trivial_plugin.so) must be defined by the build"
#endif
#ifndef OE_BENCH_TOOL_PLUGIN
#error "OE_BENCH_TOOL_PLUGIN (path of the built tool plugin) must be defined by the build"
#endif
#ifndef OE_BENCH_NATIVE_TOOL
#error "OE_BENCH_NATIVE_TOOL (path of bench_native_tool.so) must be defined by the build"
#endif
#ifndef OE_BENCH_OE
#error "OE_BENCH_OE (path of the built oe, the helper's program) must be defined by the build"
#endif

namespace {

class QuietSink final : public oe::plugins::LogSink {
 public:
  void write(oe_log_level, std::string_view, std::string_view) override {}
};

class BenchCall final : public oe_host_ctx {
 public:
  void log(oe_log_level, std::string_view) override {}
};

struct Loaded {
  std::shared_ptr<oe::plugins::PluginLibrary> library;
  const oe_node_kind* kind = nullptr;
  const oe_node_kind* descriptor = nullptr;
  oe_node* node = nullptr;
  std::string error;
};

const std::string kToolRequest =
    R"({"node":{"args":{"i":3,"out":"f3"},"id":"n3","impl":")" OE_BENCH_NATIVE_TOOL
    R"(","kind":"tool","writes":["f3"]},"args":{"i":3,"out":"f3"},"state_view":{},)"
    R"("edge_inputs":{},"context":{"run_id":"5f0c7a6e-0000-4000-8000-000000000000",)"
    R"("node_id":"n3","experience_dir":"/tmp","attempt":1}})";
const std::string kTrivialRequest =
    R"({"node":{"id":"n3","kind":"bench-trivial"},"args":{},"state_view":{},"edge_inputs":{},)"
    R"("context":{"run_id":"5f0c7a6e-0000-4000-8000-000000000000","node_id":"n3",)"
    R"("experience_dir":"/tmp","attempt":1}})";

// One library, one node of `kind_name`, kept for the whole program: the helper starts once.
Loaded load(const char* path, std::string_view kind_name, bool isolated,
            const std::string& config) {
  static QuietSink sink;
  Loaded loaded;
  auto library = isolated ? oe::plugins::openIsolated(path, &sink, "")
                          : oe::plugins::PluginLibrary::open(path, &sink);
  if (!library) {
    loaded.error = library.error().message;
    return loaded;
  }
  loaded.library = std::move(library).value();
  for (const oe::plugins::KindTable& k : loaded.library->kinds()) {
    if (std::string_view(k.table.kind) == kind_name) {
      loaded.kind = &k.table;
      loaded.descriptor = k.descriptor;
    }
  }
  oe_writer err;
  if (loaded.kind == nullptr || loaded.kind->create(loaded.library->self(), loaded.descriptor,
                                                    oe_str{config.data(), config.size()}, nullptr,
                                                    &loaded.node, &err) != OE_OK) {
    loaded.error = "cannot create a node: " + err.data;
  }
  return loaded;
}

Loaded& trivial(bool isolated) {
  static const std::string config =
      R"({"experience_dir":"/tmp","node":{"id":"n3","kind":"bench-trivial"}})";
  static Loaded in_process = load(OE_BENCH_TRIVIAL_PLUGIN, "bench-trivial", false, config);
  static Loaded helper = load(OE_BENCH_TRIVIAL_PLUGIN, "bench-trivial", true, config);
  return isolated ? helper : in_process;
}

Loaded& tool(bool isolated) {
  static const std::string config =
      R"({"experience_dir":"/tmp","node":{"id":"n3","kind":"tool","impl":")" OE_BENCH_NATIVE_TOOL
      R"("}})";
  static Loaded in_process = load(OE_BENCH_TOOL_PLUGIN, "tool", false, config);
  static Loaded helper = load(OE_BENCH_TOOL_PLUGIN, "tool", true, config);
  return isolated ? helper : in_process;
}

void invokeLoop(benchmark::State& bench, Loaded& loaded, const std::string& request) {
  if (!loaded.error.empty()) {
    bench.SkipWithError(loaded.error.c_str());
    return;
  }
  BenchCall call;
  oe_writer response;
  oe_writer error;
  for (auto _ : bench) {
    response.data.clear();
    const oe_invocation inv{
        sizeof(oe_invocation), 1,         oe_str{request.data(), request.size()},
        call.handle(),         &response, &error};
    if (loaded.kind->invoke(loaded.node, &inv) != OE_OK) {
      bench.SkipWithError(error.data.c_str());
      break;
    }
  }
}

void BM_TrivialInProcess(benchmark::State& bench) {
  invokeLoop(bench, trivial(false), kTrivialRequest);
}
BENCHMARK(BM_TrivialInProcess);

void BM_TrivialIsolated(benchmark::State& bench) {
  invokeLoop(bench, trivial(true), kTrivialRequest);
}
BENCHMARK(BM_TrivialIsolated)->Threads(1)->Threads(4)->UseRealTime();

// The tool kind is not reentrant: one node per thread would be the run's way; one thread here.
void BM_ToolInProcess(benchmark::State& bench) { invokeLoop(bench, tool(false), kToolRequest); }
BENCHMARK(BM_ToolInProcess);

void BM_ToolIsolated(benchmark::State& bench) { invokeLoop(bench, tool(true), kToolRequest); }
BENCHMARK(BM_ToolIsolated)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  oe::plugins::initHostServices();
  oe::plugins::setPluginHostExecutable(OE_BENCH_OE);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

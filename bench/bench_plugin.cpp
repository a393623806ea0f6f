// Plugin invoke through the real ABI: the built `tool` plugin loaded by PluginLibrary (dlopen,
// ABI negotiation, init), one node created, and invoke() with the request the run sends, which
// runs the benchmark's native tool in-process. The direct call of the tool's entry point is
// the floor, so the difference is what the plugin layer costs per node.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <oe/kinds/tool.h>

#include <string>

#include "bench_support.hpp"
#include "oe/plugins/host_context.hpp"
#include "oe/plugins/plugin_library.hpp"

#ifndef OE_BENCH_TOOL_PLUGIN
#error "OE_BENCH_TOOL_PLUGIN (path of the built tool plugin) must be defined by the build"
#endif
#ifndef OE_BENCH_NATIVE_TOOL
#error "OE_BENCH_NATIVE_TOOL (path of bench_native_tool.so) must be defined by the build"
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

// The request the run builds for a node of the scaling benchmark.
std::string request(int i) {
  return R"({"node":{"args":{"i":)" + std::to_string(i) +
         R"(,"out":"f3"},"id":"n3","impl":")" OE_BENCH_NATIVE_TOOL
         R"(","kind":"tool","writes":["f3"]},"args":{"i":)" +
         std::to_string(i) +
         R"(,"out":"f3"},"state_view":{},"edge_inputs":{},"context":{"run_id":)"
         R"("5f0c7a6e-0000-4000-8000-000000000000","node_id":"n3","experience_dir":"/tmp",)"
         R"("attempt":1}})";
}

void BM_PluginInvokeNativeTool(benchmark::State& bench) {
  QuietSink sink;
  auto library = oe::plugins::PluginLibrary::open(OE_BENCH_TOOL_PLUGIN, &sink);
  if (!library) {
    bench.SkipWithError(library.error().message.c_str());
    return;
  }
  const oe_node_kind* kind = nullptr;
  for (const oe::plugins::KindTable& k : (*library)->kinds()) {
    if (std::string_view(k.table.kind) == "tool") {
      kind = &k.table;
    }
  }
  const std::string config =
      R"({"experience_dir":"/tmp","node":{"id":"n3","kind":"tool","impl":")" OE_BENCH_NATIVE_TOOL
      R"("}})";
  oe_writer err;
  oe_node* node = nullptr;
  if (kind == nullptr ||
      kind->create((*library)->self(), kind, oe_str{config.data(), config.size()}, nullptr,
                   &node, &err) != OE_OK) {
    bench.SkipWithError(("cannot create a tool node: " + err.data).c_str());
    return;
  }
  const std::string req = request(3);
  BenchCall call;
  oe_writer response;
  oe_writer error;
  for (auto _ : bench) {
    response.data.clear();
    const oe_invocation inv{sizeof(oe_invocation), 1, oe_str{req.data(), req.size()}, call.handle(),
                            &response, &error};
    if (kind->invoke(node, &inv) != OE_OK) {
      bench.SkipWithError(error.data.c_str());
      break;
    }
  }
  kind->destroy(node);
}
BENCHMARK(BM_PluginInvokeNativeTool);

// The floor: the tool's entry point called directly with the tool input (no plugin layer).
void BM_NativeToolDirect(benchmark::State& bench) {
  void* handle = ::dlopen(OE_BENCH_NATIVE_TOOL, RTLD_NOW | RTLD_LOCAL);
  auto entry = handle == nullptr ? nullptr
                                 : reinterpret_cast<oe_tool_invoke_fn>(
                                       ::dlsym(handle, OE_TOOL_ENTRY_SYMBOL));
  if (entry == nullptr) {
    bench.SkipWithError("cannot load " OE_BENCH_NATIVE_TOOL);
    return;
  }
  const std::string input = R"({"i":3,"out":"f3","_edge_inputs":{},"_state":{}})";
  BenchCall call;
  for (auto _ : bench) {
    oe_writer out;
    oe_writer err;
    benchmark::DoNotOptimize(
        entry(oe::plugins::hostApi(), call.handle(), oe_str{input.data(), input.size()}, &out,
              &err));
  }
  ::dlclose(handle);
}
BENCHMARK(BM_NativeToolDirect);

}  // namespace

BENCHMARK_MAIN();

// A test helper process (tests/unit/llm/shared_limits_test.cpp): one oe process with its own LLM
// service, as an `oe worker` has, making calls from several threads under a shared store.
// Usage: oe_test_llm_caller STORE_URL SCOPE RUNTIME_JSON THREADS CALLS_PER_THREAD REQUEST_JSON
// Prints one line per call: "ok", or "<status> <message>"; exits 1 when the service cannot start.
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "oe/llm/llm_service.hpp"
#include "oe/plugins/host_context.hpp"
#include "oe/plugins/registry.hpp"

namespace {

struct QuietCtx : oe_host_ctx {
  void log(oe_log_level /*level*/, std::string_view /*message*/) override {}
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s STORE_URL SCOPE RUNTIME_JSON THREADS CALLS REQUEST_JSON\n",
                 argv[0]);
    return 2;
  }
  oe::plugins::initHostServices();
  oe::plugins::PluginRegistry registry(nullptr);
  registry.loadFrom({OE_TEST_PLUGIN_DIR});
  oe::llm::Settings settings;
  settings.provider_flag = "openai";
  settings.env = oe::llm::Environment::fromProcess();
  if (auto applied = oe::llm::applyRuntime(oe::Json::parse(argv[3]), settings); !applied) {
    std::fprintf(stderr, "%s\n", applied.error().message.c_str());
    return 1;
  }
  settings.shared_store_url = argv[1];
  settings.shared_scope = argv[2];
  auto service = oe::llm::LlmService::create(settings, registry, oe::llm::Usage{});
  if (!service) {
    std::fprintf(stderr, "%s\n", service.error().message.c_str());
    return 1;
  }
  const int threads = std::atoi(argv[4]);
  const int calls = std::atoi(argv[5]);
  const std::string request = argv[6];
  std::mutex mutex;
  std::vector<std::string> lines;
  std::vector<std::thread> callers;
  for (int t = 0; t < threads; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < calls; ++i) {
        QuietCtx ctx;
        const oe::llm::Answer answer = (*service)->complete({&ctx, "ask", nullptr}, request);
        std::lock_guard lock(mutex);
        lines.push_back(answer.status == OE_OK
                            ? "ok"
                            : std::to_string(static_cast<int>(answer.status)) + " " + answer.body);
      }
    });
  }
  for (auto& caller : callers) {
    caller.join();
  }
  for (const auto& line : lines) {
    std::printf("%s\n", line.c_str());
  }
  return 0;
}

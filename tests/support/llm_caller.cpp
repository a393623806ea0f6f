// A test helper process (tests/unit/llm/shared_limits_test.cpp): one oe process with its own LLM
// service, as an `oe worker` has, making calls from several threads under a shared store.
// Usage: oe_test_llm_caller STORE_URL SCOPE RUNTIME_JSON THREADS CALLS_PER_THREAD REQUEST_JSON
// Prints one line per call: "ok", or "<status> <message>"; exits 1 when the service cannot start.
// Or: oe_test_llm_caller --hold STORE_URL SCOPE RUNTIME_JSON TTL_MS READY_FILE: takes a share of
// runtime.limits.openai, creates READY_FILE, and holds it (renewing) until killed.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "oe/llm/llm_service.hpp"
#include "oe/llm/shared_limits.hpp"
#include "oe/plugins/host_context.hpp"
#include "oe/plugins/registry.hpp"

namespace {

struct QuietCtx : oe_host_ctx {
  void log(oe_log_level /*level*/, std::string_view /*message*/) override {}
};

// The runtime object of a JSON argument; a test's typo is an error line, not an abort.
bool applyArg(const char* json, oe::llm::Settings& settings) {
  const oe::Json runtime = oe::Json::parse(json, nullptr, false);
  if (runtime.is_discarded()) {
    std::fprintf(stderr, "RUNTIME_JSON is not JSON: %s\n", json);
    return false;
  }
  if (auto applied = oe::llm::applyRuntime(runtime, settings); !applied) {
    std::fprintf(stderr, "%s\n", applied.error().message.c_str());
    return false;
  }
  return true;
}

int hold(char** argv) {
  oe::llm::Settings settings;
  if (!applyArg(argv[4], settings)) {
    return 1;
  }
  auto shared = oe::llm::SharedLimits::open(argv[2], argv[3], oe::llm::Usage{},
                                            {.ttl = std::chrono::milliseconds(std::atoll(argv[5])),
                                             .retry_for = std::chrono::seconds(10),
                                             .holder = ""});
  if (!shared) {
    std::fprintf(stderr, "%s\n", shared.error().message.c_str());
    return 1;
  }
  oe::llm::RateLimiter limiter(settings.limits, shared->get());
  auto taken = limiter.acquire("openai", "m", 1, nullptr, nullptr);
  if (!taken) {
    return 1;
  }
  std::ofstream(argv[6]) << getpid() << "\n";
  for (;;) {
    pause();  // until SIGKILL: the renewal thread keeps the slot alive meanwhile
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 7 && std::string(argv[1]) == "--hold") {
    return hold(argv);
  }
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s STORE_URL SCOPE RUNTIME_JSON THREADS CALLS REQUEST_JSON\n",
                 argv[0]);
    return 2;
  }
  oe::plugins::initHostServices();
  oe::plugins::PluginRegistry registry(nullptr, oe::plugins::Access::kExecute);
  registry.loadFrom({OE_TEST_PLUGIN_DIR});
  oe::llm::Settings settings;
  settings.provider_flag = "openai";
  settings.env = oe::llm::Environment::fromProcess();
  if (!applyArg(argv[3], settings)) {
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

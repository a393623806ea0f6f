// libFuzzer target: the OpenTelemetry environment oe reads (docs/telemetry.md):
// OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES lists, endpoints, protocol and
// OTEL_SDK_DISABLED. Input: the values of those variables, one per line, in that order.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "oe/telemetry/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const kNames[] = {
      "OTEL_EXPORTER_OTLP_HEADERS",  "OTEL_RESOURCE_ATTRIBUTES",
      "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
      "OTEL_SERVICE_NAME",           "OTEL_EXPORTER_OTLP_PROTOCOL",
      "OTEL_SDK_DISABLED",           "OTEL_EXPORTER_OTLP_TRACES_HEADERS"};
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> vars;
  for (const char* name : kNames) {
    if (input.empty()) {
      break;
    }
    const size_t newline = input.find('\n');
    vars[name] = std::string(input.substr(0, newline));
    input = newline == std::string_view::npos ? std::string_view{} : input.substr(newline + 1);
  }
  const oe::telemetry::Getenv env = [&vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) {
      return std::nullopt;
    }
    return it->second;
  };
  for (const bool flag : {false, true}) {
    const oe::telemetry::Config config = oe::telemetry::configFromEnvironment(flag, env, "0");
    if (flag && (!config.enabled || config.url.empty() || config.resource.empty())) {
      std::abort();  // --otel always exports somewhere, under some service.name
    }
    for (const auto& [key, value] : config.headers) {
      if (key.empty()) {
        std::abort();  // entries without a key are left out, never sent
      }
    }
  }
  return 0;
}

// Where and how a run's trace is exported: `oe run --otel` and the standard OpenTelemetry
// environment (OTEL_EXPORTER_OTLP_*, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_SDK_DISABLED), read once per run (docs/telemetry.md).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oe/telemetry/otlp.hpp"

namespace oe::telemetry {

// The OTLP/HTTP default when --otel is given without an endpoint in the environment.
inline constexpr std::string_view kDefaultEndpoint = "http://localhost:4318";

struct Config {
  bool enabled = false;
  std::string url;  // the traces URL the batches are POSTed to
  std::vector<std::pair<std::string, std::string>> headers;
  Attributes resource;  // service.name first
  // What the user should hear about (a malformed header entry, an unsupported protocol).
  std::vector<std::string> warnings;
};

// Reads a variable; nullopt when unset. Real runs pass getenv, tests a map.
using Getenv = std::function<std::optional<std::string>(const char* name)>;

// Telemetry is on with `flag` (--otel) or when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT is set; OTEL_SDK_DISABLED=true turns the environment's request off
// (an explicit --otel still wins, as every flag wins over the environment in oe). The traces
// endpoint is used as is; the generic one gets "/v1/traces" appended, as the OTLP spec says.
[[nodiscard]] Config configFromEnvironment(bool flag, const Getenv& env,
                                           std::string_view oe_version);

// A `key=value,key=value` list (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES): keys and
// values trimmed, values percent-decoded. An entry without '=' or with an empty key is left out
// and named in `warnings` with `variable`.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> parseKeyValueList(
    std::string_view text, std::string_view variable, std::vector<std::string>& warnings);

}  // namespace oe::telemetry

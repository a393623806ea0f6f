// Wiring of a run's OpenTelemetry export.
#include "oe/telemetry/run_telemetry.hpp"

#include <cstdlib>
#include <map>
#include <string>

namespace oe::telemetry {
namespace {

ExporterOptions exporterOptions(const Config& config, std::ostream& err) {
  ExporterOptions options;
  options.url = config.url;
  options.headers = config.headers;
  options.resource = config.resource;
  options.scope_version = OE_VERSION_STRING;
  options.warn = [&err](const std::string& message) {
    err << "oe: warning: OpenTelemetry: " << message
        << " (the run goes on; is the collector running there? OTEL_EXPORTER_OTLP_ENDPOINT "
           "says where it is)\n";
  };
  return options;
}

std::map<std::string, std::string, std::less<>> kindsOf(const spec::Experience& experience) {
  std::map<std::string, std::string, std::less<>> kinds;
  for (const auto& node : experience.nodes) {
    kinds.emplace(node.id, node.kind);
  }
  return kinds;
}

}  // namespace

Getenv processEnvironment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) {
      return std::nullopt;
    }
    return std::string(value);
  };
}

std::unique_ptr<RunTelemetry> RunTelemetry::start(bool flag, const Getenv& env,
                                                  const spec::Experience& experience,
                                                  std::ostream& err) {
  Config config = configFromEnvironment(flag, env, OE_VERSION_STRING);
  for (const auto& warning : config.warnings) {
    err << "oe: warning: OpenTelemetry: " << warning << '\n';
  }
  if (!config.enabled) {
    return nullptr;
  }
  return std::make_unique<RunTelemetry>(std::move(config), experience, err);
}

RunTelemetry::RunTelemetry(Config config, const spec::Experience& experience, std::ostream& err)
    : config_(std::move(config)),
      err_(err),
      exporter_(exporterOptions(config_, err)),
      tracer_([this](Span span) { exporter_.submit(std::move(span)); }, experience.name,
              kindsOf(experience)) {}

events::Listener RunTelemetry::listener(events::Listener next) {
  if (!next) {
    return [this](const events::Event& event) { tracer_.onEvent(event); };
  }
  return [this, next = std::move(next)](const events::Event& event) {
    next(event);
    tracer_.onEvent(event);
  };
}

void RunTelemetry::finish(std::string_view status) {
  tracer_.finish(status);
  exporter_.shutdown(kFlushDeadline);
  const ExporterStats stats = exporter_.stats();
  if (stats.dropped > 0 || stats.failed > 0) {
    err_ << "oe: warning: OpenTelemetry: trace " << tracer_.traceId() << ": " << stats.exported
         << " spans sent to " << config_.url << ", " << stats.failed << " not delivered, "
         << stats.dropped << " dropped (the export queue was full)\n";
  }
}

}  // namespace oe::telemetry

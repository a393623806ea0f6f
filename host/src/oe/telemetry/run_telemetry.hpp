// A run's OpenTelemetry export, end to end (docs/telemetry.md): the configuration from --otel and
// the environment, the batching exporter, and the tracer fed by the run's events and LLM calls.
// What `oe run` and `oe resume` hold for the length of a run; absent when telemetry is off, so a
// run without it pays nothing.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <string_view>

#include "oe/common/json.hpp"
#include "oe/llm/llm_service.hpp"
#include "oe/spec/experience.hpp"
#include "oe/telemetry/config.hpp"
#include "oe/telemetry/exporter.hpp"
#include "oe/telemetry/run_tracer.hpp"

namespace oe::telemetry {

// How long the end of a run waits for its last spans to reach the collector.
inline constexpr std::chrono::milliseconds kFlushDeadline{5000};

class RunTelemetry {
 public:
  // Null when telemetry is off. The configuration's warnings, and later the first failed
  // export, are written to `err`, which must outlive the object.
  static std::unique_ptr<RunTelemetry> start(bool flag, const Getenv& env,
                                             const spec::Experience& experience, std::ostream& err);
  RunTelemetry(Config config, const spec::Experience& experience, std::ostream& err);

  // The run's on_event: `next` (may be empty: no live progress) first, then the tracer.
  [[nodiscard]] events::Listener listener(events::Listener next);
  // What the run's LLM service reports its calls to (llm::Settings::observer).
  [[nodiscard]] llm::CallObserver* observer() { return &tracer_; }
  [[nodiscard]] const RunTracer& tracer() const { return tracer_; }

  // After the run (also one that could not start or stopped on a signal): ends the spans still
  // open with `status`, sends what is queued within kFlushDeadline, and warns on `err` about
  // spans that did not reach the collector. Never fails the run.
  void finish(std::string_view status);

 private:
  Config config_;
  std::ostream& err_;
  Exporter exporter_;
  RunTracer tracer_;
};

// The process environment (getenv), for RunTelemetry::start.
[[nodiscard]] Getenv processEnvironment();

}  // namespace oe::telemetry

// A run's trace, built from its events and its LLM calls (docs/telemetry.md): one
// `invoke_workflow <experience>` span for the run, under it one span per node attempt (a retry is
// a span of its own, a cache replay a span with oe.cache.hit=true), and under an attempt one
// `chat <model>` span per LLM call, with the GenAI semantic-convention attributes.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "oe/common/json.hpp"
#include "oe/events/event.hpp"
#include "oe/llm/llm_service.hpp"
#include "oe/telemetry/otlp.hpp"

namespace oe::telemetry {

class RunTracer final : public llm::CallObserver {
 public:
  using Sink = std::function<void(Span span)>;  // a finished span; must not block
  // `kinds`: the kind of every node of the experience, by node id.
  RunTracer(Sink sink, std::string experience_name,
            std::map<std::string, std::string, std::less<>> kinds);

  // [any thread] One event of the run (RunOptions::on_event): run.started, node.started,
  // node.retry, node.finished, node.failed, node.activity (a nested run's id), run.finished.
  // Parses the event only for the fields it needs (never node.started or node.finished).
  void onEvent(const events::Event& event);
  // [any worker thread] A `chat` span under the node's open attempt (the run span when none).
  void onLlmCall(const llm::CallRecord& call) override;
  // Ends what is still open (a run stopped between its events): the attempts with an error and
  // the run span with `status`. Nothing when the run never started or already ended.
  void finish(std::string_view status);

  [[nodiscard]] const std::string& traceId() const { return trace_id_; }
  [[nodiscard]] uint64_t spans() const;  // handed to the sink so far

 private:
  struct Attempt {
    std::string span_id;
    uint64_t start_ns = 0;
    int64_t attempt = 1;
    std::string phase;
    std::string sub_run_id;  // an experience node's nested run
  };
  Span nodeSpan(const std::string& node_id, const Attempt& attempt, uint64_t end_ns) const;
  // Ends the oldest open attempt of `node_id` (a new one starting and ending now when none is).
  void endAttempt(const std::string& node_id, const events::Event& event, StatusCode status,
                  std::string message);
  void endRun(std::string_view status, std::string reason);
  void emit(Span span);

  Sink sink_;
  std::string experience_name_;
  std::map<std::string, std::string, std::less<>> kinds_;
  IdGenerator ids_;  // under mutex_ (the constructor uses it before any other thread can)
  const std::string trace_id_;
  const std::string run_span_id_;

  mutable std::mutex mutex_;
  bool started_ = false;
  bool ended_ = false;
  uint64_t run_start_ns_ = 0;
  std::string run_id_;
  Attributes run_attributes_;
  // Open attempts per node, oldest first (several at once: the items of a for_each).
  std::map<std::string, std::deque<Attempt>, std::less<>> open_;
  uint64_t spans_ = 0;
};

}  // namespace oe::telemetry

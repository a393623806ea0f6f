// Spans from a run's events and LLM calls.
#include "oe/telemetry/run_tracer.hpp"

#include <chrono>
#include <utility>

namespace oe::telemetry {
namespace {

// The GenAI operation of a node kind (semantic conventions v1.41.0, gen-ai-agent-spans.md):
// LLM-driven kinds are agents, tool nodes tools, a nested experience a workflow.
std::string_view operationOf(std::string_view kind) {
  if (kind == "agent" || kind == "skill" || kind == "cli-agent") {
    return "invoke_agent";
  }
  if (kind == "tool") {
    return "execute_tool";
  }
  if (kind == "experience") {
    return "invoke_workflow";
  }
  return {};
}

// error.type must be low-cardinality: the status class, not the message.
std::string errorType(oe_status status) {
  switch (status) {
    case OE_CANCELLED:
      return "cancelled";
    case OE_DEADLINE_EXCEEDED:
      return "timeout";
    case OE_RESOURCE_EXHAUSTED:
      return "resource_exhausted";
    case OE_FAILED_PRECONDITION:
      return "failed_precondition";
    case OE_INVALID_ARGUMENT:
      return "invalid_argument";
    case OE_UNAVAILABLE:
      return "unavailable";
    case OE_UNAUTHENTICATED:
      return "unauthenticated";
    default:
      return "_OTHER";
  }
}

uint64_t unixNanos(std::chrono::system_clock::time_point at) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count());
}

std::string stringOf(const Json& event, const char* key) {
  auto it = event.find(key);
  return it != event.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

RunTracer::RunTracer(Sink sink, std::string experience_name,
                     std::map<std::string, std::string, std::less<>> kinds)
    : sink_(std::move(sink)),
      experience_name_(std::move(experience_name)),
      kinds_(std::move(kinds)),
      trace_id_(ids_.traceId()),
      run_span_id_(ids_.spanId()) {}

uint64_t RunTracer::spans() const {
  std::lock_guard lock(mutex_);
  return spans_;
}

void RunTracer::emit(Span span) {
  ++spans_;
  sink_(std::move(span));
}

void RunTracer::onEvent(const events::Event& live) {
  const std::string_view type = live.type();
  if (type == "node.ready" || type == "state.write" || type == "node.tokens") {
    return;  // the most frequent lines the tracer has no use for (LLM calls come as calls)
  }
  std::lock_guard lock(mutex_);
  if (type == "run.started") {
    const Json& event = live.json();
    started_ = true;
    run_start_ns_ = nowUnixNanos();
    run_id_ = stringOf(event, "run_id");
    for (const char* key : {"chain_id", "resumed_from", "parent_run_id"}) {
      if (std::string value = stringOf(event, key); !value.empty()) {
        run_attributes_.push_back({std::string("oe.") + key, std::move(value)});
      }
    }
    return;
  }
  if (!started_ || ended_) {
    return;
  }
  const std::string node_id(live.nodeId());
  if (type == "node.started") {
    open_[node_id].push_back(
        Attempt{ids_.spanId(), nowUnixNanos(), 1, std::string(live.phase()), {}});
  } else if (type == "node.retry") {
    const Json& event = live.json();
    // The failed attempt ends now; the next one starts after the backoff (the engine emits no
    // event when it does).
    const int64_t attempt = event.value("attempt", int64_t{1});
    const int64_t delay_ms = event.value("delay_ms", int64_t{0});
    std::string phase;
    if (auto it = open_.find(node_id); it != open_.end() && !it->second.empty()) {
      it->second.front().attempt = attempt;
      phase = it->second.front().phase;
    }
    endAttempt(node_id, live, StatusCode::kError, stringOf(event, "error"));
    open_[node_id].push_back(Attempt{ids_.spanId(),
                                     nowUnixNanos() + static_cast<uint64_t>(delay_ms) * 1000000,
                                     attempt + 1,
                                     std::move(phase),
                                     {}});
  } else if (type == "node.finished") {
    if (live.cached()) {
      // A replay from the node cache: no attempt ran; a span of no length says it was served.
      const uint64_t now = nowUnixNanos();
      Span span =
          nodeSpan(node_id, Attempt{ids_.spanId(), now, 0, std::string(live.phase()), {}}, now);
      span.attributes.push_back({"oe.cache.hit", true});
      emit(std::move(span));
      return;
    }
    endAttempt(node_id, live, StatusCode::kUnset, {});
  } else if (type == "node.failed") {
    endAttempt(node_id, live, StatusCode::kError, stringOf(live.json(), "error"));
  } else if (type == "node.activity") {
    const std::string sub_run_id = stringOf(live.json(), "sub_run_id");
    if (auto it = open_.find(node_id);
        !sub_run_id.empty() && it != open_.end() && !it->second.empty()) {
      it->second.front().sub_run_id = sub_run_id;
    }
  } else if (type == "run.finished") {
    endRun(stringOf(live.json(), "status"), stringOf(live.json(), "reason"));
  }
}

void RunTracer::onLlmCall(const llm::CallRecord& call) {
  std::lock_guard lock(mutex_);
  if (!started_ || ended_) {
    return;
  }
  Span span;
  span.trace_id = trace_id_;
  span.span_id = ids_.spanId();
  span.parent_span_id = run_span_id_;
  if (auto it = open_.find(call.node_id); it != open_.end() && !it->second.empty()) {
    span.parent_span_id = it->second.front().span_id;
  }
  const std::string& model = call.request_model.empty() ? call.response_model : call.request_model;
  span.name = model.empty() ? "chat" : "chat " + model;
  span.kind = SpanKind::kClient;
  span.start_ns = unixNanos(call.start);
  span.end_ns = unixNanos(call.end);
  Attributes& a = span.attributes;
  a.push_back({"gen_ai.operation.name", std::string("chat")});
  if (!call.provider.empty()) {
    a.push_back({"gen_ai.provider.name", call.provider});
  }
  if (!call.request_model.empty()) {
    a.push_back({"gen_ai.request.model", call.request_model});
  }
  if (!call.response_model.empty()) {
    a.push_back({"gen_ai.response.model", call.response_model});
  }
  if (call.status == OE_OK) {
    a.push_back({"gen_ai.usage.input_tokens", call.usage.input_tokens});
    a.push_back({"gen_ai.usage.output_tokens", call.usage.output_tokens});
    if (!call.finish_reason.empty()) {
      a.push_back({"gen_ai.response.finish_reasons", std::vector<std::string>{call.finish_reason}});
    }
    if (call.priced) {
      a.push_back({"oe.llm.cost_usd", call.usage.cost_usd});  // GenAI has no cost attribute
    }
  } else {
    a.push_back({"error.type", errorType(call.status)});
    span.status = StatusCode::kError;
    span.status_message = call.error;
  }
  a.push_back({"oe.node.id", call.node_id});
  if (call.replayed) {
    a.push_back({"oe.llm.replayed", true});
  }
  emit(std::move(span));
}

void RunTracer::finish(std::string_view status) {
  std::lock_guard lock(mutex_);
  if (started_ && !ended_) {
    endRun(status, "the run ended without run.finished");
  }
}

Span RunTracer::nodeSpan(const std::string& node_id, const Attempt& attempt,
                         uint64_t end_ns) const {
  Span span;
  span.trace_id = trace_id_;
  span.span_id = attempt.span_id;
  span.parent_span_id = run_span_id_;
  auto kind_it = kinds_.find(node_id);
  const std::string kind = kind_it == kinds_.end() ? std::string() : kind_it->second;
  const std::string_view operation = operationOf(kind);
  span.name = (operation.empty() ? kind : std::string(operation)) + " " + node_id;
  span.start_ns = attempt.start_ns;
  span.end_ns = std::max(end_ns, attempt.start_ns);
  Attributes& a = span.attributes;
  if (!operation.empty()) {
    a.push_back({"gen_ai.operation.name", std::string(operation)});
    if (operation == "execute_tool") {
      a.push_back({"gen_ai.tool.name", node_id});
    } else if (operation == "invoke_agent") {
      a.push_back({"gen_ai.agent.name", node_id});
    } else {
      a.push_back({"gen_ai.workflow.name", node_id});
    }
  }
  a.push_back({"oe.node.id", node_id});
  a.push_back({"oe.node.kind", kind});
  a.push_back({"oe.run.id", run_id_});
  if (attempt.attempt > 0) {
    a.push_back({"oe.attempt", attempt.attempt});
    a.push_back({"oe.cache.hit", false});
  }
  if (!attempt.phase.empty()) {
    a.push_back({"oe.phase", attempt.phase});
  }
  if (!attempt.sub_run_id.empty()) {
    a.push_back({"oe.sub_run_id", attempt.sub_run_id});
  }
  return span;
}

void RunTracer::endAttempt(const std::string& node_id, const events::Event& event,
                           StatusCode status, std::string message) {
  const uint64_t now = nowUnixNanos();
  Attempt attempt;
  if (auto it = open_.find(node_id); it != open_.end() && !it->second.empty()) {
    attempt = std::move(it->second.front());
    it->second.pop_front();
  } else {
    attempt = Attempt{ids_.spanId(), now, 1, std::string(event.phase()), {}};
  }
  Span span = nodeSpan(node_id, attempt, now);
  span.status = status;
  span.status_message = std::move(message);
  emit(std::move(span));
}

void RunTracer::endRun(std::string_view status, std::string reason) {
  ended_ = true;
  const uint64_t now = nowUnixNanos();
  for (auto& [node_id, attempts] : open_) {
    for (const Attempt& attempt : attempts) {
      Span span = nodeSpan(node_id, attempt, now);
      span.status = StatusCode::kError;
      span.status_message =
          "the run ended (" + std::string(status) + ") before this attempt finished";
      emit(std::move(span));
    }
  }
  open_.clear();
  Span span;
  span.trace_id = trace_id_;
  span.span_id = run_span_id_;
  span.name = "invoke_workflow " + experience_name_;
  span.start_ns = run_start_ns_;
  span.end_ns = std::max(now, run_start_ns_);
  span.attributes = {{"gen_ai.operation.name", std::string("invoke_workflow")},
                     {"gen_ai.workflow.name", experience_name_},
                     {"oe.run.id", run_id_},
                     {"oe.run.status", std::string(status)}};
  span.attributes.insert(span.attributes.end(), run_attributes_.begin(), run_attributes_.end());
  if (status == "failed" || status == "interrupted") {
    span.status = StatusCode::kError;
    span.status_message = reason.empty() ? "the run " + std::string(status) : reason;
  }
  emit(std::move(span));
}

}  // namespace oe::telemetry

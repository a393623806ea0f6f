// Spans from a run's events and LLM calls: one per node attempt under the run span, a retry as
// two, a cache replay marked, LLM calls under their attempt, everything open closed at the end.
#include "oe/telemetry/run_tracer.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace oe::telemetry {
namespace {

const AttributeValue* find(const Span& span, const std::string& key) {
  for (const auto& a : span.attributes) {
    if (a.key == key) {
      return &a.value;
    }
  }
  return nullptr;
}

class RunTracerTest : public ::testing::Test {
 protected:
  RunTracer tracer_{[this](Span span) { spans_.push_back(std::move(span)); },
                    "demo",
                    {{"t", "tool"}, {"g", "agent"}, {"d", "dataset"}, {"x", "experience"}}};
  std::vector<Span> spans_;

  void event(Json e) { tracer_.onEvent(events::Event(std::move(e))); }
  void start() { event({{"type", "run.started"}, {"run_id", "r1"}, {"chain_id", "r1"}}); }
  const Span& named(const std::string& name) {
    for (const auto& s : spans_) {
      if (s.name == name) {
        return s;
      }
    }
    ADD_FAILURE() << "no span " << name;
    return spans_.front();
  }
};

TEST_F(RunTracerTest, OneSpanPerNodeUnderTheRunSpan) {
  start();
  event({{"type", "node.started"}, {"node_id", "t"}});
  event({{"type", "node.finished"}, {"node_id", "t"}});
  event({{"type", "node.started"}, {"node_id", "d"}, {"phase", "load"}});
  event({{"type", "node.failed"}, {"node_id", "d"}, {"error", "no such file"}});
  event({{"type", "run.finished"}, {"status", "partial"}});
  ASSERT_EQ(spans_.size(), 3u);
  const Span& run = named("invoke_workflow demo");
  EXPECT_TRUE(run.parent_span_id.empty());
  EXPECT_EQ(std::get<std::string>(*find(run, "oe.run.status")), "partial");
  EXPECT_EQ(std::get<std::string>(*find(run, "oe.chain_id")), "r1");
  EXPECT_EQ(run.status, StatusCode::kUnset);
  const Span& tool = named("execute_tool t");
  EXPECT_EQ(tool.parent_span_id, run.span_id);
  EXPECT_EQ(tool.trace_id, run.trace_id);
  EXPECT_EQ(tool.trace_id, tracer_.traceId());
  EXPECT_EQ(std::get<std::string>(*find(tool, "gen_ai.operation.name")), "execute_tool");
  EXPECT_EQ(std::get<std::string>(*find(tool, "gen_ai.tool.name")), "t");
  EXPECT_EQ(std::get<int64_t>(*find(tool, "oe.attempt")), 1);
  EXPECT_FALSE(std::get<bool>(*find(tool, "oe.cache.hit")));
  EXPECT_LE(tool.start_ns, tool.end_ns);
  EXPECT_LE(run.start_ns, tool.start_ns);
  const Span& data = named("dataset d");  // no GenAI operation for a dataset
  EXPECT_EQ(find(data, "gen_ai.operation.name"), nullptr);
  EXPECT_EQ(data.status, StatusCode::kError);
  EXPECT_EQ(data.status_message, "no such file");
  EXPECT_EQ(std::get<std::string>(*find(data, "oe.phase")), "load");
  EXPECT_NE(data.span_id, tool.span_id);
}

TEST_F(RunTracerTest, ARetryIsTwoSpans) {
  start();
  event({{"type", "node.started"}, {"node_id", "t"}});
  event({{"type", "node.retry"},
         {"node_id", "t"},
         {"attempt", 1},
         {"error", "flaky"},
         {"delay_ms", 0}});
  event({{"type", "node.finished"}, {"node_id", "t"}});
  event({{"type", "run.finished"}, {"status", "success"}});
  ASSERT_EQ(spans_.size(), 3u);
  EXPECT_EQ(spans_[0].status, StatusCode::kError);
  EXPECT_EQ(spans_[0].status_message, "flaky");
  EXPECT_EQ(std::get<int64_t>(*find(spans_[0], "oe.attempt")), 1);
  EXPECT_EQ(spans_[1].status, StatusCode::kUnset);
  EXPECT_EQ(std::get<int64_t>(*find(spans_[1], "oe.attempt")), 2);
  EXPECT_NE(spans_[0].span_id, spans_[1].span_id);
  EXPECT_EQ(spans_[0].parent_span_id, spans_[2].span_id);
  EXPECT_EQ(spans_[1].parent_span_id, spans_[2].span_id);
}

TEST_F(RunTracerTest, ACacheReplayIsAMarkedSpan) {
  start();
  event({{"type", "node.finished"}, {"node_id", "t"}, {"cached", true}});
  event({{"type", "run.finished"}, {"status", "success"}});
  ASSERT_EQ(spans_.size(), 2u);
  EXPECT_TRUE(std::get<bool>(*find(spans_[0], "oe.cache.hit")));
  EXPECT_EQ(find(spans_[0], "oe.attempt"), nullptr);
}

TEST_F(RunTracerTest, AnLlmCallIsAChatSpanUnderItsAttempt) {
  start();
  event({{"type", "node.started"}, {"node_id", "g"}});
  llm::CallRecord call;
  call.node_id = "g";
  call.provider = "openai";
  call.request_model = "gpt-4o";
  call.response_model = "gpt-4o-2024-11-20";
  call.usage.input_tokens = 12;
  call.usage.output_tokens = 7;
  call.usage.cost_usd = 0.5;
  call.priced = true;
  call.finish_reason = "stop";
  call.start = std::chrono::system_clock::now();
  call.end = call.start + std::chrono::milliseconds(3);
  tracer_.onLlmCall(call);
  call.status = OE_UNAVAILABLE;
  call.error = "node \"g\": connection refused";
  tracer_.onLlmCall(call);
  event({{"type", "node.finished"}, {"node_id", "g"}});
  event({{"type", "run.finished"}, {"status", "success"}});
  ASSERT_EQ(spans_.size(), 4u);
  const Span& agent = named("invoke_agent g");
  EXPECT_EQ(std::get<std::string>(*find(agent, "gen_ai.agent.name")), "g");
  const Span& chat = spans_[0];
  EXPECT_EQ(chat.name, "chat gpt-4o");
  EXPECT_EQ(chat.kind, SpanKind::kClient);
  EXPECT_EQ(chat.parent_span_id, agent.span_id);
  EXPECT_EQ(chat.end_ns - chat.start_ns, 3000000u);
  EXPECT_EQ(std::get<std::string>(*find(chat, "gen_ai.operation.name")), "chat");
  EXPECT_EQ(std::get<std::string>(*find(chat, "gen_ai.provider.name")), "openai");
  EXPECT_EQ(std::get<std::string>(*find(chat, "gen_ai.request.model")), "gpt-4o");
  EXPECT_EQ(std::get<std::string>(*find(chat, "gen_ai.response.model")), "gpt-4o-2024-11-20");
  EXPECT_EQ(std::get<int64_t>(*find(chat, "gen_ai.usage.input_tokens")), 12);
  EXPECT_EQ(std::get<int64_t>(*find(chat, "gen_ai.usage.output_tokens")), 7);
  EXPECT_EQ(std::get<std::vector<std::string>>(*find(chat, "gen_ai.response.finish_reasons")),
            std::vector<std::string>{"stop"});
  EXPECT_DOUBLE_EQ(std::get<double>(*find(chat, "oe.llm.cost_usd")), 0.5);
  const Span& failed = spans_[1];
  EXPECT_EQ(failed.status, StatusCode::kError);
  EXPECT_EQ(std::get<std::string>(*find(failed, "error.type")), "unavailable");
  EXPECT_EQ(find(failed, "gen_ai.usage.input_tokens"), nullptr);
}

TEST_F(RunTracerTest, FinishClosesWhatIsOpenAndIgnoresLaterEvents) {
  start();
  event({{"type", "node.started"}, {"node_id", "x"}});
  event({{"type", "node.activity"}, {"node_id", "x"}, {"sub_run_id", "child-1"}});
  tracer_.finish("interrupted");
  event({{"type", "node.finished"}, {"node_id", "x"}});
  tracer_.finish("interrupted");
  ASSERT_EQ(spans_.size(), 2u);
  EXPECT_EQ(spans_[0].name, "invoke_workflow x");
  EXPECT_EQ(spans_[0].status, StatusCode::kError);
  EXPECT_EQ(std::get<std::string>(*find(spans_[0], "oe.sub_run_id")), "child-1");
  EXPECT_EQ(spans_[1].status, StatusCode::kError);
  EXPECT_EQ(tracer_.spans(), 2u);
}

TEST_F(RunTracerTest, NothingBeforeTheRunStarts) {
  event({{"type", "node.started"}, {"node_id", "t"}});
  event({{"type", "node.finished"}, {"node_id", "t"}});
  tracer_.finish("failed");
  EXPECT_TRUE(spans_.empty());
}

}  // namespace
}  // namespace oe::telemetry

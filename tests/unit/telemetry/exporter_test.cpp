// The batching exporter against a real local HTTP receiver on port 0: what arrives, in how many
// POSTs, and that a full queue, a refusing or absent collector cost spans and one warning, never
// a hang.
#include "oe/telemetry/exporter.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "support/fake_llm_server.hpp"

namespace oe::telemetry {
namespace {

using nlohmann::json;
using test::FakeLlmServer;
using test::FakeResponse;

Span spanNamed(const std::string& name) {
  IdGenerator ids;
  Span span;
  span.trace_id = ids.traceId();
  span.span_id = ids.spanId();
  span.name = name;
  span.start_ns = nowUnixNanos();
  span.end_ns = span.start_ns + 1;
  return span;
}

// Spans in every POST the receiver got.
size_t spansReceived(const FakeLlmServer& receiver) {
  size_t n = 0;
  for (const auto& request : receiver.requests()) {
    n += request.json()["resourceSpans"][0]["scopeSpans"][0]["spans"].size();
  }
  return n;
}

class ExporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    receiver_.setHandler(
        [](const test::RecordedRequest&) { return FakeLlmServer::json(200, json::object()); });
  }
  ExporterOptions options() {
    ExporterOptions o;
    o.url = receiver_.baseUrl() + "/v1/traces";
    o.resource = {{"service.name", std::string("test")}};
    o.scope_version = "9.9.9";
    o.warn = [this](const std::string& message) {
      std::lock_guard lock(mutex_);
      warnings_.push_back(message);
    };
    return o;
  }
  std::vector<std::string> warnings() {
    std::lock_guard lock(mutex_);
    return warnings_;
  }

  FakeLlmServer receiver_;
  std::mutex mutex_;
  std::vector<std::string> warnings_;
};

TEST_F(ExporterTest, ShutdownSendsEverythingAsOtlpJson) {
  ExporterOptions o = options();
  o.headers = {{"Authorization", "Bearer t0ken"}};
  Exporter exporter(o);
  exporter.submit(spanNamed("a"));
  exporter.submit(spanNamed("b"));
  EXPECT_TRUE(exporter.shutdown(std::chrono::seconds(30)));
  ASSERT_EQ(receiver_.requestCount(), 1u);
  const auto request = receiver_.requests()[0];
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.path, "/v1/traces");
  EXPECT_EQ(request.header("content-type"), "application/json");
  EXPECT_EQ(request.header("authorization"), "Bearer t0ken");
  const json body = request.json();
  EXPECT_EQ(body["resourceSpans"][0]["resource"]["attributes"][0]["value"]["stringValue"], "test");
  const json& spans = body["resourceSpans"][0]["scopeSpans"][0]["spans"];
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0]["name"], "a");
  EXPECT_EQ(spans[1]["name"], "b");
  EXPECT_EQ(exporter.stats().exported, 2u);
  EXPECT_TRUE(warnings().empty());
}

TEST_F(ExporterTest, SendsInBatchesOfMaxBatch) {
  ExporterOptions o = options();
  o.max_batch = 2;
  Exporter exporter(o);
  for (int i = 0; i < 5; ++i) {
    exporter.submit(spanNamed("s" + std::to_string(i)));
  }
  EXPECT_TRUE(exporter.shutdown(std::chrono::seconds(30)));
  EXPECT_EQ(receiver_.requestCount(), 3u);  // 2 + 2 + 1
  EXPECT_EQ(spansReceived(receiver_), 5u);
}

TEST_F(ExporterTest, AFullQueueDropsAndCountsInsteadOfBlocking) {
  ExporterOptions o = options();
  o.max_queue = 3;
  o.max_batch = 100;                         // never reached: the thread sends only at shutdown,
  o.schedule_delay = std::chrono::hours(1);  // so the queue fills deterministically
  Exporter exporter(o);
  for (int i = 0; i < 5; ++i) {
    exporter.submit(spanNamed("s"));
  }
  EXPECT_FALSE(exporter.shutdown(std::chrono::seconds(30)));
  EXPECT_EQ(exporter.stats().dropped, 2u);
  EXPECT_EQ(exporter.stats().exported, 3u);
  EXPECT_EQ(spansReceived(receiver_), 3u);
  exporter.submit(spanNamed("late"));  // after shutdown: dropped, no crash
  EXPECT_EQ(exporter.stats().dropped, 3u);
}

TEST_F(ExporterTest, ARefusingCollectorWarnsOnceAndCountsTheSpans) {
  receiver_.setHandler(
      [](const test::RecordedRequest&) { return FakeLlmServer::serverError(503, "overloaded"); });
  ExporterOptions o = options();
  o.max_batch = 1;
  Exporter exporter(o);
  exporter.submit(spanNamed("a"));
  exporter.submit(spanNamed("b"));
  EXPECT_FALSE(exporter.shutdown(std::chrono::seconds(30)));
  EXPECT_EQ(exporter.stats().failed, 2u);
  EXPECT_EQ(exporter.stats().exported, 0u);
  const auto said = warnings();
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("HTTP 503"), std::string::npos) << said[0];
  EXPECT_NE(said[0].find(o.url), std::string::npos) << said[0];
}

TEST_F(ExporterTest, APartialSuccessIsReported) {
  receiver_.setHandler([](const test::RecordedRequest&) {
    return FakeLlmServer::json(
        200, {{"partialSuccess", {{"rejectedSpans", "1"}, {"errorMessage", "bad span"}}}});
  });
  Exporter exporter(options());
  exporter.submit(spanNamed("a"));
  EXPECT_FALSE(exporter.shutdown(std::chrono::seconds(30)));
  const auto said = warnings();
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("bad span"), std::string::npos) << said[0];
}

TEST_F(ExporterTest, ACollectorThatIsDownCostsAWarning) {
  FakeLlmServer gone;
  const std::string url = gone.baseUrl() + "/v1/traces";
  gone.stop();  // the port is closed now: connections are refused
  ExporterOptions o = options();
  o.url = url;
  Exporter exporter(o);
  exporter.submit(spanNamed("a"));
  EXPECT_FALSE(exporter.shutdown(std::chrono::seconds(30)));
  EXPECT_EQ(exporter.stats().failed, 1u);
  ASSERT_EQ(warnings().size(), 1u);
  EXPECT_NE(warnings()[0].find(url), std::string::npos) << warnings()[0];
}

TEST_F(ExporterTest, AHungCollectorIsAbandonedAtTheDeadline) {
  receiver_.setHandler([](const test::RecordedRequest&) {
    return FakeLlmServer::stalled(FakeResponse::Stall::kBeforeHeaders);
  });
  Exporter exporter(options());
  exporter.submit(spanNamed("a"));
  EXPECT_FALSE(exporter.shutdown(std::chrono::milliseconds(100)));
  EXPECT_EQ(exporter.stats().failed, 1u);
  EXPECT_EQ(exporter.stats().exported, 0u);
}

TEST_F(ExporterTest, ManyThreadsSubmittingLoseNothingUncounted) {
  ExporterOptions o = options();
  o.max_batch = 64;
  o.max_queue = 256;
  Exporter exporter(o);
  constexpr int kThreads = 4;
  constexpr int kEach = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&exporter] {
      for (int i = 0; i < kEach; ++i) {
        exporter.submit(spanNamed("s"));
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  exporter.shutdown(std::chrono::seconds(60));
  const ExporterStats stats = exporter.stats();
  EXPECT_EQ(stats.exported + stats.dropped + stats.failed, uint64_t{kThreads * kEach});
  EXPECT_EQ(stats.failed, 0u);
  EXPECT_EQ(spansReceived(receiver_), stats.exported);
}

}  // namespace
}  // namespace oe::telemetry

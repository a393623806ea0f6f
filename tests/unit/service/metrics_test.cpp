// GET /metrics over real runs: runs by status, the queue's depth, node durations as a
// histogram, tokens and cost; label values escaped; and on PostgreSQL the workers of oe_workers
// with their leases and the attempts waiting.
#include "oe/service/metrics.hpp"

#include <gtest/gtest.h>

#include "oe/pg/connection.hpp"
#include "support/pg_test_db.hpp"
#include "unit/service/service_fixture.hpp"

namespace oe::service::test {
namespace {

class MetricsTest : public ServiceTest {
 protected:
  std::string scrape() {
    const auto response = call("GET", "/metrics");
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.content_type.rfind("text/plain; version=0.0.4", 0), 0U);
    return response.body;
  }
};

// The value of the sample line that starts with `series` (its name and labels), or -1.
double sample(const std::string& text, const std::string& series) {
  const auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) {
    return -1;
  }
  return std::stod(text.substr(at + series.size() + 2));
}

TEST(PromLabelTest, EscapesBackslashQuoteAndNewline) {
  EXPECT_EQ(promLabel("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(promLabel("plain"), "plain");
}

TEST_F(MetricsTest, RunsQueueDurationsTokensAndCost) {
  writeToolExperience(root() / "greeter", "greeter");
  // Different args each time: a cache hit is not a call that ran, and has no duration.
  ASSERT_FALSE(run(root() / "greeter").empty());
  ASSERT_FALSE(run(root() / "greeter", R"({"who":"bob"})").empty());
  ASSERT_FALSE(run(root() / "greeter", R"({"fail":true})").empty());
  buildRouter({}, [] {
    return std::vector<QueueEntry>{{"q1", "greeter", "queued", 5, "", 0},
                                   {"q2", "greeter", "queued", 5, "", 0},
                                   {"q3", "greeter", "cancelled", 5, "", 1000}};
  });
  const std::string text = scrape();
  EXPECT_EQ(sample(text, R"(oe_runs{experience="greeter",status="succeeded"})"), 2) << text;
  EXPECT_EQ(sample(text, R"(oe_runs{experience="greeter",status="failed"})"), 1);
  EXPECT_EQ(sample(text, R"(oe_runs{experience="greeter",status="queued"})"), 2);
  EXPECT_EQ(sample(text, "oe_queue_depth"), 2) << "a run cancelled while queued waits no more";
  EXPECT_EQ(sample(text, R"(oe_runs{experience="greeter",status="cancelled"})"), 1)
      << "a run cancelled while queued has no log and is still a cancelled run";
  EXPECT_EQ(sample(text, R"(oe_node_duration_seconds_count{experience="greeter",node="greet"})"),
            3);
  EXPECT_EQ(
      sample(text,
             R"(oe_node_duration_seconds_bucket{experience="greeter",node="greet",le="+Inf"})"),
      3);
  EXPECT_GE(
      sample(text,
             R"(oe_node_duration_seconds_bucket{experience="greeter",node="greet",le="0.1"})"),
      0)
      << "bucket bounds are written as their shortest text";
  EXPECT_GT(sample(text, R"(oe_node_duration_seconds_sum{experience="greeter",node="greet"})"), 0);
  EXPECT_EQ(sample(text, R"(oe_llm_tokens_total{experience="greeter",direction="input"})"), 21);
  EXPECT_EQ(sample(text, R"(oe_llm_tokens_total{experience="greeter",direction="output"})"), 9);
  EXPECT_DOUBLE_EQ(sample(text, R"(oe_llm_cost_usd_total{experience="greeter"})"), 0.75);
  EXPECT_NE(text.find("# TYPE oe_node_duration_seconds histogram\n"), std::string::npos);
  EXPECT_EQ(text.find("oe_store_up"), std::string::npos);  // SQLite: no store part
  // A second scrape reads the same from the cache of unchanged logs.
  EXPECT_EQ(scrape(), text);
}

TEST_F(MetricsTest, WorkersLeasesAndWaitingAttemptsOnPostgresql) {
  oe::test::PgTestDb db;
  writeToolExperience(root() / "greeter", "greeter");
  ASSERT_FALSE(run(root() / "greeter", "{}", {"--store", db.url()}).empty());
  auto conn = pg::Connection::open(db.url());
  ASSERT_TRUE(conn) << conn.error().message;
  for (const char* sql :
       {"INSERT INTO oe_workers (id, host, pid, queues, concurrency) VALUES "
        "('w\"1', 'h1', 10, '{default}', 4), ('w2', 'h2', 11, '{gpu}', 1)",
        "UPDATE oe_workers SET stopped_at = now() WHERE id = 'w2'",
        "INSERT INTO oe_attempts (run_id, node_id, call_key, attempt, queue, kind, status, "
        "lease_owner, config, request) VALUES "
        "('r', 'a', 'k1', 1, 'default', 'tool', 'leased', 'w\"1', '{}', '{}'), "
        "('r', 'b', 'k2', 1, 'default', 'tool', 'ready', NULL, '{}', '{}'), "
        "('r', 'c', 'k3', 1, 'gpu', 'tool', 'ready', NULL, '{}', '{}'), "
        "('r', 'd', 'k4', 1, 'gpu', 'tool', 'ready', NULL, '{}', '{}')"}) {
    auto done = (*conn)->exec(sql);
    ASSERT_TRUE(done) << done.error().message;
  }
  buildRouter(db.url());
  const std::string text = scrape();
  EXPECT_EQ(sample(text, "oe_store_up"), 1) << text;
  EXPECT_EQ(sample(text, R"(oe_worker_up{worker="w\"1",host="h1"})"), 1) << text;
  EXPECT_EQ(sample(text, R"(oe_worker_up{worker="w2",host="h2"})"), 0);
  EXPECT_EQ(sample(text, R"(oe_worker_leases{worker="w\"1"})"), 1);
  EXPECT_EQ(sample(text, R"(oe_worker_leases{worker="w2"})"), 0);
  EXPECT_EQ(sample(text, R"(oe_worker_concurrency{worker="w\"1"})"), 4);
  EXPECT_GE(sample(text, R"(oe_worker_heartbeat_age_seconds{worker="w2"})"), 0);
  EXPECT_EQ(sample(text, R"(oe_attempts_waiting{queue="default"})"), 1);
  EXPECT_EQ(sample(text, R"(oe_attempts_waiting{queue="gpu"})"), 2);
  EXPECT_EQ(sample(text, R"(oe_runs{experience="greeter",status="succeeded"})"), 1);
}

TEST_F(MetricsTest, AStoreThatCannotBeReachedIsStoreUpZero) {
  writeToolExperience(root() / "greeter", "greeter");
  buildRouter("postgresql:///nope?host=" + (dir_.path() / "no-socket").string() + "&port=1");
  EXPECT_EQ(sample(scrape(), "oe_store_up"), 0);
}

}  // namespace
}  // namespace oe::service::test

namespace oe::service::test {
namespace {

// A generated graph does not make a series per node: beyond kMaxNodeSeries node ids (in id
// order) the calls share node="(other)", and none is lost.
TEST(RunStatsTest, NodesBeyondTheCapShareOneSeries) {
  runs::RunModel model;
  for (int i = 0; i < 150; ++i) {
    runs::Call call;
    char id[16];
    std::snprintf(id, sizeof id, "n%03d", i);
    call.label = id;
    call.started = 1000;
    call.ended = 1000 + i;
    model.calls.push_back(call);
  }
  runs::Call item;  // a for_each item's call counts under its node
  item.label = "n000#3";
  item.started = 0;
  item.ended = 5;
  model.calls.push_back(item);
  const RunStats stats = runStatsOf(model);
  ASSERT_EQ(stats.call_ms.size(), kMaxNodeSeries + 1);
  EXPECT_EQ(stats.call_ms.at("n000").size(), 2U);
  EXPECT_EQ(stats.call_ms.count("n099"), 1U);
  EXPECT_EQ(stats.call_ms.count("n100"), 0U);
  EXPECT_EQ(stats.call_ms.at(std::string(kOtherNodes)).size(), 50U);
}

}  // namespace
}  // namespace oe::service::test

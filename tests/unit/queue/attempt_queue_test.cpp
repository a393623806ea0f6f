// The work queue's SQL against a real PostgreSQL server: claims, leases, fences, rescue, cancel.
#include "oe/queue/attempt_queue.hpp"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "oe/pg/schema.hpp"
#include "support/pg_test_db.hpp"

namespace oe::queue {
namespace {

using std::chrono::milliseconds;

class AttemptQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto conn = pg::Connection::open(db_.url());
    ASSERT_TRUE(conn) << conn.error().message;
    conn_ = std::move(conn).value();
    auto migrated = pg::migrate(*conn_);
    ASSERT_TRUE(migrated) << migrated.error().message;
    queue_ = std::make_unique<AttemptQueue>(*conn_);
  }

  static NewAttempt attempt(std::string node, std::string queue = "default") {
    NewAttempt a;
    a.run_id = "run-1";
    a.node_id = node;
    a.call_key = node;
    a.queue = std::move(queue);
    a.kind = "tool";
    a.config = R"({"node":{"id":")" + node + R"("}})";
    a.request = R"({"args":{"quote":"it's \"x\" \\ y"}})";
    a.cache_key = "key-" + node;
    return a;
  }

  std::vector<int64_t> enqueue(std::vector<NewAttempt> attempts) {
    auto ids = queue_->enqueue(attempts, /*notify=*/false);
    EXPECT_TRUE(ids) << ids.error().message;
    return ids ? *ids : std::vector<int64_t>{};
  }

  std::vector<Claimed> claim(const std::string& worker, int max,
                             std::vector<std::string> queues = {"default"},
                             milliseconds lease = milliseconds(60'000)) {
    auto claimed = queue_->claim(worker, queues, max, lease);
    EXPECT_TRUE(claimed) << claimed.error().message;
    return claimed ? *claimed : std::vector<Claimed>{};
  }

  std::string statusOf(int64_t id) {
    auto rows = conn_->exec("SELECT status FROM oe_attempts WHERE id = $1", {id});
    return rows && rows->size() == 1 ? std::string(rows->text(0, 0)) : "?";
  }

  test::PgTestDb db_;
  std::unique_ptr<pg::Connection> conn_;
  std::unique_ptr<AttemptQueue> queue_;
};

// A completion without a cache entry or events.
Completion result(int64_t id, int64_t fence, bool ok, int status, std::string response,
                  std::string error = "") {
  Completion c;
  c.id = id;
  c.fence = fence;
  c.ok = ok;
  c.result_status = status;
  c.response = std::move(response);
  c.error = std::move(error);
  return c;
}

TEST_F(AttemptQueueTest, ClaimsOldestFirstAndCarriesEverythingTheWorkerNeeds) {
  NewAttempt timed = attempt("b");
  timed.timeout_ms = 1500;
  timed.attempt = 2;
  const auto ids = enqueue({attempt("a"), timed, attempt("c")});
  ASSERT_EQ(ids.size(), 3u);

  auto first = claim("w1", 2);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].id, ids[0]);
  EXPECT_EQ(first[0].node_id, "a");
  EXPECT_EQ(first[0].request, R"({"args":{"quote":"it's \"x\" \\ y"}})");
  EXPECT_EQ(first[0].config, R"({"node":{"id":"a"}})");
  EXPECT_EQ(first[0].cache_key, "key-a");
  EXPECT_FALSE(first[0].timeout_ms);
  EXPECT_EQ(first[0].fence, 1);
  EXPECT_EQ(first[1].node_id, "b");
  EXPECT_EQ(first[1].attempt, 2);
  EXPECT_EQ(first[1].timeout_ms, 1500);

  auto rest = claim("w2", 10);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].node_id, "c");
  EXPECT_TRUE(claim("w3", 10).empty());
  EXPECT_EQ(statusOf(ids[0]), "leased");
}

// The dispatcher's round sent again (its first answer lost with the connection, or its NOTIFY
// failed after the insert committed): the same attempts, found, not added twice, ids in order.
TEST_F(AttemptQueueTest, EnqueueingTheSameNumberedAttemptsAgainAddsNothing) {
  std::vector<NewAttempt> batch = {attempt("a"), attempt("b"), attempt("c")};
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i].seq = static_cast<int64_t>(i + 7);
  }
  const auto first = enqueue({batch[0], batch[1]});
  ASSERT_EQ(first.size(), 2u);
  const auto again = enqueue(batch);  // a and b again, with c new
  ASSERT_EQ(again.size(), 3u);
  EXPECT_EQ(again[0], first[0]);
  EXPECT_EQ(again[1], first[1]);
  EXPECT_NE(again[2], first[0]);
  EXPECT_NE(again[2], first[1]);
  auto rows = conn_->exec("SELECT count(*) FROM oe_attempts");
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->int64(0, 0), 3);
  // Unnumbered attempts are always new, and never meet a numbered one.
  const auto plain = enqueue({attempt("d"), attempt("e")});
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_LT(plain[0], plain[1]);
  EXPECT_EQ(conn_->exec("SELECT count(*) FROM oe_attempts")->int64(0, 0), 5);
}

TEST_F(AttemptQueueTest, AWorkerOnlyClaimsTheQueuesItServes) {
  enqueue({attempt("cpu"), attempt("gpu", "gpu")});
  auto gpu = claim("w-gpu", 10, {"gpu"});
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_EQ(gpu[0].node_id, "gpu");
  EXPECT_EQ(gpu[0].queue, "gpu");
  auto both = claim("w-both", 10, {"default", "gpu"});
  ASSERT_EQ(both.size(), 1u);
  EXPECT_EQ(both[0].node_id, "cpu");
}

TEST_F(AttemptQueueTest, ConcurrentWorkersNeverClaimTheSameAttempt) {
  std::vector<NewAttempt> many;
  for (int i = 0; i < 200; ++i) {
    many.push_back(attempt("n" + std::to_string(i)));
  }
  enqueue(many);
  std::vector<std::vector<int64_t>> got(4);
  std::vector<std::thread> workers;
  for (size_t w = 0; w < got.size(); ++w) {
    workers.emplace_back([&, w] {
      auto conn = pg::Connection::open(db_.url());
      ASSERT_TRUE(conn);
      AttemptQueue queue(**conn);
      const std::string me = "w" + std::to_string(w);
      for (;;) {
        auto claimed = queue.claim(me, {"default"}, 7, milliseconds(60'000));
        ASSERT_TRUE(claimed) << claimed.error().message;
        if (claimed->empty()) {
          return;
        }
        for (const Claimed& c : *claimed) {
          got[w].push_back(c.id);
        }
      }
    });
  }
  for (auto& t : workers) {
    t.join();
  }
  std::set<int64_t> all;
  size_t total = 0;
  for (const auto& ids : got) {
    total += ids.size();
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(total, 200u);
  EXPECT_EQ(all.size(), 200u);
}

TEST_F(AttemptQueueTest, ACompletionCommitsTheResultTheCacheEntryAndTheEventsTogether) {
  enqueue({attempt("a")});
  auto held = claim("w1", 1);
  ASSERT_EQ(held.size(), 1u);
  Completion done{held[0].id,
                  held[0].fence,
                  true,
                  0,
                  R"({"state_delta":{"x":1}})",
                  "",
                  CacheEntry{"key-a", R"({"state_delta":{"x":1}})"},
                  {R"({"type":"node.activity","node_id":"a"})"},
                  R"({"input_tokens":7,"llm_calls":1})"};
  auto accepted = queue_->complete("w1", done);
  ASSERT_TRUE(accepted) << accepted.error().message;
  EXPECT_TRUE(*accepted);

  auto cache = conn_->exec("SELECT node_id, run_id, value FROM oe_cache WHERE key = 'key-a'");
  ASSERT_TRUE(cache);
  ASSERT_EQ(cache->size(), 1);
  EXPECT_EQ(cache->text(0, 0), "a");
  EXPECT_EQ(cache->text(0, 1), "run-1");
  // The plugin's events ride with the result: the coordinator logs them when it collects it.
  auto events = conn_->exec("SELECT events FROM oe_attempts WHERE id = $1", {held[0].id});
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 1);
  EXPECT_EQ(events->text(0, 0), R"([{"type":"node.activity","node_id":"a"}])");

  auto finished = queue_->collect("run-1");
  ASSERT_TRUE(finished) << finished.error().message;
  ASSERT_EQ(finished->size(), 1u);
  EXPECT_TRUE((*finished)[0].ok);
  EXPECT_EQ((*finished)[0].response, R"({"state_delta":{"x":1}})");
  EXPECT_EQ((*finished)[0].llm_usage, R"({"input_tokens":7,"llm_calls":1})");
  EXPECT_EQ((*finished)[0].events, R"([{"type":"node.activity","node_id":"a"}])");
  auto again = queue_->collect("run-1");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->size(), 1u);  // until it is marked collected, it is read again
  ASSERT_TRUE(queue_->markCollected({(*finished)[0].id}));
  auto after = queue_->collect("run-1");
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->empty());
}

TEST_F(AttemptQueueTest, ALateCompletionWithAStaleFenceIsRefusedAndWritesNothing) {
  enqueue({attempt("a")});
  auto first = claim("w1", 1, {"default"}, milliseconds(1));
  ASSERT_EQ(first.size(), 1u);
  // w1's lease runs out (it hangs, or was kill -9'd): the rescuer puts the attempt back.
  int64_t rescued = 0;
  while (rescued == 0) {  // the 1 ms lease ends within a round trip or two
    auto r = queue_->rescueExpired();
    ASSERT_TRUE(r) << r.error().message;
    rescued = *r;
  }
  EXPECT_EQ(statusOf(first[0].id), "ready");
  auto second = claim("w2", 1);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].id, first[0].id);
  EXPECT_EQ(second[0].fence, first[0].fence + 1);

  // w1 comes back with its result: refused, and neither its cache entry nor its events land.
  Completion late{first[0].id,
                  first[0].fence,
                  true,
                  0,
                  R"({"state_delta":{"x":"late"}})",
                  "",
                  CacheEntry{"key-late", "{}"},
                  {R"({"type":"node.activity"})"},
                  ""};
  auto refused = queue_->complete("w1", late);
  ASSERT_TRUE(refused) << refused.error().message;
  EXPECT_FALSE(*refused);
  // The same fence from another worker is refused too (the owner is part of the guard).
  EXPECT_FALSE(*queue_->complete("w1", result(second[0].id, second[0].fence, true, 0, "{}")));
  auto stray = conn_->exec(
      "SELECT (SELECT count(*) FROM oe_cache WHERE key = 'key-late') + (SELECT count(*) FROM "
      "oe_attempts WHERE events IS NOT NULL)");
  ASSERT_TRUE(stray);
  EXPECT_EQ(stray->int64(0, 0), 0);

  auto on_time = queue_->complete(
      "w2", result(second[0].id, second[0].fence, true, 0, R"({"state_delta":{"x":2}})"));
  ASSERT_TRUE(on_time);
  EXPECT_TRUE(*on_time);
  // Completed once: the same completion again is refused (status is no longer leased).
  EXPECT_FALSE(*queue_->complete(
      "w2", result(second[0].id, second[0].fence, true, 0, R"({"state_delta":{"x":3}})")));
  auto finished = queue_->collect("run-1");
  ASSERT_TRUE(finished);
  ASSERT_EQ(finished->size(), 1u);
  EXPECT_EQ((*finished)[0].response, R"({"state_delta":{"x":2}})");
}

TEST_F(AttemptQueueTest, RenewKeepsLiveLeasesAndReportsTheLostOnes) {
  enqueue({attempt("a"), attempt("b"), attempt("c")});
  auto held = claim("w1", 3);
  ASSERT_EQ(held.size(), 3u);
  // The coordinator cancels b (timeout_ms, fail_run); c expired and went to another worker.
  ASSERT_TRUE(*queue_->cancel(held[1].id));
  ASSERT_TRUE(conn_->exec(
      "UPDATE oe_attempts SET fence = fence + 1, lease_owner = 'w2' WHERE id = $1", {held[2].id}));

  auto lost = queue_->renew(
      "w1", {{held[0].id, held[0].fence}, {held[1].id, held[1].fence}, {held[2].id, held[2].fence}},
      milliseconds(60'000));
  ASSERT_TRUE(lost) << lost.error().message;
  EXPECT_EQ(*lost, (std::vector<int64_t>{held[1].id, held[2].id}));
  // A cancelled attempt's completion is refused; nothing is collected for it.
  EXPECT_FALSE(*queue_->complete("w1", result(held[1].id, held[1].fence, true, 0, "{}")));
  EXPECT_EQ(statusOf(held[1].id), "cancelled");
  // A renewed lease does not expire under the rescuer.
  EXPECT_EQ(*queue_->rescueExpired(), 0);
  EXPECT_EQ(statusOf(held[0].id), "leased");
}

TEST_F(AttemptQueueTest, CancellingARunStopsItsUnfinishedAttemptsOnly) {
  NewAttempt other = attempt("z");
  other.run_id = "run-2";
  enqueue({attempt("a"), attempt("b"), other});
  auto held = claim("w1", 1);
  ASSERT_EQ(held.size(), 1u);
  ASSERT_TRUE(*queue_->complete("w1", result(held[0].id, held[0].fence, false, 3, "", "boom")));
  auto cancelled = queue_->cancelRun("run-1");
  ASSERT_TRUE(cancelled);
  EXPECT_EQ(*cancelled, 1);  // b; a had finished (failed)
  auto rest = claim("w1", 10);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].run_id, "run-2");
  auto finished = queue_->collect("run-1");
  ASSERT_TRUE(finished);
  ASSERT_EQ(finished->size(), 1u);
  EXPECT_FALSE((*finished)[0].ok);
  EXPECT_EQ((*finished)[0].result_status, 3);
  EXPECT_EQ((*finished)[0].error, "boom");
}

TEST_F(AttemptQueueTest, WorkersRegisterHeartbeatAndStop) {
  ASSERT_TRUE(queue_->registerWorker("w1", "host-a", 42, {"default", "g\"pu"}, 25));
  ASSERT_TRUE(queue_->heartbeatWorker("w1"));
  ASSERT_TRUE(queue_->stopWorker("w1"));
  auto rows = conn_->exec(
      "SELECT host, pid, queues[2], concurrency, stopped_at IS NOT NULL FROM oe_workers");
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 1);
  EXPECT_EQ(rows->text(0, 0), "host-a");
  EXPECT_EQ(rows->int64(0, 1), 42);
  EXPECT_EQ(rows->text(0, 2), "g\"pu");
  EXPECT_EQ(rows->int64(0, 3), 25);
  EXPECT_TRUE(rows->boolean(0, 4));
}

}  // namespace
}  // namespace oe::queue

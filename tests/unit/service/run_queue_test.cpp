// The run queue on a real SQLite file and on the shared PostgreSQL test cluster: start order
// (priority, then FIFO), the global and per-experience caps, entries that outlive the queue
// object, one server per SQLite file, and the takeover of a dead server's runs.
#include "oe/service/run_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "support/pg_test_db.hpp"
#include "support/temp_dir.hpp"

namespace oe::service {
namespace {

QueuedRun entry(const std::string& id, const std::string& folder, int priority, int64_t at,
                int max_concurrent = 0) {
  QueuedRun e;
  e.run_id = id;
  e.experience = folder;
  e.folder = folder;
  e.priority = priority;
  e.enqueued_ms = at;
  e.max_concurrent = max_concurrent;
  e.args = Json{{"n", id}};
  return e;
}

std::vector<std::string> claimAll(RunQueue& q, const ClaimLimits& limits) {
  std::vector<std::string> order;
  while (true) {
    auto c = q.claim("me:1:a", limits, 60000);
    EXPECT_TRUE(c) << c.error().message;
    if (!c || !*c) {
      return order;
    }
    order.push_back((*c)->run_id);
  }
}

// The behaviour both backends share, given a way to open the same queue again.
void startOrderAndLimits(const std::function<std::unique_ptr<RunQueue>()>& open) {
  auto q = open();
  ASSERT_TRUE(q->enqueue(entry("low", "a", 1, 100)));
  ASSERT_TRUE(q->enqueue(entry("mid-late", "b", 5, 300)));
  ASSERT_TRUE(q->enqueue(entry("mid-early", "c", 5, 200)));
  ASSERT_TRUE(q->enqueue(entry("high", "a", 10, 400)));
  EXPECT_FALSE(q->enqueue(entry("high", "a", 10, 400))) << "an id is queued once";
  // Highest priority first, FIFO within a priority.
  auto listed = q->list();
  ASSERT_TRUE(listed);
  std::vector<std::string> ids;
  for (const auto& e : *listed) {
    ids.push_back(e.run_id);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"high", "mid-early", "mid-late", "low"}));
  EXPECT_EQ(listed->front().args, (Json{{"n", "high"}}));
  EXPECT_EQ(listed->front().toJson()["status"], "queued");

  // A global cap of 2: two start, in order.
  EXPECT_EQ(claimAll(*q, {2, 0}), (std::vector<std::string>{"high", "mid-early"}));
  // A cap of 1 per experience: "a" runs already ("high"), so "low" waits and "mid-late" starts.
  EXPECT_EQ(claimAll(*q, {0, 1}), (std::vector<std::string>{"mid-late"}));
  ASSERT_TRUE(q->remove("high"));
  EXPECT_EQ(claimAll(*q, {0, 1}), (std::vector<std::string>{"low"}));
  auto found = q->find("low");
  ASSERT_TRUE(found && *found);
  EXPECT_EQ((*found)->state, "running");
  EXPECT_EQ((*found)->owner, "me:1:a");
  EXPECT_FALSE(*q->removeQueued("low")) << "a running entry is not removed as queued";
  EXPECT_TRUE(*q->remove("low"));
  EXPECT_FALSE(*q->remove("low"));
}

void limitOfTheExperienceWins(const std::function<std::unique_ptr<RunQueue>()>& open) {
  auto q = open();
  ASSERT_TRUE(q->enqueue(entry("x1", "x", 5, 1, /*max_concurrent=*/2)));
  ASSERT_TRUE(q->enqueue(entry("x2", "x", 5, 2, 2)));
  ASSERT_TRUE(q->enqueue(entry("x3", "x", 5, 3, 2)));
  ASSERT_TRUE(q->enqueue(entry("y1", "y", 5, 4)));
  ASSERT_TRUE(q->enqueue(entry("y2", "y", 5, 5)));
  // runtime.max_concurrent_runs: 2 for x, the default 1 for y.
  EXPECT_EQ(claimAll(*q, {0, 1}), (std::vector<std::string>{"x1", "x2", "y1"}));
}

void survivesReopen(const std::function<std::unique_ptr<RunQueue>()>& open) {
  {
    auto q = open();
    ASSERT_TRUE(q->enqueue(entry("kept", "a", 7, 10)));
    ASSERT_TRUE(q->enqueue(entry("started", "b", 3, 20)));
    auto c = q->claim("dead:42:x", {0, 0}, 60000);
    ASSERT_TRUE(c && *c);
    EXPECT_EQ((*c)->run_id, "kept");
    ASSERT_TRUE(q->setPid("kept", 4242));
  }
  auto q = open();
  auto listed = q->list();
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 2U);
  EXPECT_EQ((*listed)[0].run_id, "kept");
  EXPECT_EQ((*listed)[0].state, "running");
  EXPECT_EQ((*listed)[0].pid, 4242);
  EXPECT_EQ((*listed)[1].run_id, "started");
  EXPECT_EQ((*listed)[1].state, "queued");
  // The running entry's owner is gone: the new server takes it over, then requeues it.
  auto taken = q->takeOverExpired("new:1:y", nowMs() + 120000, 60000);
  ASSERT_TRUE(taken);
  ASSERT_EQ(taken->size(), 1U);
  EXPECT_EQ(taken->front().run_id, "kept");
  EXPECT_EQ(taken->front().owner, "new:1:y");
  ASSERT_TRUE(q->requeue(taken->front()));
  EXPECT_EQ(claimAll(*q, {0, 0}), (std::vector<std::string>{"kept", "started"}));
}

TEST(SqliteRunQueue, StartsByPriorityThenFifoUnderTheCaps) {
  oe::test::TempDir dir;
  startOrderAndLimits([&] {
    auto q = RunQueue::open(RunQueue::defaultPath(dir.path()).string());
    EXPECT_TRUE(q) << q.error().message;
    return std::move(q).value();
  });
  EXPECT_TRUE(std::filesystem::exists(dir / ".openexpertise/serve/queue.db"));
}

TEST(SqliteRunQueue, AnExperiencesOwnLimitWins) {
  oe::test::TempDir dir;
  limitOfTheExperienceWins(
      [&] { return std::move(RunQueue::open((dir / "q.db").string())).value(); });
}

TEST(SqliteRunQueue, EntriesSurviveTheQueueObjectAndADeadServersRunsAreTakenOver) {
  oe::test::TempDir dir;
  survivesReopen([&] { return std::move(RunQueue::open((dir / "q.db").string())).value(); });
}

TEST(SqliteRunQueue, OneServerPerFile) {
  oe::test::TempDir dir;
  auto first = RunQueue::open((dir / "q.db").string());
  ASSERT_TRUE(first);
  auto second = RunQueue::open((dir / "q.db").string());
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message.find("in use by another `oe serve`"), std::string::npos)
      << second.error().message;
  first = makeError("closed");  // releases the lock
  EXPECT_TRUE(RunQueue::open((dir / "q.db").string()));
}

TEST(PgRunQueue, StartsByPriorityThenFifoUnderTheCaps) {
  oe::test::PgTestDb db;
  startOrderAndLimits([&] {
    auto q = RunQueue::open(db.url());
    EXPECT_TRUE(q) << q.error().message;
    return std::move(q).value();
  });
}

TEST(PgRunQueue, AnExperiencesOwnLimitWins) {
  oe::test::PgTestDb db;
  limitOfTheExperienceWins([&] { return std::move(RunQueue::open(db.url())).value(); });
}

TEST(PgRunQueue, EntriesSurviveTheQueueObjectAndADeadServersRunsAreTakenOver) {
  oe::test::PgTestDb db;
  survivesReopen([&] { return std::move(RunQueue::open(db.url())).value(); });
}

TEST(PgRunQueue, OnlyExpiredLeasesAreTakenOverAndRenewingKeepsThem) {
  oe::test::PgTestDb db;
  auto a = std::move(RunQueue::open(db.url())).value();
  auto b = std::move(RunQueue::open(db.url())).value();
  ASSERT_TRUE(a->enqueue(entry("r", "x", 5, 1)));
  auto c = a->claim("a:1:x", {0, 0}, 60000);
  ASSERT_TRUE(c && *c);
  auto early = b->takeOverExpired("b:1:y", nowMs(), 60000);
  ASSERT_TRUE(early);
  EXPECT_TRUE(early->empty()) << "a live lease stays with its owner";
  ASSERT_TRUE(a->renew("a:1:x", 60000));
  auto late = b->takeOverExpired("b:1:y", nowMs() + 61000, 60000);
  ASSERT_TRUE(late);
  ASSERT_EQ(late->size(), 1U);
  EXPECT_EQ((*std::move(b->find("r")).value()).owner, "b:1:y");
}

// Two servers claiming at once from one table never start more than the global cap, and each
// entry once.
TEST(PgRunQueue, ConcurrentClaimersHonourTheGlobalCap) {
  oe::test::PgTestDb db;
  {
    auto q = std::move(RunQueue::open(db.url())).value();
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(q->enqueue(entry("r" + std::to_string(100 + i), "e" + std::to_string(i), 5, i)));
    }
  }
  std::mutex mutex;
  std::multiset<std::string> claimed;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto q = std::move(RunQueue::open(db.url())).value();
      for (int i = 0; i < 10; ++i) {
        auto c = q->claim("s" + std::to_string(t), {5, 0}, 60000);
        if (c && *c) {
          std::lock_guard lock(mutex);
          claimed.insert((*c)->run_id);
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(claimed.size(), 5U);
  EXPECT_EQ(std::set<std::string>(claimed.begin(), claimed.end()).size(), claimed.size());
}

TEST(PickNext, SkipsAnExperienceAtItsCapAndStopsAtTheGlobalOne) {
  std::vector<QueuedRun> entries = {entry("a1", "a", 5, 1), entry("a2", "a", 5, 2),
                                    entry("b1", "b", 5, 3)};
  entries[0].state = "running";
  EXPECT_EQ(pickNext(entries, {0, 1})->run_id, "b1");
  EXPECT_EQ(pickNext(entries, {0, 2})->run_id, "a2");
  EXPECT_FALSE(pickNext(entries, {1, 0}));
}

}  // namespace
}  // namespace oe::service

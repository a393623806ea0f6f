// The run queue on a real SQLite file and on the shared PostgreSQL test cluster: start order
// (priority, then FIFO), the global and per-experience caps, entries that outlive the queue
// object, one server per SQLite file, the takeover of a dead server's runs, and the trace a
// cancelled queued run leaves (never claimed, dropped after a week; an older file or schema
// gains the column it needs).
#include "oe/service/run_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "oe/common/sqlite.hpp"
#include "oe/pg/connection.hpp"
#include "oe/pg/schema.hpp"
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
  EXPECT_FALSE(*q->cancelQueued("low", nowMs())) << "a running entry is not cancelled as queued";
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

// A cancelled entry stays (listed last, with when), is never claimed, counts against no cap,
// is no running entry to renew or take over, and goes when the retention says.
void cancelledEntriesStayButNeverStart(const std::function<std::unique_ptr<RunQueue>()>& open) {
  auto q = open();
  ASSERT_TRUE(q->enqueue(entry("first", "a", 10, 100)));
  ASSERT_TRUE(q->enqueue(entry("second", "a", 5, 200)));
  ASSERT_TRUE(q->enqueue(entry("third", "b", 1, 300)));
  auto cancelled = q->cancelQueued("first", 1000);
  ASSERT_TRUE(cancelled) << cancelled.error().message;
  EXPECT_TRUE(*cancelled);
  EXPECT_FALSE(*q->cancelQueued("first", 2000)) << "cancelled once";
  EXPECT_FALSE(*q->cancelQueued("nobody", 2000));
  auto found = q->find("first");
  ASSERT_TRUE(found && *found);
  EXPECT_EQ((*found)->state, "cancelled");
  EXPECT_EQ((*found)->cancelled_ms, 1000);
  EXPECT_EQ((*found)->toJson()["status"], "cancelled");
  EXPECT_EQ((*found)->toJson()["cancelled_at"], "1970-01-01T00:00:01.000Z");
  auto listed = q->list();
  ASSERT_TRUE(listed);
  std::vector<std::string> ids;
  for (const auto& e : *listed) {
    ids.push_back(e.run_id);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"second", "third", "first"})) << "cancelled last";

  // A global cap of 2 and 1 per experience: "first" (highest priority, experience a) neither
  // starts nor takes a's or the global slot, so both others start.
  EXPECT_EQ(claimAll(*q, {2, 1}), (std::vector<std::string>{"second", "third"}));
  EXPECT_FALSE(*q->cancelQueued("second", 3000)) << "a running entry is not cancelled as queued";
  ASSERT_TRUE(q->renew("me:1:a", 60000));
  auto taken = q->takeOverExpired("other:2:b", nowMs() + 120000, 60000);
  ASSERT_TRUE(taken);
  std::set<std::string> taken_ids;
  for (const auto& e : *taken) {
    taken_ids.insert(e.run_id);
  }
  EXPECT_EQ(taken_ids, (std::set<std::string>{"second", "third"}));
  found = q->find("first");
  ASSERT_TRUE(found && *found);
  EXPECT_EQ((*found)->state, "cancelled");
  EXPECT_EQ((*found)->owner, "") << "neither renewed nor taken over";

  // Retention: what was cancelled before the cut goes, what was cancelled at it or later stays.
  auto none = q->dropCancelled(1000);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(*none, 0);
  EXPECT_TRUE(*q->find("first"));
  EXPECT_EQ(*q->dropCancelled(1001), 1);
  EXPECT_FALSE(*q->find("first"));
  EXPECT_EQ(q->list()->size(), 2U) << "running entries are never dropped";

  // The launcher's cut, a week before now.
  const int64_t now = nowMs();
  ASSERT_TRUE(q->enqueue(entry("week-old", "a", 5, 400)));
  ASSERT_TRUE(q->enqueue(entry("today", "a", 5, 500)));
  ASSERT_TRUE(*q->cancelQueued("week-old", now - kKeepCancelledMs - 1));
  ASSERT_TRUE(*q->cancelQueued("today", now - 1000));
  EXPECT_EQ(*q->dropCancelled(now - kKeepCancelledMs), 1);
  EXPECT_FALSE(*q->find("week-old"));
  EXPECT_TRUE(*q->find("today"));
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

TEST(SqliteRunQueue, ACancelledEntryStaysNeverStartsAndGoesAfterAWeek) {
  oe::test::TempDir dir;
  cancelledEntriesStayButNeverStart(
      [&] { return std::move(RunQueue::open((dir / "q.db").string())).value(); });
}

// A queue file an earlier oe wrote (no cancelled_ms) gains the column, keeping its rows.
TEST(SqliteRunQueue, AFileWithoutTheCancelColumnGainsItKeepingItsRows) {
  oe::test::TempDir dir;
  {
    auto db = sqlite::open(dir / "q.db");
    ASSERT_TRUE(db);
    ASSERT_TRUE(sqlite::exec(
        db->get(),
        "CREATE TABLE run_queue (run_id TEXT PRIMARY KEY, experience TEXT NOT NULL, folder TEXT "
        "NOT NULL, kind TEXT NOT NULL, resume_of TEXT NOT NULL, args TEXT NOT NULL, options TEXT "
        "NOT NULL, priority INTEGER NOT NULL, enqueued_ms INTEGER NOT NULL, state TEXT NOT NULL, "
        "started_ms INTEGER NOT NULL DEFAULT 0, pid INTEGER NOT NULL DEFAULT 0, owner TEXT NOT "
        "NULL DEFAULT '', lease_until_ms INTEGER NOT NULL DEFAULT 0, max_concurrent INTEGER NOT "
        "NULL DEFAULT 0);"
        "INSERT INTO run_queue (run_id, experience, folder, kind, resume_of, args, options, "
        "priority, enqueued_ms, state) VALUES ('old', 'a', 'a', 'run', '', '{}', '{}', 5, 1, "
        "'queued');"));
  }
  for (int i = 0; i < 2; ++i) {  // the second open finds the column there
    auto q = RunQueue::open((dir / "q.db").string());
    ASSERT_TRUE(q) << q.error().message;
    auto found = (*q)->find("old");
    ASSERT_TRUE(found) << found.error().message;
    ASSERT_TRUE(*found);
    if (i == 0) {
      EXPECT_EQ((*found)->state, "queued");
      EXPECT_EQ((*found)->cancelled_ms, 0);
      EXPECT_TRUE(*(*q)->cancelQueued("old", 5000));
    } else {
      EXPECT_EQ((*found)->state, "cancelled");
      EXPECT_EQ((*found)->cancelled_ms, 5000);
    }
  }
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

TEST(PgRunQueue, ACancelledEntryStaysNeverStartsAndGoesAfterAWeek) {
  oe::test::PgTestDb db;
  cancelledEntriesStayButNeverStart([&] { return std::move(RunQueue::open(db.url())).value(); });
}

// A store at schema version 6 (before cancelled_ms) is migrated when the queue opens, keeping
// its queued rows.
TEST(PgRunQueue, AStoreAtVersionSixGainsTheCancelColumnKeepingItsRows) {
  oe::test::PgTestDb db;
  {
    auto conn = pg::Connection::open(db.url());
    ASSERT_TRUE(conn);
    ASSERT_TRUE(pg::migrate(**conn, 6));
    ASSERT_TRUE((*conn)->exec(
        "INSERT INTO oe_run_queue (run_id, experience, folder, kind, resume_of, args, options, "
        "priority, enqueued_ms, state) VALUES ('old', 'a', 'a', 'run', '', '{}', '{}', 5, 1, "
        "'queued')"));
  }
  auto q = RunQueue::open(db.url());
  ASSERT_TRUE(q) << q.error().message;
  auto found = (*q)->find("old");
  ASSERT_TRUE(found) << found.error().message;
  ASSERT_TRUE(*found);
  EXPECT_EQ((*found)->cancelled_ms, 0);
  EXPECT_TRUE(*(*q)->cancelQueued("old", 5000));
  EXPECT_EQ((*std::move((*q)->find("old")).value()).cancelled_ms, 5000);
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
  // A cancelled entry neither starts nor holds a slot.
  entries[0].state = "cancelled";
  entries[1].state = "cancelled";
  const auto next = pickNext(entries, {1, 1});
  ASSERT_TRUE(next);
  EXPECT_EQ(next->run_id, "b1");
  entries[2].state = "cancelled";
  EXPECT_FALSE(pickNext(entries, {0, 0}));
}

}  // namespace
}  // namespace oe::service

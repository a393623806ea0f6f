// The PostgreSQL trigger store on a real server (tests/support/pg_cluster.sh): claims raced by
// several connections, delivery ids, and the leadership of the scheduler: a child process that
// holds it is killed and this one takes over.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "oe/pg/schema.hpp"
#include "oe/triggers/scheduler.hpp"
#include "oe/triggers/trigger_store.hpp"
#include "support/pg_test_db.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "unit/triggers/fake_clock.hpp"

namespace oe::triggers {
namespace {

constexpr const char* kLeaderUrlVar = "OE_TEST_TRIGGERS_LEADER_URL";
constexpr const char* kLeaderFileVar = "OE_TEST_TRIGGERS_LEADER_FILE";

std::unique_ptr<TriggerStore> openPg(const std::string& url) {
  auto store = TriggerStore::open(url);
  EXPECT_TRUE(store.ok()) << store.error().message;
  return store.ok() ? std::move(store).value() : nullptr;
}

Clock::TimePoint pgAt(int64_t seconds) { return Clock::TimePoint(std::chrono::seconds(seconds)); }

ScheduledTrigger everyMinute() {
  ScheduledTrigger t;
  t.experience = "exp";
  t.trigger_id = "cron:* * * * *@UTC";
  t.expression = "* * * * *";
  t.expr = *spec::parseCron(t.expression);
  t.zone = std::make_shared<const TimeZone>(TimeZone::utc());
  return t;
}

// Polls `condition` (a state another process changes, seen through the database) every 20 ms
// for at most 20 s.
template <class F>
bool eventually(F condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(PgTriggerStoreTest, OneClaimWinsPerTimeAcrossConnections) {
  test::PgTestDb db;
  constexpr int kStores = 4;
  constexpr int kTimes = 50;
  std::vector<std::unique_ptr<TriggerStore>> stores;
  for (int i = 0; i < kStores; ++i) {
    stores.push_back(openPg(db.url()));
    ASSERT_TRUE(stores.back());
  }
  std::atomic<int> won{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kStores; ++i) {
    threads.emplace_back([&, i] {
      for (int t = 0; t < kTimes; ++t) {
        auto claimed = stores[static_cast<size_t>(i)]->claimFire("exp", "cron:x", t * 60'000);
        if (!claimed) {
          ++failed;
        } else if (*claimed) {
          ++won;
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(won.load(), kTimes);
  auto last = stores[0]->lastFire("exp", "cron:x");
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, std::optional<int64_t>((kTimes - 1) * 60'000));
  EXPECT_EQ(*stores[0]->lastFire("exp", "cron:other"), std::nullopt);
}

TEST(PgTriggerStoreTest, DeliveriesAreRememberedForTheRetention) {
  test::PgTestDb db;
  auto a = openPg(db.url());
  auto b = openPg(db.url());
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(*a->claimDelivery("exp", "hook", "d-1", 1000));
  EXPECT_FALSE(*b->claimDelivery("exp", "hook", "d-1", 2000));
  EXPECT_TRUE(*b->claimDelivery("exp", "other-hook", "d-1", 2000));
  EXPECT_TRUE(*a->claimDelivery("exp", "hook", "d-1", 1000 + kDeliveryRetentionMs + 1));
}

TEST(PgTriggerStoreTest, TheSchemaIsAtTheLatestVersion) {
  test::PgTestDb db;
  ASSERT_TRUE(openPg(db.url()));
  auto conn = pg::Connection::open(db.url());
  ASSERT_TRUE(conn.ok());
  EXPECT_EQ(*pg::currentVersion(**conn), pg::latestVersion());
  auto tables = (*conn)->exec(
      "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('oe_trigger_fires', "
      "'oe_webhook_deliveries')");
  ASSERT_TRUE(tables.ok());
  EXPECT_EQ(tables->int64(0, 0), 2);
}

// Run as a child by TheSchedulerMovesToAnotherInstanceWhenItsHolderDies: leads, says so in a
// file, and waits to be killed.
TEST(PgTriggerLeaderChild, DISABLED_HoldsTheLeadUntilKilled) {
  const char* url = std::getenv(kLeaderUrlVar);    // NOLINT(concurrency-mt-unsafe)
  const char* file = std::getenv(kLeaderFileVar);  // NOLINT(concurrency-mt-unsafe)
  ASSERT_TRUE(url != nullptr && file != nullptr);
  auto store = openPg(url);
  ASSERT_TRUE(store);
  auto lead = store->tryLead();
  ASSERT_TRUE(lead.ok() && *lead);
  std::ofstream(file) << getpid() << "\n";
  for (;;) {
    pause();
  }
}

TEST(PgTriggerStoreTest, TheSchedulerMovesToAnotherInstanceWhenItsHolderDies) {
  test::PgTestDb db;
  test::TempDir dir;
  const auto flag = dir / "leading";
  test::BackgroundProcess child(
      {std::filesystem::read_symlink("/proc/self/exe").string(), "--gtest_also_run_disabled_tests",
       "--gtest_filter=PgTriggerLeaderChild.DISABLED_HoldsTheLeadUntilKilled"},
      {{kLeaderUrlVar, db.url()}, {kLeaderFileVar, flag.string()}}, {}, dir / "child");
  ASSERT_TRUE(test::waitForFile(flag, std::chrono::seconds(30))) << child.out() << child.err();

  auto store = openPg(db.url());
  ASSERT_TRUE(store);
  testing::FakeClock clock;
  std::vector<Fire> fires;
  std::vector<std::string> said;
  Scheduler scheduler(
      {everyMinute()}, *store, clock, [&fires](const Fire& fire) { fires.push_back(fire); },
      SchedulerOptions{.on_time_grace = std::chrono::seconds(60),
                       .lead_every = std::chrono::seconds(5),
                       .log = [&said](const std::string& m) { said.push_back(m); }});
  const int64_t t0 = 1'796'626'800;  // a whole minute
  clock.set(pgAt(t0 + 1));
  EXPECT_EQ(scheduler.tick(), pgAt(t0 + 6));  // not leading: look again in lead_every
  EXPECT_FALSE(scheduler.leading());
  clock.set(pgAt(t0 + 61));
  (void)scheduler.tick();
  EXPECT_TRUE(fires.empty()) << "fired while another instance leads";

  child.signal(SIGKILL);
  EXPECT_EQ(child.wait(), 128 + SIGKILL);
  // The server ends the dead client's session and its lock with it.
  ASSERT_TRUE(eventually([&] { return *store->tryLead(); }));
  (void)scheduler.tick();
  EXPECT_TRUE(scheduler.leading());
  // A trigger that never fired starts from now: the next minute fires.
  clock.set(pgAt(t0 + 121));
  (void)scheduler.tick();
  ASSERT_EQ(fires.size(), 1u);
  EXPECT_EQ(fires[0].scheduled_ms, (t0 + 120) * 1000);
  EXPECT_FALSE(said.empty());

  // A second instance does not lead while this one does; a clean stop hands over at once.
  auto other = openPg(db.url());
  ASSERT_TRUE(other);
  EXPECT_FALSE(*other->tryLead());
  scheduler.stop();
  EXPECT_TRUE(*other->tryLead());
  // Both claiming the same time (a leader change mid-minute): one fire.
  EXPECT_TRUE(*other->claimFire("exp", "cron:* * * * *@UTC", (t0 + 180) * 1000));
  EXPECT_FALSE(*store->claimFire("exp", "cron:* * * * *@UTC", (t0 + 180) * 1000));
}

}  // namespace
}  // namespace oe::triggers

// The cron scheduler on a real SQLite store with an injected clock: what fires, once, across
// restarts (a new Scheduler on the same file), the missed policies, and a loop that waits for
// the clock and stops at once when asked.
#include "oe/triggers/scheduler.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>

#include "oe/spec/loader.hpp"
#include "oe/triggers/time_zone.hpp"
#include "support/temp_dir.hpp"
#include "unit/triggers/fake_clock.hpp"

namespace oe::triggers {
namespace {

using testing::FakeClock;

int64_t schedUtc(int64_t y, int mo, int d, int h, int mi, int s = 0) {
  return daysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
}

Clock::TimePoint at(int64_t seconds) { return Clock::TimePoint(std::chrono::seconds(seconds)); }

ScheduledTrigger trigger(const std::string& expression, spec::Missed missed,
                         const std::string& zone = "UTC", const std::string& experience = "exp") {
  ScheduledTrigger t;
  t.experience = experience;
  t.trigger_id = "cron:" + expression + "@" + zone;
  t.expression = expression;
  auto parsed = spec::parseCron(expression);
  EXPECT_TRUE(parsed.ok());
  t.expr = *parsed;
  auto loaded = TimeZone::load(zone);
  EXPECT_TRUE(loaded.ok());
  t.zone = std::make_shared<const TimeZone>(std::move(loaded).value());
  t.missed = missed;
  t.args = Json{{"window", "24h"}};
  return t;
}

// Records each fire; thread-safe, with a wait for the count (the loop fires on its thread).
class Fires {
 public:
  Scheduler::FireCallback callback() {
    return [this](const Fire& fire) {
      std::lock_guard lock(mutex_);
      fires_.push_back(fire);
      cv_.notify_all();
    };
  }
  std::vector<Fire> all() const {
    std::lock_guard lock(mutex_);
    return fires_;
  }
  bool waitFor(size_t count) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return fires_.size() >= count; });
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Fire> fires_;
};

class SchedulerTest : public ::testing::Test {
 protected:
  std::unique_ptr<TriggerStore> openStore() {
    auto store = openSqliteTriggerStore(storePath(dir_ / ".openexpertise"));
    EXPECT_TRUE(store.ok()) << store.error().message;
    return store.ok() ? std::move(store).value() : nullptr;
  }

  // An hourly trigger's scheduler that fired at 09:00 and then stopped (the server went down).
  void firedAtNineThenStopped(spec::Missed missed) {
    auto store = openStore();
    Scheduler before({trigger("0 * * * *", missed)}, *store, clock_, fires_.callback());
    clock_.set(at(schedUtc(2026, 12, 7, 8, 30)));
    (void)before.tick();
    clock_.set(at(schedUtc(2026, 12, 7, 9, 0, 10)));
    (void)before.tick();
    ASSERT_EQ(fires_.all().size(), 1u);
  }

  oe::test::TempDir dir_;
  FakeClock clock_;
  Fires fires_;
};

TEST_F(SchedulerTest, FiresOnTimeOnceAndWaitsForTheNextTime) {
  auto store = openStore();
  Scheduler scheduler({trigger("0 7 * * 1-5", spec::Missed::kSkip, "Europe/Berlin")}, *store,
                      clock_, fires_.callback());
  // 2026-12-07 is a Monday; 07:00 in Berlin is 06:00Z.
  clock_.set(at(schedUtc(2026, 12, 7, 5, 0)));
  EXPECT_EQ(scheduler.tick(), at(schedUtc(2026, 12, 7, 5, 0, 5)));  // lead_every (5 s) is sooner
  EXPECT_TRUE(fires_.all().empty());
  clock_.set(at(schedUtc(2026, 12, 7, 6, 0, 1)));
  (void)scheduler.tick();
  ASSERT_EQ(fires_.all().size(), 1u);
  const Fire fire = fires_.all()[0];
  EXPECT_EQ(fire.experience, "exp");
  EXPECT_EQ(fire.scheduled_ms, schedUtc(2026, 12, 7, 6, 0) * 1000);
  EXPECT_EQ(fire.args, (Json{{"window", "24h"}}));
  EXPECT_NE(fire.reason.find("cron \"0 7 * * 1-5\" (Europe/Berlin) for 2026-12-07T06:00:00"),
            std::string::npos)
      << fire.reason;
  // Ticking again at the same or a later time fires nothing more.
  (void)scheduler.tick();
  clock_.set(at(schedUtc(2026, 12, 7, 6, 0, 30)));
  (void)scheduler.tick();
  EXPECT_EQ(fires_.all().size(), 1u);
  // The status says when the next one is and the last that was.
  const auto status = scheduler.status();
  ASSERT_EQ(status.size(), 1u);
  EXPECT_EQ(status[0].next_ms, schedUtc(2026, 12, 8, 6, 0) * 1000);
  EXPECT_EQ(status[0].last_ms, schedUtc(2026, 12, 7, 6, 0) * 1000);
}

TEST_F(SchedulerTest, ARestartDoesNotFireTheSameTimeAgain) {
  {
    auto store = openStore();
    Scheduler first({trigger("*/10 * * * *", spec::Missed::kSkip)}, *store, clock_,
                    fires_.callback());
    clock_.set(at(schedUtc(2026, 12, 7, 9, 0)));
    (void)first.tick();  // a new trigger has no past: 09:00 itself is not due yet
    clock_.set(at(schedUtc(2026, 12, 7, 9, 10, 2)));
    (void)first.tick();
    ASSERT_EQ(fires_.all().size(), 1u);
  }
  // A new process on the same file, within the same minute.
  auto store = openStore();
  Scheduler second({trigger("*/10 * * * *", spec::Missed::kSkip)}, *store, clock_,
                   fires_.callback());
  clock_.set(at(schedUtc(2026, 12, 7, 9, 10, 20)));
  (void)second.tick();
  EXPECT_EQ(fires_.all().size(), 1u);
  clock_.set(at(schedUtc(2026, 12, 7, 9, 20, 0)));
  (void)second.tick();
  ASSERT_EQ(fires_.all().size(), 2u);
  EXPECT_EQ(fires_.all()[1].scheduled_ms, schedUtc(2026, 12, 7, 9, 20) * 1000);
}

TEST_F(SchedulerTest, MissedSkipFiresNothingForTheTimeAway) {
  firedAtNineThenStopped(spec::Missed::kSkip);
  // Down from 09:00 to 13:30: 10:00 to 13:00 were missed.
  auto store = openStore();
  Scheduler after({trigger("0 * * * *", spec::Missed::kSkip)}, *store, clock_, fires_.callback());
  clock_.set(at(schedUtc(2026, 12, 7, 13, 30)));
  (void)after.tick();
  EXPECT_EQ(fires_.all().size(), 1u);
  // The next time on time fires as usual.
  clock_.set(at(schedUtc(2026, 12, 7, 14, 0, 3)));
  (void)after.tick();
  ASSERT_EQ(fires_.all().size(), 2u);
  EXPECT_EQ(fires_.all()[1].scheduled_ms, schedUtc(2026, 12, 7, 14, 0) * 1000);
}

TEST_F(SchedulerTest, MissedRunOnceFiresOnceForTheLatestMissedTime) {
  firedAtNineThenStopped(spec::Missed::kRunOnce);
  auto store = openStore();
  Scheduler after({trigger("0 * * * *", spec::Missed::kRunOnce)}, *store, clock_,
                  fires_.callback());
  clock_.set(at(schedUtc(2026, 12, 7, 13, 30)));
  (void)after.tick();
  ASSERT_EQ(fires_.all().size(), 2u);
  EXPECT_EQ(fires_.all()[1].scheduled_ms, schedUtc(2026, 12, 7, 13, 0) * 1000);
  EXPECT_NE(fires_.all()[1].reason.find("missed while no scheduler ran"), std::string::npos);
  (void)after.tick();
  clock_.set(at(schedUtc(2026, 12, 7, 13, 59)));
  (void)after.tick();
  EXPECT_EQ(fires_.all().size(), 2u);
}

TEST_F(SchedulerTest, ASuspendedLoopFiresTheLatestTimeOnlyOnce) {
  // Two instances' schedulers on one file (two processes on one root): the claim lets one of
  // them fire each time.
  auto store_a = openStore();
  auto store_b = openStore();
  Fires other;
  Scheduler a({trigger("* * * * *", spec::Missed::kSkip)}, *store_a, clock_, fires_.callback());
  Scheduler b({trigger("* * * * *", spec::Missed::kSkip)}, *store_b, clock_, other.callback());
  clock_.set(at(schedUtc(2026, 12, 7, 9, 0, 30)));
  (void)a.tick();
  (void)b.tick();
  for (int minute = 1; minute <= 5; ++minute) {
    clock_.set(at(schedUtc(2026, 12, 7, 9, minute, 1)));
    (void)a.tick();
    (void)b.tick();
  }
  // Suspended for ten minutes: only 09:15 (on time) fires, 09:06 to 09:14 are skipped.
  clock_.set(at(schedUtc(2026, 12, 7, 9, 15, 10)));
  (void)b.tick();
  (void)a.tick();
  EXPECT_EQ(fires_.all().size() + other.all().size(), 6u);
  std::set<int64_t> times;
  for (const auto* list : {&fires_, &other}) {
    for (const Fire& f : list->all()) {
      EXPECT_TRUE(times.insert(f.scheduled_ms).second) << "fired twice: " << f.scheduled_ms;
    }
  }
  EXPECT_EQ(*times.rbegin(), schedUtc(2026, 12, 7, 9, 15) * 1000);
}

TEST_F(SchedulerTest, TheLoopWaitsForTheClockAndFiresOnItsThread) {
  auto store = openStore();
  Scheduler scheduler({trigger("30 2 * * *", spec::Missed::kSkip, "America/New_York")}, *store,
                      clock_, fires_.callback(),
                      SchedulerOptions{.lead_every = std::chrono::hours(48), .log = {}});
  // The spring-forward night: 02:30 does not exist, the fire is at 03:00 EDT (07:00Z).
  clock_.set(at(schedUtc(2026, 3, 8, 6, 0)));
  scheduler.start();
  ASSERT_TRUE(clock_.waitForWaiter(1)) << "the loop never waited";
  EXPECT_EQ(clock_.lastDeadline(), at(schedUtc(2026, 3, 8, 7, 0)));
  EXPECT_TRUE(fires_.all().empty());
  clock_.set(at(schedUtc(2026, 3, 8, 7, 0)));
  scheduler.wake();
  ASSERT_TRUE(fires_.waitFor(1));
  EXPECT_EQ(fires_.all()[0].scheduled_ms, schedUtc(2026, 3, 8, 7, 0) * 1000);
  // Then it waits for the next night, 02:30 EDT (06:30Z).
  ASSERT_TRUE(clock_.waitForDeadline(at(schedUtc(2026, 3, 9, 6, 30))));
  scheduler.stop();
  EXPECT_EQ(fires_.all().size(), 1u);
}

TEST_F(SchedulerTest, StopEndsARealWaitAtOnce) {
  // The real clock, and nothing due for an hour (the next fire is on January 1st, the leadership
  // is looked at hourly): stop() returns as soon as the loop has seen it, not an hour later.
  auto store = openStore();
  testing::ProbedSystemClock real;
  Scheduler scheduler({trigger("0 0 1 1 *", spec::Missed::kSkip)}, *store, real, fires_.callback(),
                      SchedulerOptions{.lead_every = std::chrono::hours(1), .log = {}});
  scheduler.start();
  ASSERT_TRUE(real.waitForWaiter(1)) << "the loop never waited";
  EXPECT_GT(real.lastDeadline(), std::chrono::system_clock::now() + std::chrono::minutes(50));
  const auto started = std::chrono::steady_clock::now();
  scheduler.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  EXPECT_TRUE(fires_.all().empty());
}

TEST_F(SchedulerTest, SchedulesComeFromTheExperience) {
  const auto loaded = spec::loadExperienceText(
      "name: nightly\nversion: 0.1.0\nstate:\n  schema: {}\ngraph:\n  nodes:\n"
      "    - { id: a, kind: tool, impl: a.mjs }\n  edges: []\ntriggers:\n"
      "  - cron: \"0 7 * * 1-5\"\n    timezone: Europe/Berlin\n    missed: run_once\n"
      "    args: { window: 24h }\n"
      "  - webhook: { name: w, secret: { env: X } }\n",
      dir_ / "experience.yaml");
  ASSERT_TRUE(loaded.experience) << (loaded.diagnostics.empty() ? ""
                                                                : loaded.diagnostics[0].format());
  auto schedules = schedulesOf(*loaded.experience);
  ASSERT_TRUE(schedules.ok()) << schedules.error().message;
  ASSERT_EQ(schedules->size(), 1u);
  EXPECT_EQ((*schedules)[0].experience, "nightly");
  EXPECT_EQ((*schedules)[0].zone->name(), "Europe/Berlin");
  EXPECT_EQ((*schedules)[0].missed, spec::Missed::kRunOnce);
  EXPECT_EQ((*schedules)[0].args, (Json{{"window", "24h"}}));
}

}  // namespace
}  // namespace oe::triggers

// Next-fire times of cron expressions in real zones (the system's TZif files), across the DST
// changes of America/New_York and Europe/Berlin, and properties of generated expressions checked
// against a brute-force scan of every minute.
#include "oe/triggers/cron_schedule.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "oe/spec/trigger.hpp"
#include "oe/triggers/time_zone.hpp"

namespace oe::triggers {
namespace {

int64_t utcOf(int64_t y, int mo, int d, int h, int mi) {
  return daysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60;
}

spec::CronExpr cron(const std::string& text) {
  auto parsed = spec::parseCron(text);
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
  return parsed.ok() ? *parsed : spec::CronExpr{};
}

TimeZone zone(const std::string& name) {
  auto loaded = TimeZone::load(name);
  EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
  return loaded.ok() ? *loaded : TimeZone::utc();
}

TEST(CronSchedule, WeekdayMorningsInUtc) {
  const auto expr = cron("0 7 * * 1-5");
  const TimeZone utc = TimeZone::utc();
  // 2026-12-04 is a Friday.
  EXPECT_EQ(nextFire(expr, utc, utcOf(2026, 12, 4, 6, 59)), utcOf(2026, 12, 4, 7, 0));
  EXPECT_EQ(nextFire(expr, utc, utcOf(2026, 12, 4, 7, 0)), utcOf(2026, 12, 7, 7, 0));
}

TEST(CronSchedule, OrRuleWhenBothDayFieldsAreRestricted) {
  // The 13th, or any Friday: 2026-11-06 is a Friday, 2026-11-13 a Friday and the 13th.
  const auto expr = cron("0 0 13 * FRI");
  const TimeZone utc = TimeZone::utc();
  EXPECT_EQ(nextFire(expr, utc, utcOf(2026, 11, 1, 0, 0)), utcOf(2026, 11, 6, 0, 0));
  EXPECT_EQ(nextFire(expr, utc, utcOf(2026, 11, 13, 0, 0)), utcOf(2026, 11, 20, 0, 0));
  EXPECT_EQ(nextFire(expr, utc, utcOf(2026, 12, 12, 0, 0)), utcOf(2026, 12, 13, 0, 0));
  // One day field a `*`-form: both must match (the 13th only when it is a Friday... here the
  // day-of-week is `*`, so every 13th).
  EXPECT_EQ(nextFire(cron("0 0 13 * *"), utc, utcOf(2026, 11, 14, 0, 0)),
            utcOf(2026, 12, 13, 0, 0));
  // 7 is Sunday too: 2026-12-06 is a Sunday.
  EXPECT_EQ(nextFire(cron("0 9 * * 7"), utc, utcOf(2026, 12, 1, 0, 0)), utcOf(2026, 12, 6, 9, 0));
}

TEST(CronSchedule, NewYorkSpringForwardFiresOnceWhenTheGapEnds) {
  const TimeZone ny = zone("America/New_York");
  // 2026-03-08: 02:00 EST becomes 03:00 EDT (07:00Z). 02:30 does not exist: it fires at 03:00
  // EDT, once, and the next day at 02:30 EDT (06:30Z).
  const auto expr = cron("30 2 * * *");
  const int64_t first = *nextFire(expr, ny, utcOf(2026, 3, 7, 12, 0));
  EXPECT_EQ(first, utcOf(2026, 3, 8, 7, 0));
  EXPECT_EQ(nextFire(expr, ny, first), utcOf(2026, 3, 9, 6, 30));
  // Every quarter hour of the skipped hour lands on the same instant: one fire, then 03:15.
  const auto quarter = cron("*/15 2-3 * * *");
  const int64_t at = *nextFire(quarter, ny, utcOf(2026, 3, 8, 6, 50));
  EXPECT_EQ(at, utcOf(2026, 3, 8, 7, 0));  // 03:00 EDT
  EXPECT_EQ(nextFire(quarter, ny, at), utcOf(2026, 3, 8, 7, 15));
}

TEST(CronSchedule, NewYorkFallBackFiresTheRepeatedTimeOnce) {
  const TimeZone ny = zone("America/New_York");
  // 2026-11-01: 02:00 EDT becomes 01:00 EST (06:00Z); 01:30 happens at 05:30Z and 06:30Z.
  const auto expr = cron("30 1 * * *");
  const int64_t first = *nextFire(expr, ny, utcOf(2026, 10, 31, 12, 0));
  EXPECT_EQ(first, utcOf(2026, 11, 1, 5, 30));
  EXPECT_EQ(nextFire(expr, ny, first), utcOf(2026, 11, 2, 6, 30));
  // Hourly: 01:00 EDT (05:00Z), then 02:00 EST (07:00Z); the second 01:00 does not fire.
  const auto hourly = cron("0 * * * *");
  EXPECT_EQ(nextFire(hourly, ny, utcOf(2026, 11, 1, 4, 30)), utcOf(2026, 11, 1, 5, 0));
  EXPECT_EQ(nextFire(hourly, ny, utcOf(2026, 11, 1, 5, 0)), utcOf(2026, 11, 1, 7, 0));
}

TEST(CronSchedule, BerlinAcrossBothChanges) {
  const TimeZone berlin = zone("Europe/Berlin");
  const auto expr = cron("30 2 * * *");
  // 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00Z).
  EXPECT_EQ(nextFire(expr, berlin, utcOf(2026, 3, 28, 12, 0)), utcOf(2026, 3, 29, 1, 0));
  EXPECT_EQ(nextFire(expr, berlin, utcOf(2026, 3, 29, 1, 0)), utcOf(2026, 3, 30, 0, 30));
  // 2026-10-25: 03:00 CEST becomes 02:00 CET (01:00Z); 02:30 is 00:30Z, then 01:30Z: once.
  EXPECT_EQ(nextFire(expr, berlin, utcOf(2026, 10, 24, 12, 0)), utcOf(2026, 10, 25, 0, 30));
  EXPECT_EQ(nextFire(expr, berlin, utcOf(2026, 10, 25, 0, 30)), utcOf(2026, 10, 26, 1, 30));
  // Weekday mornings in winter and summer time.
  const auto mornings = cron("0 7 * * 1-5");
  EXPECT_EQ(nextFire(mornings, berlin, utcOf(2026, 12, 7, 0, 0)), utcOf(2026, 12, 7, 6, 0));
  EXPECT_EQ(nextFire(mornings, berlin, utcOf(2026, 7, 6, 0, 0)), utcOf(2026, 7, 6, 5, 0));
}

TEST(CronSchedule, FarFutureUsesTheFooterRule) {
  const TimeZone ny = zone("America/New_York");
  // 2300-03-11 is the second Sunday of March 2300: the file's table ends long before.
  EXPECT_EQ(nextFire(cron("30 2 * * *"), ny, utcOf(2300, 3, 10, 12, 0)), utcOf(2300, 3, 11, 7, 0));
  EXPECT_EQ(nextFire(cron("30 2 * * *"), ny, utcOf(2300, 3, 11, 7, 0)), utcOf(2300, 3, 12, 6, 30));
  EXPECT_EQ(ny.offsetAt(utcOf(2300, 7, 1, 0, 0)), -4 * 3600);
  EXPECT_EQ(ny.offsetAt(utcOf(2300, 12, 1, 0, 0)), -5 * 3600);
}

TEST(CronSchedule, LeapDayIsFoundYearsAhead) {
  const auto expr = cron("0 0 29 2 *");
  EXPECT_EQ(nextFire(expr, TimeZone::utc(), utcOf(2026, 1, 1, 0, 0)), utcOf(2028, 2, 29, 0, 0));
}

// --- Properties over generated expressions -------------------------------------------------

std::string randomField(std::mt19937& rng, int low, int high) {
  std::uniform_int_distribution<int> form(0, 5);
  auto value = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
  switch (form(rng)) {
    case 0:
      return "*";
    case 1:
      return "*/" + std::to_string(value(1, std::max(1, (high - low) / 2)));
    case 2:
      return std::to_string(value(low, high));
    case 3: {
      const int a = value(low, high);
      return std::to_string(a) + "-" + std::to_string(value(a, high));
    }
    case 4: {
      const int a = value(low, high);
      return std::to_string(a) + "-" + std::to_string(value(a, high)) + "/" +
             std::to_string(value(1, 4));
    }
    default:
      return std::to_string(value(low, high)) + "," + std::to_string(value(low, high));
  }
}

// The wall time of `utc` in `zone`, broken down, and whether the expression matches it.
bool matchesAt(const spec::CronExpr& expr, const TimeZone& tz, int64_t utc) {
  const int64_t wall = utc + tz.offsetAt(utc);
  const int64_t day = wall >= 0 ? wall / 86400 : (wall - 86399) / 86400;
  const int64_t second = wall - day * 86400;
  const CivilDate date = civilFromDays(day);
  return expr.matches(static_cast<int>(second / 60 % 60), static_cast<int>(second / 3600), date.day,
                      date.month, weekdayOf(day));
}

// True when the wall time of `utc` also occurred at an earlier instant (a repeated hour).
bool wallSeenBefore(const TimeZone& tz, int64_t utc) {
  const int64_t wall = utc + tz.offsetAt(utc);
  for (int64_t back = 60; back <= 3 * 3600; back += 60) {
    const int64_t earlier = utc - back;
    if (earlier + tz.offsetAt(earlier) == wall) {
      return true;
    }
  }
  return false;
}

TEST(CronScheduleProperty, NextFireMatchesAndSkipsNothing) {
  std::mt19937 rng(20261207);
  const std::vector<TimeZone> zones = {TimeZone::utc(), zone("America/New_York"),
                                       zone("Europe/Berlin")};
  // Starts near the 2026 changes and elsewhere.
  const std::vector<int64_t> starts = {utcOf(2026, 3, 7, 0, 0), utcOf(2026, 3, 28, 0, 0),
                                       utcOf(2026, 10, 24, 0, 0), utcOf(2026, 10, 31, 0, 0),
                                       utcOf(2027, 6, 15, 13, 7)};
  int checked = 0;
  for (int round = 0; round < 150; ++round) {
    std::string text = randomField(rng, 0, 59) + " " + randomField(rng, 0, 23) + " " +
                       randomField(rng, 1, 28) + " " + randomField(rng, 1, 12) + " " +
                       randomField(rng, 0, 6);
    auto parsed = spec::parseCron(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.error().message;
    const TimeZone& tz = zones[static_cast<size_t>(round) % zones.size()];
    int64_t now = starts[static_cast<size_t>(round) % starts.size()] + (round * 7919) % 86400;
    for (int step = 0; step < 3; ++step) {
      const auto next = nextFire(*parsed, tz, now);
      ASSERT_TRUE(next.has_value()) << text;
      ASSERT_GT(*next, now) << text;
      // The fire is a matching wall time, or the end of a gap that swallowed one.
      const bool at_gap_end = tz.offsetAt(*next - 1) < tz.offsetAt(*next);
      ASSERT_TRUE(matchesAt(*parsed, tz, *next) || at_gap_end)
          << text << " in " << tz.name() << " after " << now << ": " << *next;
      // Every minute between (a bounded window) that matches is a repeat of an earlier one.
      const int64_t scan_to = std::min(*next, now + 4 * 86400);
      for (int64_t minute = (now / 60 + 1) * 60; minute < scan_to; minute += 60) {
        if (matchesAt(*parsed, tz, minute)) {
          ASSERT_TRUE(wallSeenBefore(tz, minute))
              << text << " in " << tz.name() << ": " << minute << " skipped before " << *next;
        }
      }
      ++checked;
      now = *next;
    }
  }
  EXPECT_EQ(checked, 450);
}

TEST(CronScheduleProperty, BruteForceAgreesOverAWholeYearOfDstChanges) {
  // For a few dense expressions, walk every minute of 2026 in New York and Berlin: the fires
  // nextFire produces are exactly the first occurrences of the matching wall minutes, plus one
  // per gap that swallowed a match.
  for (const char* zone_name : {"America/New_York", "Europe/Berlin"}) {
    const TimeZone tz = zone(zone_name);
    for (const char* text : {"*/20 1-3 * * *", "30 2 * * 0", "0 * 8 3,11 *"}) {
      const auto expr = cron(text);
      std::vector<int64_t> expected;
      const int64_t begin = utcOf(2026, 1, 1, 0, 0);
      const int64_t end = utcOf(2027, 1, 1, 0, 0);
      for (int64_t minute = begin + 60; minute < end; minute += 60) {
        if (matchesAt(expr, tz, minute) && !wallSeenBefore(tz, minute)) {
          expected.push_back(minute);
        }
        // A forward jump at `minute`: fires once if a skipped wall minute matches.
        const int32_t before = tz.offsetAt(minute - 1);
        const int32_t after = tz.offsetAt(minute);
        if (after > before) {
          for (int64_t wall = minute + before; wall < minute + after; wall += 60) {
            if (matchesAt(expr, TimeZone::utc(), wall)) {
              if (expected.empty() || expected.back() != minute) {
                expected.push_back(minute);
              }
              break;
            }
          }
        }
      }
      std::vector<int64_t> actual;
      for (auto t = nextFire(expr, tz, begin); t && *t < end; t = nextFire(expr, tz, *t)) {
        actual.push_back(*t);
      }
      EXPECT_EQ(actual, expected) << text << " in " << zone_name;
      EXPECT_FALSE(actual.empty());
    }
  }
}

}  // namespace
}  // namespace oe::triggers

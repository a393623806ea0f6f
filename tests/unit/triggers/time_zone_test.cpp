// The TZif reader and the POSIX TZ rules, on the system's zone files and on rules and bytes
// written here.
#include "oe/triggers/time_zone.hpp"

#include <gtest/gtest.h>

#include <string>

#include "oe/common/file.hpp"
#include "oe/spec/trigger.hpp"

namespace oe::triggers {
namespace {

int64_t tzUtcOf(int64_t y, int mo, int d, int h, int mi) {
  return daysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60;
}

TEST(Calendar, DaysAndWeekdays) {
  EXPECT_EQ(daysFromCivil(1970, 1, 1), 0);
  EXPECT_EQ(daysFromCivil(2000, 3, 1), 11017);
  EXPECT_EQ(weekdayOf(0), 4);                            // a Thursday
  EXPECT_EQ(weekdayOf(daysFromCivil(2026, 12, 7)), 1);   // a Monday
  EXPECT_EQ(weekdayOf(daysFromCivil(1969, 12, 28)), 0);  // a Sunday, before the epoch
  for (int64_t d = -800000; d < 800000; d += 997) {
    const CivilDate c = civilFromDays(d);
    ASSERT_EQ(daysFromCivil(c.year, c.month, c.day), d);
  }
}

TEST(TimeZone, BerlinFromTheSystemFile) {
  auto berlin = TimeZone::load("Europe/Berlin");
  ASSERT_TRUE(berlin.ok()) << berlin.error().message;
  EXPECT_EQ(berlin->offsetAt(tzUtcOf(2026, 1, 15, 12, 0)), 3600);
  EXPECT_EQ(berlin->offsetAt(tzUtcOf(2026, 7, 15, 12, 0)), 7200);
  // The 2026 changes, to the second.
  EXPECT_EQ(berlin->nextTransition(tzUtcOf(2026, 3, 1, 0, 0)), tzUtcOf(2026, 3, 29, 1, 0));
  EXPECT_EQ(berlin->nextTransition(tzUtcOf(2026, 3, 29, 1, 0)), tzUtcOf(2026, 10, 25, 1, 0));
  EXPECT_EQ(berlin->offsetAt(tzUtcOf(2026, 3, 29, 1, 0) - 1), 3600);
  EXPECT_EQ(berlin->offsetAt(tzUtcOf(2026, 3, 29, 1, 0)), 7200);
}

TEST(TimeZone, WallTimesInGapsAndRepeats) {
  auto ny = TimeZone::load("America/New_York");
  ASSERT_TRUE(ny.ok()) << ny.error().message;
  // 02:30 on 2026-03-08 does not exist: the gap ends at 07:00Z.
  const auto gap = ny->fromWall(tzUtcOf(2026, 3, 8, 2, 30));
  EXPECT_TRUE(gap.in_gap);
  EXPECT_EQ(gap.utc, tzUtcOf(2026, 3, 8, 7, 0));
  // 01:30 on 2026-11-01 happens twice: the first is 05:30Z.
  const auto repeat = ny->fromWall(tzUtcOf(2026, 11, 1, 1, 30));
  EXPECT_FALSE(repeat.in_gap);
  EXPECT_EQ(repeat.utc, tzUtcOf(2026, 11, 1, 5, 30));
  EXPECT_EQ(ny->fromWall(tzUtcOf(2026, 6, 1, 12, 0)).utc, tzUtcOf(2026, 6, 1, 16, 0));
}

TEST(TimeZone, PosixRules) {
  auto berlin = TimeZone::parsePosix("CET-1CEST,M3.5.0,M10.5.0/3", "berlin-rule");
  ASSERT_TRUE(berlin.ok()) << berlin.error().message;
  EXPECT_EQ(berlin->nextTransition(tzUtcOf(2026, 3, 1, 0, 0)), tzUtcOf(2026, 3, 29, 1, 0));
  EXPECT_EQ(berlin->nextTransition(tzUtcOf(2026, 4, 1, 0, 0)), tzUtcOf(2026, 10, 25, 1, 0));
  // Southern hemisphere (Australia/Sydney): DST from October to April, quoted abbreviations.
  auto sydney = TimeZone::parsePosix("<+10>-10<+11>,M10.1.0,M4.1.0/3", "sydney-rule");
  ASSERT_TRUE(sydney.ok()) << sydney.error().message;
  EXPECT_EQ(sydney->offsetAt(tzUtcOf(2026, 1, 10, 0, 0)), 11 * 3600);
  EXPECT_EQ(sydney->offsetAt(tzUtcOf(2026, 7, 10, 0, 0)), 10 * 3600);
  // 2026-04-05 03:00 AEDT = 2026-04-04 16:00Z.
  EXPECT_EQ(sydney->nextTransition(tzUtcOf(2026, 3, 1, 0, 0)), tzUtcOf(2026, 4, 4, 16, 0));
  // No DST.
  auto fixed = TimeZone::parsePosix("<-03>3", "fixed");
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->offsetAt(tzUtcOf(2026, 7, 1, 0, 0)), -3 * 3600);
  EXPECT_FALSE(fixed->nextTransition(0).has_value());
  // Julian days: J60 is March 1 in every year.
  auto julian = TimeZone::parsePosix("XST0XDT,J60/0,J300/0", "julian");
  ASSERT_TRUE(julian.ok());
  EXPECT_EQ(julian->nextTransition(tzUtcOf(2028, 1, 1, 0, 0)), tzUtcOf(2028, 3, 1, 0, 0));
  for (const char* bad : {"", "E5", "EST", "EST5EDT,M3.2", "EST5EDT,M13.1.0,M11.1.0",
                          "EST5EDT,M3.2.0,M11.1.0junk", "EST99"}) {
    EXPECT_FALSE(TimeZone::parsePosix(bad, "bad").ok()) << bad;
  }
}

TEST(TimeZone, DamagedFilesAreRefused) {
  auto path = spec::zoneFile("America/New_York");
  ASSERT_TRUE(path.ok()) << path.error().message;
  const std::optional<std::string> bytes = readFile(*path);
  ASSERT_TRUE(bytes.has_value());
  ASSERT_TRUE(TimeZone::parseTzif(*bytes, "ny").ok());
  // Every truncation is refused or read without crashing; one cut inside the data is refused.
  for (size_t cut = 0; cut < bytes->size(); cut += 37) {
    (void)TimeZone::parseTzif(bytes->substr(0, cut), "cut");
  }
  EXPECT_FALSE(TimeZone::parseTzif(bytes->substr(0, 100), "cut").ok());
  EXPECT_FALSE(TimeZone::parseTzif("TZjf" + bytes->substr(4), "magic").ok());
  EXPECT_FALSE(TimeZone::parseTzif("", "empty").ok());
}

TEST(TimeZone, UnknownNamesAreRefused) {
  auto missing = TimeZone::load("Europe/Berln");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("not in the system's time zone database"),
            std::string::npos);
  for (const char* bad : {"../etc/passwd", "/etc/localtime", "Europe/../UTC", "", "a b"}) {
    auto refused = TimeZone::load(bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.error().message.find("not an IANA time zone name"), std::string::npos) << bad;
  }
  EXPECT_TRUE(TimeZone::load("UTC").ok());
}

}  // namespace
}  // namespace oe::triggers

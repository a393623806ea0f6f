// The timestamp text (common/clock.hpp) against the C library's calendar, across leap years,
// century rules and the ends of months and days.
#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>

#include "oe/common/clock.hpp"

namespace {

std::string viaGmtime(time_t seconds, int millis) {
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, millis);
  return buf;
}

TEST(IsoTime, MatchesGmtimeFrom1970To2400) {
  // Every ~13 hours over four centuries, plus each second around some boundaries.
  for (int64_t s = 0; s < int64_t{13'569'465'600}; s += 46'999) {
    ASSERT_EQ(oe::isoTime(s, static_cast<int>(s % 1000)), viaGmtime(s, static_cast<int>(s % 1000)))
        << s;
  }
  for (int64_t base : {int64_t{951'782'400}, int64_t{4'107'542'400}, int64_t{1'798'761'600}}) {
    for (int64_t s = base - 90'000; s < base + 90'000; s += 1) {
      ASSERT_EQ(oe::isoTime(s, 999), viaGmtime(s, 999)) << s;
    }
  }
}

TEST(IsoTime, NowHasTheDocumentedShape) {
  const std::string now = oe::isoNow();
  ASSERT_EQ(now.size(), 24u);
  EXPECT_EQ(now[10], 'T');
  EXPECT_EQ(now.back(), 'Z');
}

}  // namespace

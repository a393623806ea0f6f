// Next-fire computation; see cron_schedule.hpp.
#include "oe/triggers/cron_schedule.hpp"

#include <algorithm>

namespace oe::triggers {

namespace {

constexpr int64_t kSecondsPerDay = 86400;

int64_t floorDivide(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// The lowest set bit of `bits` at or above `from`, or -1.
int firstBitFrom(uint64_t bits, int from, int limit) {
  for (int i = from; i < limit; ++i) {
    if ((bits >> i & 1U) != 0) {
      return i;
    }
  }
  return -1;
}

}  // namespace

std::optional<int64_t> nextMatchingWall(const spec::CronExpr& expr, int64_t wall) {
  int64_t day = floorDivide(wall, kSecondsPerDay);
  const int64_t second_of_day = wall - day * kSecondsPerDay;
  // Round up to a whole minute.
  int start_minute = static_cast<int>((second_of_day + 59) / 60);
  for (int64_t n = 0; n <= kCronHorizonDays; ++n, ++day, start_minute = 0) {
    if (start_minute >= 24 * 60) {
      continue;
    }
    const CivilDate date = civilFromDays(day);
    if (!expr.matchesDay(date.day, date.month, weekdayOf(day))) {
      continue;
    }
    int hour = start_minute / 60;
    int minute_from = start_minute % 60;
    while (true) {
      const int start_hour = hour;
      hour = firstBitFrom(expr.hours, hour, 24);
      if (hour < 0) {
        break;
      }
      if (hour != start_hour) {
        minute_from = 0;
      }
      const int minute = firstBitFrom(expr.minutes, minute_from, 60);
      if (minute >= 0) {
        return day * kSecondsPerDay + hour * 3600 + minute * 60;
      }
      ++hour;
      minute_from = 0;
    }
  }
  return std::nullopt;
}

std::optional<int64_t> nextFire(const spec::CronExpr& expr, const TimeZone& zone, int64_t after) {
  // A wall time w fires no later than w - (the smallest offset in effect around it), so no wall
  // time before after + that offset can fire after `after`: start the scan there.
  int32_t smallest = zone.offsetAt(after - 2 * kSecondsPerDay);
  for (const int64_t when :
       zone.transitionsIn(after - 2 * kSecondsPerDay, after + 2 * kSecondsPerDay)) {
    smallest = std::min(smallest, zone.offsetAt(when));
  }
  int64_t wall = floorDivide(after + smallest, 60) * 60;
  const int64_t give_up = after + (kCronHorizonDays + 2) * kSecondsPerDay;
  while (wall < give_up) {
    const auto match = nextMatchingWall(expr, wall);
    if (!match) {
      return std::nullopt;
    }
    const TimeZone::Instant instant = zone.fromWall(*match);
    if (instant.utc > after) {
      return instant.utc;
    }
    wall = *match + 60;
  }
  return std::nullopt;
}

}  // namespace oe::triggers

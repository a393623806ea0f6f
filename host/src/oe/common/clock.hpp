// The one timestamp format oe writes everywhere (event `ts`, state and cache columns):
// ISO-8601 UTC with milliseconds, e.g. 2026-05-26T10:00:00.123Z.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>

namespace oe {

// The text of `seconds` since the epoch (UTC) plus `millis`. Computed with the days-to-civil
// algorithm (H. Hinnant) instead of gmtime_r + snprintf: every node writes 3-5 timestamps.
inline std::string isoTime(int64_t seconds, int millis) {
  int64_t days = seconds / 86400;
  int64_t rem = seconds % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const int64_t doe = days - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  char buf[32] = "0000-00-00T00:00:00.000Z";
  auto put = [&buf](size_t at, int64_t value, int width) {
    for (int i = width - 1; i >= 0; --i) {
      buf[at + static_cast<size_t>(i)] = static_cast<char>('0' + value % 10);
      value /= 10;
    }
  };
  put(0, year, 4);
  put(5, month, 2);
  put(8, day, 2);
  put(11, rem / 3600, 2);
  put(14, rem / 60 % 60, 2);
  put(17, rem % 60, 2);
  put(20, millis, 3);
  return std::string(buf, 24);
}

inline std::string isoNow() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return isoTime(now.tv_sec, static_cast<int>(now.tv_nsec / 1000000));
}

}  // namespace oe

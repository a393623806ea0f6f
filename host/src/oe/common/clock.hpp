// The one timestamp format oe writes everywhere (event `ts`, state and cache columns):
// ISO-8601 UTC with milliseconds, e.g. 2026-05-26T10:00:00.123Z.
#pragma once

#include <cstdio>
#include <ctime>
#include <string>

namespace oe {

inline std::string isoNow() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  std::tm utc{};
  gmtime_r(&now.tv_sec, &utc);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(now.tv_nsec / 1000000));
  return buf;
}

}  // namespace oe

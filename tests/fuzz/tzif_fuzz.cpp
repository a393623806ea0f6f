// libFuzzer target: bytes as a TZif file (what /usr/share/zoneinfo, or $TZDIR, holds), the
// first byte choosing a TZif file (even) or a POSIX TZ rule (odd, the rest as its text).
// Invariants: a zone that loads answers every question: offsets within a day and a bit,
// transitions strictly after the instant asked about and in order, and a wall time that maps to
// an instant whose wall time is it (or, in a gap, an instant at a transition).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "oe/triggers/time_zone.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto zone = (data[0] & 1U) == 0 ? oe::triggers::TimeZone::parseTzif(rest, "fuzz")
                                  : oe::triggers::TimeZone::parsePosix(rest, "fuzz");
  if (!zone.ok()) {
    return 0;
  }
  // From 1901 to 2400 in uneven steps.
  for (int64_t t = -2'145'916'800; t < 13'569'465'600; t += 86'400 * 397 + 3607) {
    const int32_t offset = zone->offsetAt(t);
    if (offset < -89'999 || offset > 93'599) {
      std::abort();
    }
    if (const auto next = zone->nextTransition(t); next && *next <= t) {
      std::abort();
    }
    const int64_t wall = t + offset;
    const auto instant = zone->fromWall(wall);
    if (!instant.in_gap && instant.utc + zone->offsetAt(instant.utc) != wall) {
      std::abort();
    }
    if (instant.in_gap && zone->offsetAt(instant.utc - 1) == zone->offsetAt(instant.utc) &&
        instant.utc != wall - zone->offsetAt(wall)) {
      std::abort();
    }
  }
  return 0;
}

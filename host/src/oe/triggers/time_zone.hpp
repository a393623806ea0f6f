// Time zones for cron schedules, read from the system's TZif files (RFC 8536) since GCC 12's
// libstdc++ has no std::chrono zone database: the transitions of the file, then those its
// footer's POSIX TZ rule gives for the years after the last one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/result.hpp"

namespace oe::triggers {

// Calendar helpers on days since 1970-01-01 (proleptic Gregorian).
int64_t daysFromCivil(int64_t year, int month, int day);
struct CivilDate {
  int64_t year;
  int month;  // 1-12
  int day;    // 1-31
};
CivilDate civilFromDays(int64_t days);
int weekdayOf(int64_t days);  // 0 = Sunday

class TimeZone {
 public:
  // The zone's transitions are generated from its footer rule up to this year; later instants
  // keep the last offset.
  static constexpr int64_t kLastRuleYear = 2500;

  static TimeZone utc();
  // The zone named `name` from the system's database (spec::zoneFile).
  static Result<TimeZone> load(std::string_view name);
  // A TZif file's bytes (version 1 to 4). Leap-second files ("right/") are refused.
  static Result<TimeZone> parseTzif(std::string_view bytes, std::string name);
  // A POSIX TZ string, e.g. "CET-1CEST,M3.5.0,M10.5.0/3" (the footer of a TZif file).
  static Result<TimeZone> parsePosix(std::string_view rule, std::string name);

  [[nodiscard]] const std::string& name() const { return name_; }
  // Seconds east of UTC in effect at `utc` (seconds since the epoch).
  [[nodiscard]] int32_t offsetAt(int64_t utc) const;
  // The first transition strictly after `utc`.
  [[nodiscard]] std::optional<int64_t> nextTransition(int64_t utc) const;
  // The transitions in [from, to], and the offset before the first of them.
  [[nodiscard]] std::vector<int64_t> transitionsIn(int64_t from, int64_t to) const;

  // A wall-clock time (seconds since the epoch as if the zone were UTC) as an instant. A wall
  // time that occurs twice (clocks set back) is its first occurrence; one that does not occur
  // (clocks set forward) is the instant the gap ends, with `in_gap` set.
  struct Instant {
    int64_t utc = 0;
    bool in_gap = false;
  };
  [[nodiscard]] Instant fromWall(int64_t wall) const;

 private:
  void appendRuleTransitions(std::string_view rule);

  std::string name_;
  int32_t initial_offset_ = 0;   // before the first transition
  std::vector<int64_t> at_;      // transition instants, ascending
  std::vector<int32_t> offset_;  // the offset from at_[i] on
};

}  // namespace oe::triggers

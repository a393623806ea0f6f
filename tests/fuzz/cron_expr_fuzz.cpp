// libFuzzer target: a cron expression (line 1) and, optionally, a POSIX TZ rule for its zone
// (line 2), as `triggers:` of experience.yaml holds them. Invariants: a parsed expression's
// next fire is after the instant asked about, matches the expression's wall time or ends a gap
// that swallowed a match, and the next fire after it is later still.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "oe/spec/trigger.hpp"
#include "oe/triggers/cron_schedule.hpp"
#include "oe/triggers/time_zone.hpp"

namespace {

bool matchesWall(const oe::spec::CronExpr& expr, int64_t wall) {
  const int64_t day = wall >= 0 ? wall / 86400 : (wall - 86399) / 86400;
  const int64_t second = wall - day * 86400;
  const oe::triggers::CivilDate date = oe::triggers::civilFromDays(day);
  return expr.matches(static_cast<int>(second / 60 % 60), static_cast<int>(second / 3600), date.day,
                      date.month, oe::triggers::weekdayOf(day));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string_view expression = input.substr(0, newline);
  auto expr = oe::spec::parseCron(expression);
  oe::triggers::TimeZone zone = oe::triggers::TimeZone::utc();
  if (newline != std::string_view::npos) {
    auto parsed = oe::triggers::TimeZone::parsePosix(input.substr(newline + 1), "fuzz");
    if (parsed.ok()) {
      zone = std::move(parsed).value();
    }
  }
  if (!expr.ok()) {
    if (expr.error().message.find("cron expression \"") == std::string::npos) {
      std::abort();  // every error names the expression
    }
    return 0;
  }
  // 2026-03-01, stepping through a year in uneven strides.
  int64_t after = 1'772'323'200 + static_cast<int64_t>(size) * 7919;
  for (int i = 0; i < 4; ++i) {
    const auto next = oe::triggers::nextFire(*expr, zone, after);
    if (!next) {
      break;  // only possible when nothing matches for decades
    }
    if (*next <= after) {
      std::abort();
    }
    const bool gap_end = zone.offsetAt(*next - 1) < zone.offsetAt(*next);
    if (!matchesWall(*expr, *next + zone.offsetAt(*next)) && !gap_end) {
      std::abort();
    }
    after = *next;
  }
  return 0;
}

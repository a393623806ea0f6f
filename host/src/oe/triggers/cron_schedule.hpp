// When a cron expression fires in a time zone (docs/serve.md, "Triggers"): expressions match
// wall-clock minutes; a matching minute that the clocks skip (spring forward) fires once at the
// instant the gap ends, and one they repeat (fall back) fires at its first occurrence only.
#pragma once

#include <cstdint>
#include <optional>

#include "oe/spec/trigger.hpp"
#include "oe/triggers/time_zone.hpp"

namespace oe::triggers {

// Looked ahead this far for a matching day before giving up: the rarest expressions that parse
// (February 29 on a given weekday) match once in 28 years.
inline constexpr int64_t kCronHorizonDays = 366 * 30;

// The first wall-clock minute at or after `wall` (seconds, the zone's clock read as UTC) that
// `expr` matches; nullopt when none within kCronHorizonDays.
std::optional<int64_t> nextMatchingWall(const spec::CronExpr& expr, int64_t wall);

// The first instant (seconds since the epoch) strictly after `after` at which `expr` fires in
// `zone`; nullopt when it does not within kCronHorizonDays.
std::optional<int64_t> nextFire(const spec::CronExpr& expr, const TimeZone& zone, int64_t after);

}  // namespace oe::triggers

// `triggers:` of experience.yaml (an oe addition, docs/serve.md "Triggers"): cron schedules and
// signed webhooks that start runs under `oe serve`. The model, the cron expression parser and
// the time zone lookup that `oe validate` and the scheduler (src/oe/triggers) share.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/secrets/resolve.hpp"

namespace oe::spec {

// A parsed 5-field cron expression: minute hour day-of-month month day-of-week, each a set of
// the values it allows (bit n = value n).
struct CronExpr {
  uint64_t minutes = 0;  // 0-59
  uint32_t hours = 0;    // 0-23
  uint32_t days = 0;     // 1-31
  uint16_t months = 0;   // 1-12
  uint8_t weekdays = 0;  // 0-6, 0 = Sunday (7 in the text is Sunday too)
  // A day field is restricted when it does not start with `*`; when both are, a day matches
  // if either does (Vixie cron's rule, which POSIX and every common cron follow).
  bool days_restricted = false;
  bool weekdays_restricted = false;

  [[nodiscard]] bool matchesDay(int day_of_month, int month, int weekday) const;
  [[nodiscard]] bool matches(int minute, int hour, int day_of_month, int month, int weekday) const;
};

// Parses `text`; the error names the field (its position and name), the part of it that is
// wrong, and what is accepted.
Result<CronExpr> parseCron(std::string_view text);

// The TZif file of an IANA zone name under the system's time zone database ($TZDIR, else
// /usr/share/zoneinfo). The name is checked first (no absolute path, no `..`), and the file must
// be a TZif file. "UTC" without a database is an empty path (the caller uses UTC itself).
Result<std::filesystem::path> zoneFile(std::string_view name);

enum class Missed : uint8_t { kSkip, kRunOnce };

struct CronTrigger {
  std::string expression;
  CronExpr expr;  // parsed; all empty when the expression is wrong (the validator reports it)
  std::string timezone = "UTC";
  Missed missed = Missed::kSkip;
};

struct WebhookTrigger {
  std::string name;
  secrets::Declaration secret;  // name: "webhook <name>"; env or file
};

struct TriggerSpec {
  size_t index = 0;  // position in `triggers:`
  // Stable across edits that reorder triggers: "cron:<expression>@<zone>" (with "#2", "#3", ...
  // for a repeated one) or "webhook:<name>". The fired-once record is keyed by it.
  std::string id;
  std::optional<CronTrigger> cron;
  std::optional<WebhookTrigger> webhook;
  Json args = Json::object();  // `args:` as written
  // `args_from:` in file order: arg name -> `$.path` over {body, headers} of a delivery.
  std::vector<std::pair<std::string, std::string>> args_from;
  int line = 0;  // of the trigger's mapping
  int column = 0;
};

// The triggers of `exp.raw`'s `triggers:`, with positions from exp's marks (a malformed entry
// reads as empty: the validator reports it). The loader fills Experience::triggers with it.
struct Experience;
std::vector<TriggerSpec> triggersOf(const Experience& exp);

[[nodiscard]] std::string_view toString(Missed missed);

}  // namespace oe::spec

// The cron parser, the zone lookup and the reading of `triggers:`; see trigger.hpp.
#include "oe/spec/trigger.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <map>

#include "oe/spec/experience.hpp"
#include "oe/spec/schema_check.hpp"

namespace oe::spec {

namespace {

struct CronFieldInfo {
  const char* name;
  int min;
  int max;  // as written: day-of-week accepts 7 (Sunday)
  const char* hint;
};

constexpr std::array<CronFieldInfo, 5> kCronFields = {{
    {"minute", 0, 59, "0-59"},
    {"hour", 0, 23, "0-23"},
    {"day-of-month", 1, 31, "1-31"},
    {"month", 1, 12, "1-12 or JAN-DEC"},
    {"day-of-week", 0, 7, "0-7 (0 and 7 are Sunday) or SUN-SAT"},
}};

constexpr std::array<std::string_view, 12> kMonthNames = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                                          "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<std::string_view, 7> kDayNames = {"SUN", "MON", "TUE", "WED",
                                                       "THU", "FRI", "SAT"};

std::string upperAscii(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

// One value of field `f`: a number or (month, day-of-week) a three-letter name.
std::optional<int> cronValueOf(size_t f, std::string_view text) {
  if (!text.empty() && std::isalpha(static_cast<unsigned char>(text[0])) != 0) {
    const std::string name = upperAscii(text);
    if (f == 3) {
      for (size_t i = 0; i < kMonthNames.size(); ++i) {
        if (name == kMonthNames[i]) {
          return static_cast<int>(i) + 1;
        }
      }
    } else if (f == 4) {
      for (size_t i = 0; i < kDayNames.size(); ++i) {
        if (name == kDayNames[i]) {
          return static_cast<int>(i);
        }
      }
    }
    return std::nullopt;
  }
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

// Parses one field into `bits`; the error text is what follows `field N (name) "text": `.
Result<uint64_t> parseCronField(size_t f, std::string_view field) {
  const CronFieldInfo& info = kCronFields[f];
  uint64_t bits = 0;
  size_t start = 0;
  while (true) {
    const size_t comma = field.find(',', start);
    const std::string_view item = field.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty()) {
      return makeError(
          "an empty list item (a stray comma); write values separated by single "
          "commas, e.g. 1,15,30");
    }
    std::string_view range = item;
    int step = 1;
    if (const size_t slash = item.find('/'); slash != std::string_view::npos) {
      range = item.substr(0, slash);
      const std::string_view step_text = item.substr(slash + 1);
      const auto [end, ec] =
          std::from_chars(step_text.data(), step_text.data() + step_text.size(), step);
      if (step_text.empty() || ec != std::errc() || end != step_text.data() + step_text.size() ||
          step <= 0) {
        return makeError("the step \"/" + std::string(step_text) +
                         "\" is not a positive whole number; write e.g. */15");
      }
      if (step > info.max) {
        return makeError("the step /" + std::to_string(step) +
                         " is larger than the field's "
                         "range " +
                         info.hint +
                         ", so it would match one value only; write that "
                         "value instead");
      }
    }
    int low = info.min;
    int high = info.max;
    if (range != "*") {
      const size_t dash = range.find('-', 1);
      const std::string_view low_text = range.substr(0, dash);
      const auto low_value = cronValueOf(f, low_text);
      if (!low_value) {
        return makeError("\"" + std::string(low_text) + "\" is not a value of this field; write " +
                         info.hint + ", * or a range like 1-5");
      }
      low = *low_value;
      high = low;
      if (dash != std::string_view::npos) {
        const std::string_view high_text = range.substr(dash + 1);
        const auto high_value = cronValueOf(f, high_text);
        if (!high_value) {
          return makeError("\"" + std::string(high_text) +
                           "\" is not a value of this field; "
                           "write " +
                           info.hint);
        }
        high = *high_value;
      } else if (range.size() != item.size()) {
        high = info.max;  // `a/step`: from a to the end of the range, as Vixie cron reads it
      }
      for (const int v : {low, high}) {
        if (v < info.min || v > info.max) {
          return makeError(std::to_string(v) + " is out of range; write " + info.hint);
        }
      }
      if (low > high) {
        return makeError("the range " + std::to_string(low) + "-" + std::to_string(high) +
                         " runs backwards; write the smaller value first (a list like 22-23,0-2 "
                         "wraps around)");
      }
    }
    for (int v = low; v <= high; v += step) {
      bits |= uint64_t{1} << (f == 4 && v == 7 ? 0 : v);
    }
    if (comma == std::string_view::npos) {
      break;
    }
    start = comma + 1;
  }
  return bits;
}

std::string stringAt(const Json& object, const char* key) {
  if (!object.is_object()) {
    return {};
  }
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

bool CronExpr::matchesDay(int day_of_month, int month, int weekday) const {
  if ((months >> month & 1U) == 0) {
    return false;
  }
  const bool dom = (days >> day_of_month & 1U) != 0;
  const bool dow = (weekdays >> weekday & 1U) != 0;
  return days_restricted && weekdays_restricted ? (dom || dow) : (dom && dow);
}

bool CronExpr::matches(int minute, int hour, int day_of_month, int month, int weekday) const {
  return (minutes >> minute & 1U) != 0 && (hours >> hour & 1U) != 0 &&
         matchesDay(day_of_month, month, weekday);
}

Result<CronExpr> parseCron(std::string_view text) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) {
      ++i;
    }
    const size_t begin = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') {
      ++i;
    }
    if (i > begin) {
      fields.push_back(text.substr(begin, i - begin));
    }
  }
  const std::string quoted = "cron expression \"" + std::string(text) + "\"";
  if (fields.size() != kCronFields.size()) {
    return makeError(quoted + " has " + std::to_string(fields.size()) +
                     " fields; write 5, separated by spaces: minute hour day-of-month month "
                     "day-of-week (e.g. \"0 7 * * 1-5\": 07:00 on weekdays)");
  }
  CronExpr expr;
  for (size_t f = 0; f < kCronFields.size(); ++f) {
    auto bits = parseCronField(f, fields[f]);
    if (!bits) {
      return makeError(quoted + ": field " + std::to_string(f + 1) + " (" + kCronFields[f].name +
                       ") \"" + std::string(fields[f]) + "\": " + bits.error().message);
    }
    switch (f) {
      case 0:
        expr.minutes = *bits;
        break;
      case 1:
        expr.hours = static_cast<uint32_t>(*bits);
        break;
      case 2:
        expr.days = static_cast<uint32_t>(*bits);
        expr.days_restricted = fields[f][0] != '*';
        break;
      case 3:
        expr.months = static_cast<uint16_t>(*bits);
        break;
      case 4:
      default:
        expr.weekdays = static_cast<uint8_t>(*bits);
        expr.weekdays_restricted = fields[f][0] != '*';
        break;
    }
  }
  // A day-of-month no month in the set has (30 2 *, 31 4,6 *) never fires: refused rather than
  // left to sit silently, unless day-of-week can still match (the OR rule).
  if (!(expr.days_restricted && expr.weekdays_restricted)) {
    constexpr std::array<int, 13> kLongest = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool any = false;
    for (int month = 1; month <= 12 && !any; ++month) {
      if ((expr.months >> month & 1U) != 0) {
        for (int day = 1; day <= kLongest[static_cast<size_t>(month)] && !any; ++day) {
          any = (expr.days >> day & 1U) != 0;
        }
      }
    }
    if (!any) {
      return makeError(quoted + ": field 3 (day-of-month) \"" + std::string(fields[2]) +
                       "\" names no day that the months of field 4 (\"" + std::string(fields[3]) +
                       "\") have, so it would never fire; fix the day or the month");
    }
  }
  return expr;
}

Result<std::filesystem::path> zoneFile(std::string_view name) {
  const std::string quoted = "time zone \"" + std::string(name) + "\"";
  const auto bad_name = [&quoted] {
    return makeError(quoted +
                     " is not an IANA time zone name; write one such as UTC, "
                     "Europe/Berlin or America/New_York");
  };
  if (name.empty() || name.size() > 255 || name.front() == '/') {
    return bad_name();
  }
  size_t begin = 0;
  while (begin <= name.size()) {
    const size_t slash = name.find('/', begin);
    const std::string_view part = name.substr(
        begin, slash == std::string_view::npos ? std::string_view::npos : slash - begin);
    if (part.empty() || part == "." || part == "..") {
      return bad_name();
    }
    for (const char c : part) {
      if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_' && c != '-' && c != '+') {
        return bad_name();
      }
    }
    if (slash == std::string_view::npos) {
      break;
    }
    begin = slash + 1;
  }
  const char* tzdir = std::getenv("TZDIR");  // NOLINT(concurrency-mt-unsafe): read-only use
  const std::filesystem::path dir = tzdir != nullptr && *tzdir != '\0'
                                        ? std::filesystem::path(tzdir)
                                        : std::filesystem::path("/usr/share/zoneinfo");
  const std::filesystem::path file = dir / std::string(name);
  std::ifstream in(file, std::ios::binary);
  char magic[4] = {};
  if (!in.read(magic, sizeof magic) || std::string_view(magic, 4) != "TZif") {
    if (name == "UTC" || name == "Etc/UTC") {
      return std::filesystem::path();
    }
    return makeError(quoted + " is not in the system's time zone database (" + dir.string() +
                     "): write an IANA name such as Europe/Berlin or America/New_York (names "
                     "are case-sensitive), or install the tzdata package");
  }
  return file;
}

std::vector<TriggerSpec> triggersOf(const Experience& exp) {
  std::vector<TriggerSpec> out;
  auto list = exp.raw.is_object() ? exp.raw.find("triggers") : exp.raw.end();
  if (!exp.raw.is_object() || list == exp.raw.end() || !list->is_array()) {
    return out;
  }
  std::map<std::string, int> seen;
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& item = (*list)[i];
    TriggerSpec trigger;
    trigger.index = i;
    const Mark mark = exp.markOf("/triggers/" + std::to_string(i));
    trigger.line = mark.line;
    trigger.column = mark.column;
    if (!item.is_object()) {
      out.push_back(std::move(trigger));
      continue;
    }
    if (auto cron = item.find("cron"); cron != item.end() && cron->is_string()) {
      CronTrigger c;
      c.expression = cron->get<std::string>();
      if (auto parsed = parseCron(c.expression)) {
        c.expr = *parsed;
      }
      if (const std::string zone = stringAt(item, "timezone"); !zone.empty()) {
        c.timezone = zone;
      }
      c.missed = stringAt(item, "missed") == "run_once" ? Missed::kRunOnce : Missed::kSkip;
      trigger.id = "cron:" + c.expression + "@" + c.timezone;
      trigger.cron = std::move(c);
    } else if (auto hook = item.find("webhook"); hook != item.end() && hook->is_object()) {
      WebhookTrigger w;
      w.name = stringAt(*hook, "name");
      if (auto secret = hook->find("secret"); secret != hook->end() && secret->is_object()) {
        w.secret.env = stringAt(*secret, "env");
        w.secret.file = stringAt(*secret, "file");
      }
      w.secret.name = "webhook " + w.name;
      w.secret.line = exp.markOf("/triggers/" + std::to_string(i) + "/webhook/secret").line;
      trigger.id = "webhook:" + w.name;
      trigger.webhook = std::move(w);
    }
    if (!trigger.id.empty()) {
      const int n = ++seen[trigger.id];
      if (n > 1) {
        trigger.id += "#" + std::to_string(n);
      }
    }
    if (auto args = item.find("args"); args != item.end() && args->is_object()) {
      trigger.args = *args;
    }
    if (auto from = item.find("args_from"); from != item.end() && from->is_object()) {
      for (auto it = from->begin(); it != from->end(); ++it) {
        if (it.value().is_string()) {
          trigger.args_from.emplace_back(it.key(), it.value().get<std::string>());
        }
      }
      // JSON objects are sorted by key; the file's order is the declaration order.
      std::stable_sort(trigger.args_from.begin(), trigger.args_from.end(),
                       [&exp, i](const auto& a, const auto& b) {
                         std::string pa = "/triggers/" + std::to_string(i) + "/args_from";
                         std::string pb = pa;
                         appendPointerSegment(pa, a.first);
                         appendPointerSegment(pb, b.first);
                         const Mark ma = exp.keyMarkOf(pa);
                         const Mark mb = exp.keyMarkOf(pb);
                         return ma.line != mb.line ? ma.line < mb.line : ma.column < mb.column;
                       });
    }
    out.push_back(std::move(trigger));
  }
  return out;
}

std::string_view toString(Missed missed) {
  switch (missed) {
    case Missed::kRunOnce:
      return "run_once";
    case Missed::kSkip:
    default:
      return "skip";
  }
}

}  // namespace oe::spec

// TZif files and POSIX TZ rules; see time_zone.hpp.
#include "oe/triggers/time_zone.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <utility>

#include "oe/common/file.hpp"
#include "oe/spec/trigger.hpp"

namespace oe::triggers {

namespace {

constexpr int64_t kDay = 86400;
// An offset beyond a day and a bit is no zone's: RFC 8536 bounds utoff to -89999..93599.
constexpr int32_t kMaxOffset = 93599;
constexpr int32_t kMinOffset = -89999;
// No real zone has this many transitions (the fattest files hold a few hundred); a larger count
// is a damaged or hostile file.
constexpr uint32_t kMaxTransitions = 100000;

int64_t floorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

bool isLeap(int64_t year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int daysInMonth(int64_t year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && isLeap(year) ? 29 : kDays[month - 1];
}

// A POSIX TZ rule's date: Jn (1-365, February 29 never counted), n (0-365) or Mm.w.d.
struct RuleDate {
  char form = 'M';  // 'J', 'D' (zero-based day) or 'M'
  int month = 0;
  int week = 0;
  int weekday = 0;
  int day = 0;
};

struct PosixRule {
  int32_t std_offset = 0;  // seconds east of UTC
  bool has_dst = false;
  int32_t dst_offset = 0;
  RuleDate start;
  RuleDate end;
  int32_t start_time = 7200;  // local time of day, may be negative or past 24h (RFC 8536 3.3.1)
  int32_t end_time = 7200;
};

class RuleParser {
 public:
  explicit RuleParser(std::string_view text) : text_(text) {}

  Result<PosixRule> parse() {
    PosixRule rule;
    if (!name()) {
      return fail("a zone abbreviation (3 or more letters, or <...>)");
    }
    auto std_offset = offset(24);
    if (!std_offset) {
      return fail("the standard time's offset (e.g. 5 or -1:30)");
    }
    rule.std_offset = -*std_offset;  // POSIX counts west of Greenwich as positive
    if (done()) {
      return rule;
    }
    if (!name()) {
      return fail("a daylight saving time abbreviation");
    }
    rule.has_dst = true;
    rule.dst_offset = rule.std_offset + 3600;
    if (!done() && peek() != ',') {
      auto dst_offset = offset(24);
      if (!dst_offset) {
        return fail("the daylight saving time's offset");
      }
      rule.dst_offset = -*dst_offset;
    }
    if (done()) {
      // POSIX leaves the default rule to the implementation; this is the US one, as glibc's.
      rule.start = RuleDate{'M', 3, 2, 0, 0};
      rule.end = RuleDate{'M', 11, 1, 0, 0};
      return rule;
    }
    for (int part = 0; part < 2; ++part) {
      if (!eat(',')) {
        return fail("',' and a transition date");
      }
      RuleDate& date = part == 0 ? rule.start : rule.end;
      int32_t& time = part == 0 ? rule.start_time : rule.end_time;
      if (!ruleDate(date)) {
        return fail("a date: Jn, n or Mm.w.d");
      }
      if (eat('/')) {
        auto t = offset(167);
        if (!t) {
          return fail("a time of day after '/'");
        }
        time = *t;
      }
    }
    if (!done()) {
      return fail("the end of the rule");
    }
    return rule;
  }

 private:
  [[nodiscard]] bool done() const { return pos_ >= text_.size(); }
  [[nodiscard]] char peek() const { return done() ? '\0' : text_[pos_]; }
  bool eat(char c) {
    if (peek() == c && !done()) {
      ++pos_;
      return true;
    }
    return false;
  }
  Error fail(const char* expected) const {
    return makeError("POSIX TZ rule \"" + std::string(text_) + "\": expected " + expected +
                     " at character " + std::to_string(pos_ + 1));
  }

  bool name() {
    if (eat('<')) {
      const size_t begin = pos_;
      while (!done() && (std::isalnum(static_cast<unsigned char>(peek())) != 0 || peek() == '+' ||
                         peek() == '-')) {
        ++pos_;
      }
      return pos_ - begin >= 3 && eat('>');
    }
    const size_t begin = pos_;
    while (!done() && std::isalpha(static_cast<unsigned char>(peek())) != 0) {
      ++pos_;
    }
    return pos_ - begin >= 3;
  }

  std::optional<int> number(int max_digits) {
    const size_t begin = pos_;
    int value = 0;
    while (!done() && std::isdigit(static_cast<unsigned char>(peek())) != 0 &&
           static_cast<int>(pos_ - begin) < max_digits) {
      value = value * 10 + (peek() - '0');
      ++pos_;
    }
    if (pos_ == begin) {
      return std::nullopt;
    }
    return value;
  }

  // [+-]hh[:mm[:ss]] in seconds, hours at most `max_hours`.
  std::optional<int32_t> offset(int max_hours) {
    int sign = 1;
    if (eat('-')) {
      sign = -1;
    } else {
      (void)eat('+');
    }
    auto hours = number(3);
    if (!hours || *hours > max_hours) {
      return std::nullopt;
    }
    int32_t seconds = *hours * 3600;
    for (int scale : {60, 1}) {
      if (!eat(':')) {
        break;
      }
      auto part = number(2);
      if (!part || *part > 59) {
        return std::nullopt;
      }
      seconds += *part * scale;
    }
    return sign * seconds;
  }

  bool ruleDate(RuleDate& date) {
    if (eat('J')) {
      auto day = number(3);
      date = RuleDate{'J', 0, 0, 0, day.value_or(0)};
      return day && *day >= 1 && *day <= 365;
    }
    if (eat('M')) {
      auto month = number(2);
      if (!month || *month < 1 || *month > 12 || !eat('.')) {
        return false;
      }
      auto week = number(1);
      if (!week || *week < 1 || *week > 5 || !eat('.')) {
        return false;
      }
      auto weekday = number(1);
      if (!weekday || *weekday > 6) {
        return false;
      }
      date = RuleDate{'M', *month, *week, *weekday, 0};
      return true;
    }
    auto day = number(3);
    date = RuleDate{'D', 0, 0, 0, day.value_or(0)};
    return day && *day <= 365;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

int64_t ruleDay(const RuleDate& date, int64_t year) {
  const int64_t jan1 = daysFromCivil(year, 1, 1);
  switch (date.form) {
    case 'J':
      return jan1 + date.day - 1 + (isLeap(year) && date.day >= 60 ? 1 : 0);
    case 'D':
      return jan1 + date.day;
    case 'M':
    default: {
      const int64_t first = daysFromCivil(year, date.month, 1);
      int day = 1 + (date.weekday - weekdayOf(first) + 7) % 7 + (date.week - 1) * 7;
      while (day > daysInMonth(year, date.month)) {
        day -= 7;
      }
      return first + day - 1;
    }
  }
}

uint32_t be32(std::string_view bytes, size_t at) {
  return static_cast<uint32_t>(static_cast<unsigned char>(bytes[at])) << 24 |
         static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + 1])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + 2])) << 8 |
         static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + 3]));
}

int64_t be64(std::string_view bytes, size_t at) {
  return static_cast<int64_t>(static_cast<uint64_t>(be32(bytes, at)) << 32 | be32(bytes, at + 4));
}

struct TzifHeader {
  char version = 0;
  uint32_t isutcnt = 0;
  uint32_t isstdcnt = 0;
  uint32_t leapcnt = 0;
  uint32_t timecnt = 0;
  uint32_t typecnt = 0;
  uint32_t charcnt = 0;

  [[nodiscard]] uint64_t dataSize(uint64_t time_size) const {
    return uint64_t{timecnt} * time_size + timecnt + uint64_t{typecnt} * 6 + charcnt +
           uint64_t{leapcnt} * (time_size + 4) + isstdcnt + isutcnt;
  }
};

constexpr size_t kHeaderSize = 44;

Result<TzifHeader> readHeader(std::string_view bytes, size_t at, const std::string& name) {
  if (bytes.size() < at + kHeaderSize || bytes.substr(at, 4) != "TZif") {
    return makeError("time zone " + name + ": not a TZif file (no \"TZif\" header)");
  }
  TzifHeader h;
  h.version = bytes[at + 4];
  h.isutcnt = be32(bytes, at + 20);
  h.isstdcnt = be32(bytes, at + 24);
  h.leapcnt = be32(bytes, at + 28);
  h.timecnt = be32(bytes, at + 32);
  h.typecnt = be32(bytes, at + 36);
  h.charcnt = be32(bytes, at + 40);
  if (h.typecnt == 0 || h.typecnt > 256 || h.charcnt == 0 || h.timecnt > kMaxTransitions ||
      (h.isutcnt != 0 && h.isutcnt != h.typecnt) || (h.isstdcnt != 0 && h.isstdcnt != h.typecnt)) {
    return makeError("time zone " + name +
                     ": the TZif header's counts are inconsistent "
                     "(a damaged file?)");
  }
  return h;
}

}  // namespace

int64_t daysFromCivil(int64_t year, int month, int day) {
  // Howard Hinnant's days_from_civil.
  year -= month <= 2 ? 1 : 0;
  const int64_t era = floorDiv(year, 400);
  const int64_t yoe = year - era * 400;
  const int64_t doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

CivilDate civilFromDays(int64_t days) {
  days += 719468;
  const int64_t era = floorDiv(days, 146097);
  const int64_t doe = days - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return CivilDate{yoe + era * 400 + (month <= 2 ? 1 : 0), month, day};
}

int weekdayOf(int64_t days) { return static_cast<int>(((days % 7) + 11) % 7); }

TimeZone TimeZone::utc() {
  TimeZone zone;
  zone.name_ = "UTC";
  return zone;
}

Result<TimeZone> TimeZone::load(std::string_view name) {
  auto file = spec::zoneFile(name);
  if (!file) {
    return file.error();
  }
  if (file->empty()) {
    return utc();  // UTC on a machine without a zone database
  }
  const std::optional<std::string> bytes = readFile(*file);
  if (!bytes) {
    return makeError("time zone \"" + std::string(name) + "\": cannot read " + file->string());
  }
  return parseTzif(*bytes, std::string(name));
}

Result<TimeZone> TimeZone::parseTzif(std::string_view bytes, std::string name) {
  auto first = readHeader(bytes, 0, name);
  if (!first) {
    return first.error();
  }
  TzifHeader h = *first;
  size_t at = kHeaderSize;
  uint64_t time_size = 4;
  if (h.version >= '2') {
    // Version 2+: skip the 32-bit block for the 64-bit one after the second header.
    const uint64_t skip = h.dataSize(4);
    if (bytes.size() < at + skip) {
      return makeError("time zone " + name + ": the TZif file is cut short");
    }
    at += static_cast<size_t>(skip);
    auto second = readHeader(bytes, at, name);
    if (!second) {
      return second.error();
    }
    h = *second;
    at += kHeaderSize;
    time_size = 8;
  }
  if (h.leapcnt != 0) {
    return makeError("time zone " + name +
                     " counts leap seconds (a \"right/\" zone); use the "
                     "zone of the same name without \"right/\"");
  }
  if (bytes.size() < at + h.dataSize(time_size)) {
    return makeError("time zone " + name + ": the TZif file is cut short");
  }
  TimeZone zone;
  zone.name_ = std::move(name);
  const size_t times_at = at;
  const size_t index_at = times_at + h.timecnt * time_size;
  const size_t types_at = index_at + h.timecnt;
  std::vector<int32_t> type_offsets(h.typecnt);
  for (uint32_t i = 0; i < h.typecnt; ++i) {
    const auto offset = static_cast<int32_t>(be32(bytes, types_at + size_t{i} * 6));
    if (offset < kMinOffset || offset > kMaxOffset) {
      return makeError("time zone " + zone.name_ + ": an offset of " + std::to_string(offset) +
                       " s is out of range (a damaged file?)");
    }
    type_offsets[i] = offset;
  }
  zone.initial_offset_ = type_offsets[0];
  zone.at_.reserve(h.timecnt);
  zone.offset_.reserve(h.timecnt);
  for (uint32_t i = 0; i < h.timecnt; ++i) {
    const int64_t when = time_size == 8
                             ? be64(bytes, times_at + size_t{i} * 8)
                             : static_cast<int32_t>(be32(bytes, times_at + size_t{i} * 4));
    const auto type = static_cast<unsigned char>(bytes[index_at + i]);
    if (type >= h.typecnt) {
      return makeError("time zone " + zone.name_ +
                       ": a transition names a local time type that "
                       "does not exist (a damaged file?)");
    }
    if (!zone.at_.empty() && when <= zone.at_.back()) {
      return makeError("time zone " + zone.name_ +
                       ": transitions are not in order (a damaged "
                       "file?)");
    }
    zone.at_.push_back(when);
    zone.offset_.push_back(type_offsets[type]);
  }
  if (time_size == 8) {
    // The footer: "\n<POSIX TZ>\n", for the instants after the last transition.
    const size_t footer_at = at + static_cast<size_t>(h.dataSize(8));
    if (footer_at < bytes.size() && bytes[footer_at] == '\n') {
      const size_t end = bytes.find('\n', footer_at + 1);
      const std::string_view rule =
          bytes.substr(footer_at + 1, end == std::string_view::npos ? std::string_view::npos
                                                                    : end - footer_at - 1);
      if (!rule.empty()) {
        auto parsed = RuleParser(rule).parse();
        if (!parsed) {
          return makeError("time zone " + zone.name_ + ": " + parsed.error().message);
        }
        zone.appendRuleTransitions(rule);
      }
    }
  }
  return zone;
}

Result<TimeZone> TimeZone::parsePosix(std::string_view rule, std::string name) {
  auto parsed = RuleParser(rule).parse();
  if (!parsed) {
    return parsed.error();
  }
  TimeZone zone;
  zone.name_ = std::move(name);
  zone.initial_offset_ = parsed->std_offset;
  zone.appendRuleTransitions(rule);
  return zone;
}

void TimeZone::appendRuleTransitions(std::string_view text) {
  auto parsed = RuleParser(text).parse();
  if (!parsed) {
    return;
  }
  const PosixRule& rule = *parsed;
  const int32_t current = offset_.empty() ? initial_offset_ : offset_.back();
  if (!rule.has_dst) {
    if (rule.std_offset != current) {
      // The file's last transition should have set it; if not, the rule holds from then on.
      at_.push_back(at_.empty() ? INT64_MIN / 2 : at_.back() + 1);
      offset_.push_back(rule.std_offset);
    }
    return;
  }
  const int64_t from_year =
      at_.empty() ? 1900 : std::max<int64_t>(1900, civilFromDays(floorDiv(at_.back(), kDay)).year);
  if (from_year > kLastRuleYear) {
    return;  // the file's own transitions reach past the years the rule is expanded for
  }
  std::vector<std::pair<int64_t, int32_t>> generated;
  generated.reserve(static_cast<size_t>(2 * (kLastRuleYear - from_year + 1)));
  for (int64_t year = from_year; year <= kLastRuleYear; ++year) {
    generated.emplace_back(ruleDay(rule.start, year) * kDay + rule.start_time - rule.std_offset,
                           rule.dst_offset);
    generated.emplace_back(ruleDay(rule.end, year) * kDay + rule.end_time - rule.dst_offset,
                           rule.std_offset);
  }
  std::stable_sort(generated.begin(), generated.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const size_t from_file = at_.size();
  for (const auto& [when, offset] : generated) {
    if (!at_.empty() && when <= at_.back()) {
      if (when == at_.back() && at_.size() > from_file) {
        offset_.back() = offset;  // two rules at one instant: the later year's wins
      }
      continue;
    }
    if (offset == (offset_.empty() ? initial_offset_ : offset_.back())) {
      continue;
    }
    at_.push_back(when);
    offset_.push_back(offset);
  }
}

int32_t TimeZone::offsetAt(int64_t utc) const {
  const auto it = std::upper_bound(at_.begin(), at_.end(), utc);
  if (it == at_.begin()) {
    return initial_offset_;
  }
  return offset_[static_cast<size_t>(it - at_.begin()) - 1];
}

std::optional<int64_t> TimeZone::nextTransition(int64_t utc) const {
  const auto it = std::upper_bound(at_.begin(), at_.end(), utc);
  if (it == at_.end()) {
    return std::nullopt;
  }
  return *it;
}

std::vector<int64_t> TimeZone::transitionsIn(int64_t from, int64_t to) const {
  const auto begin = std::lower_bound(at_.begin(), at_.end(), from);
  const auto end = std::upper_bound(at_.begin(), at_.end(), to);
  return begin < end ? std::vector<int64_t>(begin, end) : std::vector<int64_t>();
}

TimeZone::Instant TimeZone::fromWall(int64_t wall) const {
  // Two days either side holds every offset that can be in effect at this wall time.
  const int64_t window = 2 * kDay;
  std::set<int32_t> offsets = {offsetAt(wall - window)};
  const std::vector<int64_t> nearby = transitionsIn(wall - window, wall + window);
  for (const int64_t when : nearby) {
    offsets.insert(offsetAt(when));
  }
  std::optional<int64_t> first;
  for (const int32_t offset : offsets) {
    const int64_t utc = wall - offset;
    if (offsetAt(utc) == offset && (!first || utc < *first)) {
      first = utc;
    }
  }
  if (first) {
    return Instant{*first, false};
  }
  for (const int64_t when : nearby) {
    const int32_t before = offsetAt(when - 1);
    const int32_t after = offsetAt(when);
    if (when + before <= wall && wall < when + after) {
      return Instant{when, true};
    }
  }
  return Instant{wall - offsetAt(wall), true};  // unreachable for a consistent table
}

}  // namespace oe::triggers

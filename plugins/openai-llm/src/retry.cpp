// Backoff arithmetic and Retry-After parsing (RFC 9110 section 10.2.3).
#include "retry.hpp"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace oe::llm {
namespace {

std::string_view trim(std::string_view text) {
  const size_t b = text.find_first_not_of(" \t");
  if (b == std::string_view::npos) {
    return {};
  }
  const size_t e = text.find_last_not_of(" \t\r\n");
  return text.substr(b, e - b + 1);
}

// Non-negative decimal seconds ("5", "0.25"); nullopt for anything else.
std::optional<double> parseSeconds(std::string_view text) {
  if (text.empty()) {
    return std::nullopt;
  }
  double whole = 0;
  double scale = 0;  // 0 until the decimal point
  bool digits = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      digits = true;
      if (scale == 0) {
        whole = whole * 10 + (c - '0');
      } else {
        whole += (c - '0') * scale;
        scale /= 10;
      }
    } else if (c == '.' && scale == 0) {
      scale = 0.1;
    } else {
      return std::nullopt;
    }
  }
  return digits ? std::optional<double>(whole) : std::nullopt;
}

std::optional<std::chrono::system_clock::time_point> parseHttpDate(std::string_view text) {
  const std::string value(text);
  // IMF-fixdate, obsolete RFC 850, asctime; strptime has no static state (thread-safe).
  for (const char* format :
       {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"}) {
    struct tm parts {};
    const char* end = ::strptime(value.c_str(), format, &parts);
    if (end != nullptr && *end == '\0') {
      const time_t seconds = ::timegm(&parts);
      if (seconds != static_cast<time_t>(-1)) {
        return std::chrono::system_clock::from_time_t(seconds);
      }
    }
  }
  return std::nullopt;
}

}  // namespace

bool isRetryableStatus(int status) noexcept {
  return status == 429 || (status >= 500 && status <= 599);
}

std::optional<Millis> parseRetryAfter(std::string_view value,
                                      std::chrono::system_clock::time_point now) {
  value = trim(value);
  if (auto seconds = parseSeconds(value)) {
    return Millis{static_cast<long long>(std::llround(*seconds * 1000.0))};
  }
  if (auto when = parseHttpDate(value)) {
    if (*when <= now) {
      return Millis{0};
    }
    return std::chrono::ceil<Millis>(*when - now);
  }
  return std::nullopt;
}

std::optional<Millis> retryAfterFrom(const std::map<std::string, std::string>& headers,
                                     std::chrono::system_clock::time_point now) {
  if (auto it = headers.find("retry-after-ms"); it != headers.end()) {
    if (auto ms = parseSeconds(trim(it->second))) {
      return Millis{static_cast<long long>(std::llround(*ms))};
    }
  }
  if (auto it = headers.find("retry-after"); it != headers.end()) {
    return parseRetryAfter(it->second, now);
  }
  return std::nullopt;
}

Millis backoffDelay(const RetryPolicy& policy, int failed_attempt, double unit) noexcept {
  const int doublings = std::clamp(failed_attempt - 1, 0, 30);
  const double ceiling =
      std::min(static_cast<double>(policy.max_delay.count()),
               static_cast<double>(policy.base.count()) * std::ldexp(1.0, doublings));
  return Millis{static_cast<long long>(std::clamp(unit, 0.0, 1.0) * ceiling)};
}

Millis retryDelay(const RetryPolicy& policy, int failed_attempt, std::optional<Millis> retry_after,
                  double unit) noexcept {
  if (retry_after) {
    const auto spread = static_cast<double>(std::min(policy.base, policy.max_delay).count());
    return *retry_after + Millis{static_cast<long long>(std::clamp(unit, 0.0, 1.0) * spread)};
  }
  return backoffDelay(policy, failed_attempt, unit);
}

double jitterUnit() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(generator);
}

}  // namespace oe::llm

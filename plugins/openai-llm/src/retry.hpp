// Retry policy of the provider clients: which answers are worth another attempt, how long to
// wait (exponential backoff with full jitter), and what the server's Retry-After asks for.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace oe::llm {

using Millis = std::chrono::milliseconds;

struct RetryPolicy {
  int max_attempts = 4;     // total attempts, the first included
  Millis base{1000};        // backoff before attempt n+1 is drawn from [0, base * 2^(n-1)]
  Millis max_delay{60000};  // cap of the backoff; a longer Retry-After ends the retries
};

// 429 (rate limited) and every 5xx (overloaded, gateway trouble) are transient.
bool isRetryableStatus(int status) noexcept;

// A Retry-After value: delay-seconds ("5", also "1.5" as some gateways send) or an HTTP date
// (IMF-fixdate, RFC 850 or asctime), relative to `now`; a date in the past is 0. nullopt when
// the value is neither.
std::optional<Millis> parseRetryAfter(std::string_view value,
                                      std::chrono::system_clock::time_point now);

// What the response headers (lower-case names) ask for: "retry-after-ms" (OpenAI, Anthropic)
// wins over "retry-after".
std::optional<Millis> retryAfterFrom(const std::map<std::string, std::string>& headers,
                                     std::chrono::system_clock::time_point now);

// Full jitter: unit * min(max_delay, base * 2^(failed_attempt-1)); unit in [0, 1).
Millis backoffDelay(const RetryPolicy& policy, int failed_attempt, double unit) noexcept;

// The wait before the next attempt. With a Retry-After, at least that long plus up to `base` of
// jitter, so that many callers told the same delay do not all come back at the same instant.
Millis retryDelay(const RetryPolicy& policy, int failed_attempt, std::optional<Millis> retry_after,
                  double unit) noexcept;

// A uniform draw in [0, 1) from a per-thread generator.
double jitterUnit();

}  // namespace oe::llm

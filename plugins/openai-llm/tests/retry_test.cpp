// White-box tests of the retry arithmetic (src/retry.cpp compiled into this binary): Retry-After
// in all its forms, the full-jitter bounds, and which statuses are transient.
#include "retry.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>

namespace oe::llm {
namespace {

using std::chrono::milliseconds;
using SysClock = std::chrono::system_clock;

// 1994-11-06T08:49:37Z, the RFC's example date.
const SysClock::time_point kRfcDate = SysClock::from_time_t(784111777);

TEST(RetryAfterTest, DelaySecondsAreMilliseconds) {
  EXPECT_EQ(parseRetryAfter("5", kRfcDate), milliseconds{5000});
  EXPECT_EQ(parseRetryAfter("0", kRfcDate), milliseconds{0});
  EXPECT_EQ(parseRetryAfter(" 2 ", kRfcDate), milliseconds{2000});
  EXPECT_EQ(parseRetryAfter("1.5", kRfcDate), milliseconds{1500});
}

TEST(RetryAfterTest, HttpDatesInTheThreeFormatsAreRelativeToNow) {
  const auto now = kRfcDate - std::chrono::seconds{10};
  EXPECT_EQ(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now), milliseconds{10000});
  EXPECT_EQ(parseRetryAfter("Sunday, 06-Nov-94 08:49:37 GMT", now), milliseconds{10000});
  EXPECT_EQ(parseRetryAfter("Sun Nov  6 08:49:37 1994", now), milliseconds{10000});
}

TEST(RetryAfterTest, DateInThePastMeansNow) {
  EXPECT_EQ(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", kRfcDate + std::chrono::hours{1}),
            milliseconds{0});
}

TEST(RetryAfterTest, GarbageIsIgnored) {
  EXPECT_EQ(parseRetryAfter("", kRfcDate), std::nullopt);
  EXPECT_EQ(parseRetryAfter("-1", kRfcDate), std::nullopt);
  EXPECT_EQ(parseRetryAfter("soon", kRfcDate), std::nullopt);
  EXPECT_EQ(parseRetryAfter("1.2.3", kRfcDate), std::nullopt);
  EXPECT_EQ(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT trailing", kRfcDate), std::nullopt);
}

TEST(RetryAfterTest, MillisecondHeaderWinsOverSeconds) {
  const std::map<std::string, std::string> both{{"retry-after", "20"}, {"retry-after-ms", "250"}};
  EXPECT_EQ(retryAfterFrom(both, kRfcDate), milliseconds{250});
  const std::map<std::string, std::string> seconds_only{{"retry-after", "3"}};
  EXPECT_EQ(retryAfterFrom(seconds_only, kRfcDate), milliseconds{3000});
  EXPECT_EQ(retryAfterFrom({}, kRfcDate), std::nullopt);
}

TEST(BackoffTest, FullJitterStaysBelowTheExponentialCeiling) {
  const RetryPolicy policy{4, milliseconds{1000}, milliseconds{60000}};
  EXPECT_EQ(backoffDelay(policy, 1, 0.0), milliseconds{0});
  EXPECT_EQ(backoffDelay(policy, 1, 0.5), milliseconds{500});
  EXPECT_EQ(backoffDelay(policy, 2, 0.5), milliseconds{1000});
  EXPECT_EQ(backoffDelay(policy, 3, 0.5), milliseconds{2000});
  EXPECT_LT(backoffDelay(policy, 3, 0.999), milliseconds{4000});
}

TEST(BackoffTest, CeilingIsCappedByMaxDelay) {
  const RetryPolicy policy{50, milliseconds{1000}, milliseconds{5000}};
  EXPECT_EQ(backoffDelay(policy, 40, 0.5), milliseconds{2500});
  EXPECT_EQ(backoffDelay(policy, 1000, 1.0), milliseconds{5000});
}

TEST(BackoffTest, RetryAfterIsAFloorWithAtMostBaseOfJitter) {
  const RetryPolicy policy{4, milliseconds{200}, milliseconds{60000}};
  EXPECT_EQ(retryDelay(policy, 1, milliseconds{1000}, 0.0), milliseconds{1000});
  EXPECT_EQ(retryDelay(policy, 3, milliseconds{1000}, 0.5), milliseconds{1100});
  EXPECT_EQ(retryDelay(policy, 3, std::nullopt, 0.5), backoffDelay(policy, 3, 0.5));
}

TEST(BackoffTest, JitterIsInTheUnitInterval) {
  for (int i = 0; i < 1000; ++i) {
    const double u = jitterUnit();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

TEST(BackoffTest, OnlyRateLimitsAndServerErrorsAreTransient) {
  EXPECT_TRUE(isRetryableStatus(429));
  EXPECT_TRUE(isRetryableStatus(500));
  EXPECT_TRUE(isRetryableStatus(503));
  EXPECT_TRUE(isRetryableStatus(529));
  EXPECT_FALSE(isRetryableStatus(400));
  EXPECT_FALSE(isRetryableStatus(401));
  EXPECT_FALSE(isRetryableStatus(404));
  EXPECT_FALSE(isRetryableStatus(200));
}

}  // namespace
}  // namespace oe::llm

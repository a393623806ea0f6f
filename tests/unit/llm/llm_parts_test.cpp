// The LLM service's parts on their own: provider choice (reference §7 messages), prices, the
// budget ledger, the rate limiter's decisions on an explicit clock, and record/replay files.
#include <gtest/gtest.h>

#include <fstream>

#include "oe/llm/ledger.hpp"
#include "oe/llm/llm_service.hpp"
#include "oe/llm/rate_limiter.hpp"
#include "oe/llm/recording.hpp"
#include "oe/llm/settings.hpp"
#include "support/temp_dir.hpp"

namespace oe::llm {
namespace {

using namespace std::chrono_literals;

Settings withEnv(Environment env, std::string flag = "") {
  Settings s;
  s.env = std::move(env);
  s.provider_flag = std::move(flag);
  return s;
}

TEST(ChooseProvider, AnthropicKeyWinsOverOpenAi) {
  auto choice = chooseProvider(withEnv({.anthropic_api_key = "a", .openai_api_key = "o"}));
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->provider, "anthropic");
  EXPECT_EQ(choice->default_model, "claude-sonnet-4-6");
}

TEST(ChooseProvider, OpenAiKeyAloneAndModelOverride) {
  auto choice = chooseProvider(withEnv({.openai_api_key = "o", .openai_model = "gpt-4.1-mini"}));
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->provider, "openai");
  EXPECT_EQ(choice->default_model, "gpt-4.1-mini");
  EXPECT_EQ(chooseProvider(withEnv({.openai_api_key = "o"}))->default_model, "gpt-4o-2024-11-20");
}

TEST(ChooseProvider, UpstreamMessages) {
  EXPECT_EQ(chooseProvider(withEnv({})).error().message,
            "No LLM provider configured. Set ANTHROPIC_API_KEY or OPENAI_API_KEY, or pass --llm "
            "<anthropic|openai>.");
  EXPECT_EQ(chooseProvider(withEnv({.openai_api_key = "o"}, "anthropic")).error().message,
            "--llm anthropic requires ANTHROPIC_API_KEY");
  EXPECT_EQ(chooseProvider(withEnv({.anthropic_api_key = "a"}, "openai")).error().message,
            "--llm openai requires OPENAI_API_KEY");
  EXPECT_EQ(chooseProvider(withEnv({}, "gemini")).error().message,
            "unknown --llm value: gemini. Use 'anthropic' or 'openai'.");
}

TEST(ChooseProvider, FlagPicksOpenAiDespiteAnthropicKey) {
  auto choice =
      chooseProvider(withEnv({.anthropic_api_key = "a", .openai_api_key = "o"}, "openai"));
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->provider, "openai");
}

TEST(ChooseProvider, LocalOpenAiServerNeedsNoKey) {
  auto choice = chooseProvider(withEnv({.openai_base_url = "http://127.0.0.1:1/v1"}));
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->provider, "openai");
}

TEST(Settings, RuntimeLimitsBudgetAndPrices) {
  Settings s;
  Json runtime = Json::parse(R"({
    "limits": {"openai": {"max_in_flight": 5, "requests_per_minute": 100,
                          "models": {"gpt-4o": {"tokens_per_minute": 30000}}}},
    "budget": {"max_tokens": 1000, "max_cost_usd": 0.5},
    "prices": {"my-local-model": {"input": 0.1, "output": 0.2}, "gpt-4o": {"input": 1, "output": 2}}
  })");
  ASSERT_TRUE(applyRuntime(runtime, s).ok());
  EXPECT_EQ(s.limits["openai"].limit.max_in_flight, 5);
  EXPECT_EQ(s.limits["openai"].limit.requests_per_minute, 100);
  EXPECT_FALSE(s.limits["openai"].limit.tokens_per_minute.has_value());
  EXPECT_EQ(s.limits["openai"].models["gpt-4o"].tokens_per_minute, 30000);
  EXPECT_EQ(s.budget.max_tokens, 1000);
  EXPECT_DOUBLE_EQ(*s.budget.max_cost_usd, 0.5);
  ASSERT_NE(findPrice(s, "my-local-model"), nullptr);
  EXPECT_DOUBLE_EQ(findPrice(s, "gpt-4o")->output, 2.0);  // the YAML overrides the default
  EXPECT_DOUBLE_EQ(findPrice(s, "claude-sonnet-4-6")->input, 3.0);  // defaults stay
}

TEST(Settings, NegativePriceIsAnError) {
  Settings s;
  auto r = applyRuntime(Json::parse(R"({"prices": {"m": {"input": -1, "output": 1}}})"), s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("runtime.prices.m"), std::string::npos);
}

TEST(Settings, PriceOfADatedSnapshotIsItsFamilys) {
  Settings s;
  s.prices = defaultPrices();
  EXPECT_DOUBLE_EQ(findPrice(s, "claude-sonnet-4-5-20250929")->output, 15.0);
  EXPECT_DOUBLE_EQ(findPrice(s, "gpt-4o-mini-2024-07-18")->input, 0.15);  // longest prefix
  EXPECT_DOUBLE_EQ(findPrice(s, "gpt-4o-2024-11-20")->input, 2.5);
  EXPECT_EQ(findPrice(s, "llama3"), nullptr);
}

TEST(Ledger, MaxInputTokensIsAnUpperBound) {
  Json request = {{"system", "abcd"},
                  {"messages", Json::array({{{"role", "user"}, {"content", "hello"}}})}};
  // 16 per request + 4 system bytes + 8 per message + 5 content bytes
  EXPECT_EQ(maxInputTokens(request), 16 + 4 + 8 + 5);
}

// Ledger::reserve fills in the reservation's shared hold; these tests have none to keep.
std::optional<Ledger::Refusal> reserve(Ledger& ledger, Ledger::Reservation need) {
  return ledger.reserve(need);
}

TEST(Ledger, RefusesACallThatCouldPassTheTokenBudget) {
  Ledger ledger(Budget{.max_tokens = 100}, Usage{});
  EXPECT_FALSE(reserve(ledger, {60, 0}).has_value());
  auto refused = reserve(ledger, {50, 0});  // 60 held + 50 > 100
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->message.find("runtime.budget.max_tokens is 100"), std::string::npos);
  EXPECT_NE(refused->message.find("60 held by calls in flight"), std::string::npos);
  // The first call really used 30: 70 left.
  ledger.settle({60, 0}, Usage{.input_tokens = 20, .output_tokens = 10});
  EXPECT_FALSE(reserve(ledger, {50, 0}).has_value());
  EXPECT_EQ(ledger.spent().tokens(), 30);
}

TEST(Ledger, PriorUsageCountsAgainstTheBudget) {
  Ledger ledger(Budget{.max_cost_usd = 1.0}, Usage{.cost_usd = 0.9});
  EXPECT_TRUE(reserve(ledger, {0, 0.2}).has_value());
  EXPECT_FALSE(reserve(ledger, {0, 0.1}).has_value());
}

TEST(Ledger, CancelGivesTheReservationBack) {
  Ledger ledger(Budget{.max_tokens = 10}, Usage{});
  EXPECT_FALSE(reserve(ledger, {10, 0}).has_value());
  EXPECT_TRUE(reserve(ledger, {1, 0}).has_value());
  ledger.cancel({10, 0});
  EXPECT_FALSE(reserve(ledger, {10, 0}).has_value());
}

std::map<std::string, ProviderLimits, std::less<>> limitsOf(const char* json) {
  Settings s;
  EXPECT_TRUE(applyRuntime(Json::parse(json), s).ok());
  return s.limits;
}

TEST(RateLimiter, MaxInFlightFreesOnRelease) {
  RateLimiter limiter(limitsOf(R"({"limits": {"openai": {"max_in_flight": 2}}})"));
  const auto t0 = RateLimiter::Clock::now();
  auto a = limiter.tryAcquire("openai", "m", 10, t0);
  auto b = limiter.tryAcquire("openai", "m", 10, t0);
  auto c = limiter.tryAcquire("openai", "m", 10, t0);
  ASSERT_TRUE(a.ticket && b.ticket);
  EXPECT_FALSE(c.ticket);
  EXPECT_FALSE(c.retry_at);  // no time frees an in-flight slot
  limiter.release(*a.ticket, 10);
  EXPECT_TRUE(limiter.tryAcquire("openai", "m", 10, t0).ticket);
  // Another provider is not limited at all.
  EXPECT_FALSE(limiter.limits("anthropic", "m"));
}

TEST(RateLimiter, RequestsPerMinuteSlideWithTime) {
  RateLimiter limiter(limitsOf(R"({"limits": {"openai": {"requests_per_minute": 2}}})"));
  const auto t0 = RateLimiter::Clock::now();
  ASSERT_TRUE(limiter.tryAcquire("openai", "m", 1, t0).ticket);
  ASSERT_TRUE(limiter.tryAcquire("openai", "m", 1, t0 + 10s).ticket);
  auto full = limiter.tryAcquire("openai", "m", 1, t0 + 20s);
  EXPECT_FALSE(full.ticket);
  ASSERT_TRUE(full.retry_at);
  EXPECT_EQ(*full.retry_at, t0 + 60s);  // when the first request leaves the window
  EXPECT_TRUE(limiter.tryAcquire("openai", "m", 1, t0 + 61s).ticket);
}

TEST(RateLimiter, TokensPerMinuteUseTheActualUsageAfterRelease) {
  RateLimiter limiter(
      limitsOf(R"({"limits": {"openai": {"models": {"gpt-4o": {"tokens_per_minute": 1000}}}}})"));
  const auto t0 = RateLimiter::Clock::now();
  auto a = limiter.tryAcquire("openai", "gpt-4o", 800, t0);
  ASSERT_TRUE(a.ticket);
  EXPECT_FALSE(limiter.tryAcquire("openai", "gpt-4o", 800, t0).ticket);
  EXPECT_TRUE(limiter.tryAcquire("openai", "other-model", 800, t0).ticket);  // not that model
  limiter.release(*a.ticket, 100);  // the estimate was loose: 100 really used
  EXPECT_TRUE(limiter.tryAcquire("openai", "gpt-4o", 800, t0 + 1s).ticket);
}

TEST(RateLimiter, ACallLargerThanTheMinuteRunsAlone) {
  RateLimiter limiter(limitsOf(R"({"limits": {"openai": {"tokens_per_minute": 100}}})"));
  const auto t0 = RateLimiter::Clock::now();
  EXPECT_TRUE(limiter.tryAcquire("openai", "m", 5000, t0).ticket);
  EXPECT_FALSE(limiter.tryAcquire("openai", "m", 1, t0).ticket);
}

TEST(RateLimiter, AcquireStopsWhenCancelled) {
  RateLimiter limiter(limitsOf(R"({"limits": {"openai": {"max_in_flight": 1}}})"));
  auto held = limiter.acquire("openai", "m", 1, nullptr, nullptr);
  ASSERT_TRUE(held);
  std::string waited_for;
  int polls = 0;
  auto second = limiter.acquire(
      "openai", "m", 1, [&] { return ++polls > 2; },
      [&](const std::string& limit) { waited_for = limit; });
  EXPECT_FALSE(second);
  EXPECT_EQ(waited_for, "runtime.limits.openai");
}

TEST(Recording, RoundTripAndCanonicalKey) {
  test::TempDir dir;
  const auto file = dir.path() / "rec" / "llm.jsonl";
  Json request = Json::parse(R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":5})");
  Json reordered = Json::parse(R"({"max_tokens":5,"messages":[{"content":"hi","role":"user"}]})");
  EXPECT_EQ(requestKey(request), requestKey(reordered));
  EXPECT_NE(requestKey(request), requestKey(Json::parse(R"({"messages":[]})")));
  {
    auto recorder = Recorder::open(file);
    ASSERT_TRUE(recorder.ok()) << recorder.error().message;
    Json response = {{"text", "first"}, {"model", "m"}};
    ASSERT_TRUE((*recorder)->append(requestKey(request), "n", "openai", request, response).ok());
    Json second = {{"text", "second"}, {"model", "m"}};
    ASSERT_TRUE((*recorder)->append(requestKey(request), "n", "openai", request, second).ok());
  }
  auto replayer = Replayer::load(file);
  ASSERT_TRUE(replayer.ok()) << replayer.error().message;
  const auto* found = (*replayer)->find(requestKey(reordered));
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->response["text"], "first");  // the first answer recorded is served
  EXPECT_EQ(found->provider, "openai");
  EXPECT_EQ((*replayer)->find("nope"), nullptr);
}

TEST(Recording, TornLastLineIsToleratedAMalformedOneIsNot) {
  test::TempDir dir;
  const auto file = dir.path() / "llm.jsonl";
  {
    std::ofstream out(file);
    out << R"({"key":"k1","response":{"text":"a"}})" << '\n' << R"({"key":"k2","resp)";
  }
  auto replayer = Replayer::load(file);
  ASSERT_TRUE(replayer.ok()) << replayer.error().message;
  EXPECT_EQ((*replayer)->size(), 1U);
  {
    std::ofstream out(file);
    out << "not json\n"
        << R"({"key":"k1","response":{"text":"a"}})" << '\n';
  }
  auto bad = Replayer::load(file);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind(file.string() + ":1: not a recorded exchange", 0), 0U)
      << bad.error().message;
  auto missing = Replayer::load(dir.path() / "absent.jsonl");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("--llm-replay"), std::string::npos);
}

// CLI runs (oe.cli-replay/1-draft) share the file with the LLM exchanges, each in its own key
// space; a key recorded several times serves its outcomes in order, then the last again.
TEST(Recording, CliRunsShareTheFileAndReplayInOrder) {
  test::TempDir dir;
  const auto file = dir.path() / "rec.jsonl";
  const Json request = {{"provider", "codex"},
                        {"argv", {"codex", "exec", "hi"}},
                        {"workdir", "."},
                        {"env", Json::array()},
                        {"stdin", ""}};
  const Json reordered = Json::parse(
      R"({"stdin":"","env":[],"workdir":".","argv":["codex","exec","hi"],"provider":"codex"})");
  EXPECT_EQ(cliRequestKey(request), cliRequestKey(reordered));
  const Json llm_request = Json::parse(R"({"messages":[]})");
  {
    auto recorder = Recorder::open(file);
    ASSERT_TRUE(recorder.ok()) << recorder.error().message;
    ASSERT_TRUE(
        (*recorder)
            ->append(requestKey(llm_request), "a", "openai", llm_request, Json{{"text", "x"}})
            .ok());
    for (int code : {1, 0}) {
      ASSERT_TRUE((*recorder)
                      ->appendCli(cliRequestKey(request), "c", "codex", request,
                                  Json{{"exit_code", code}, {"stdout", "\xff out"}})
                      .ok());
    }
  }
  std::ifstream in(file);
  std::string first;
  std::getline(in, first);
  EXPECT_FALSE(Json::parse(first).contains("type")) << "an LLM line keeps its format";
  std::string second;
  std::getline(in, second);
  EXPECT_EQ(Json::parse(second)["type"], "cli");

  auto replayer = Replayer::load(file);
  ASSERT_TRUE(replayer.ok()) << replayer.error().message;
  EXPECT_EQ((*replayer)->size(), 1U);
  EXPECT_EQ((*replayer)->cliRuns(), 1U);
  EXPECT_EQ((*replayer)->find(cliRequestKey(request)), nullptr) << "separate key spaces";
  const Json* once = (*replayer)->nextCliOutcome(cliRequestKey(reordered));
  ASSERT_NE(once, nullptr);
  EXPECT_EQ((*once)["exit_code"], 1) << "the failed attempt first";
  EXPECT_EQ((*once)["stdout"], "\xEF\xBF\xBD out") << "invalid UTF-8 recorded as U+FFFD";
  for (int i = 0; i < 2; ++i) {
    const Json* again = (*replayer)->nextCliOutcome(cliRequestKey(request));
    ASSERT_NE(again, nullptr);
    EXPECT_EQ((*again)["exit_code"], 0) << "then the retry, and the last one from then on";
  }
  EXPECT_EQ((*replayer)->nextCliOutcome("nope"), nullptr);
}

TEST(Ledger, ExhaustedOnlyOnceSpentReachesALimit) {
  Budget budget;
  budget.max_tokens = 100;
  Ledger ledger(budget, Usage{});
  EXPECT_FALSE(ledger.exhausted());
  ASSERT_FALSE(reserve(ledger, {90, 0})) << "held by a call in flight is not spent";
  EXPECT_FALSE(ledger.exhausted());
  Usage used;
  used.input_tokens = 120;
  used.output_tokens = 7;
  ledger.settle({90, 0}, used);
  const auto refused = ledger.exhausted();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->message,
            "run budget exhausted: runtime.budget.max_tokens is 100 and 127 are spent");
}

}  // namespace
}  // namespace oe::llm

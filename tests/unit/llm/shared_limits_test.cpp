// runtime.limits and runtime.budget shared through PostgreSQL (shared_limits.hpp): several
// LlmService instances, each with its own connections as separate `oe worker` processes would
// have, calling one fake provider over real HTTP, stay under one limit and one budget.
#include "oe/llm/shared_limits.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "oe/llm/llm_service.hpp"
#include "oe/plugins/host_context.hpp"
#include "oe/plugins/registry.hpp"
#include "support/fake_llm_server.hpp"
#include "support/pg_test_db.hpp"
#include "support/process.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

namespace oe::llm {
namespace {

using test::FakeLlmServer;

// One node invocation's context: records the node.activity events (waiting for room).
struct CallCtx : oe_host_ctx {
  void log(oe_log_level /*level*/, std::string_view /*message*/) override {}
  oe_status emitEvent(std::string_view type, std::string_view fields_json) override {
    if (type == "node.activity") {
      std::lock_guard lock(mutex);
      activities.emplace_back(fields_json);
    }
    return OE_OK;
  }
  std::mutex mutex;
  std::vector<std::string> activities;
};

// The request of every call: its budget reservation is 16 + 8 + 2 input bytes + 74 = 100 tokens,
// and the fake provider answers with exactly that usage, so reservations and spending match.
const std::string kSharedRequest =
    Json{{"model", "gpt-4o"},
         {"max_tokens", 74},
         {"messages", Json::array({{{"role", "user"}, {"content", "hi"}}})}}
        .dump();
constexpr int kSharedCallTokens = 100;

// Waits until the renewal thread moved the expires_at of the one slot in flight: polled (the
// deadline only ends a broken test; no duration is assumed). False when it never moved.
::testing::AssertionResult slotRenewed(const std::string& url) {
  auto conn = pg::Connection::open(url);
  if (!conn.ok()) {
    return ::testing::AssertionFailure() << conn.error().message;
  }
  auto first = (*conn)->exec("SELECT expires_at FROM oe_limit_slots WHERE in_flight");
  if (!first.ok() || first->size() != 1) {
    return ::testing::AssertionFailure() << "not exactly one slot in flight";
  }
  const std::string initial(first->text(0, 0));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    auto again = (*conn)->exec(
        "SELECT count(*) FROM oe_limit_slots WHERE in_flight AND expires_at > $1::timestamptz",
        {initial});
    if (!again.ok()) {
      return ::testing::AssertionFailure() << again.error().message;
    }
    if (again->int64(0, 0) == 1) {
      return ::testing::AssertionSuccess();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // between polls only
  }
  return ::testing::AssertionFailure() << "expires_at stayed " << initial;
}

class SharedLimitsTest : public ::testing::Test {
 protected:
  SharedLimitsTest()
      : base_url_("OPENAI_BASE_URL", server_.baseUrl() + "/v1"),
        api_key_("OPENAI_API_KEY", "sk-test"),
        registry_(nullptr, plugins::Access::kExecute) {
    plugins::initHostServices();
    registry_.loadFrom({OE_TEST_PLUGIN_DIR});
  }

  Settings settings(const std::string& runtime_json) {
    Settings s;
    s.provider_flag = "openai";
    s.env = Environment::fromProcess();
    EXPECT_TRUE(applyRuntime(Json::parse(runtime_json), s).ok());
    s.shared_store_url = db_.url();
    s.shared_scope = "chain-1";
    return s;
  }

  std::vector<std::unique_ptr<LlmService>> services(int n, const std::string& runtime_json) {
    std::vector<std::unique_ptr<LlmService>> made;
    for (int i = 0; i < n; ++i) {
      auto service = LlmService::create(settings(runtime_json), registry_, Usage{});
      EXPECT_TRUE(service.ok()) << service.error().message;
      if (service.ok()) {
        made.push_back(std::move(service).value());
      }
    }
    return made;
  }

  // `callers` threads per service, each making `calls` completions one after the other.
  static void callConcurrently(std::vector<std::unique_ptr<LlmService>>& all, int callers,
                               int calls, const std::function<void(const Answer&)>& seen) {
    std::vector<std::thread> threads;
    for (auto& service : all) {
      for (int c = 0; c < callers; ++c) {
        threads.emplace_back([&service, calls, &seen] {
          for (int i = 0; i < calls; ++i) {
            CallCtx ctx;
            CallUsage usage;
            seen(service->complete(Site{&ctx, "ask", &usage}, kSharedRequest));
          }
        });
      }
    }
    for (auto& t : threads) {
      t.join();
    }
  }

  test::PgTestDb db_;
  FakeLlmServer server_;
  test::ScopedEnv base_url_;
  test::ScopedEnv api_key_;
  plugins::PluginRegistry registry_;
};

TEST_F(SharedLimitsTest, FourServicesStayUnderOneMaxInFlight) {
  // The provider refuses a sixth request in flight with 429; the first five answers wait until
  // five requests arrived, so the limit is certainly reached, not merely approached.
  server_.rejectAbove(5);
  server_.setHandler([](const test::RecordedRequest&) {
    return FakeLlmServer::heldUntil(FakeLlmServer::openAiText("ok", 26, 74), 5);
  });
  auto all = services(4, R"({"limits": {"openai": {"max_in_flight": 5}}})");
  ASSERT_EQ(all.size(), 4u);

  std::atomic<int> ok{0};
  std::mutex mutex;
  std::vector<std::string> failures;
  callConcurrently(all, 3, 3, [&](const Answer& answer) {
    if (answer.status == OE_OK) {
      ++ok;
    } else {
      std::lock_guard lock(mutex);
      failures.push_back(answer.body);
    }
  });
  EXPECT_TRUE(failures.empty()) << failures.front();
  EXPECT_EQ(ok.load(), 4 * 3 * 3);
  // Every request the server saw was answered: none was refused with a 429 and retried.
  EXPECT_EQ(server_.requestCount(), size_t{4 * 3 * 3});
  EXPECT_EQ(server_.peakInFlight(), 5u);

  // Every call gave its slot back.
  auto conn = pg::Connection::open(db_.url());
  ASSERT_TRUE(conn.ok());
  auto held = (*conn)->exec("SELECT count(*) FROM oe_limit_slots WHERE in_flight");
  ASSERT_TRUE(held.ok()) << held.error().message;
  EXPECT_EQ(held->int64(0, 0), 0);
}

TEST_F(SharedLimitsTest, FourServicesNeverPassOneTokenBudget) {
  server_.setHandler(
      [](const test::RecordedRequest&) { return FakeLlmServer::openAiText("ok", 26, 74); });
  // Room for ten calls in all; each service alone would allow ten, 40 together.
  auto all = services(4, R"({"budget": {"max_tokens": 1000}})");
  ASSERT_EQ(all.size(), 4u);

  std::atomic<int> ok{0};
  std::atomic<int> refused{0};
  std::mutex mutex;
  std::vector<std::string> other;
  callConcurrently(all, 3, 2, [&](const Answer& answer) {
    if (answer.status == OE_OK) {
      ++ok;
    } else if (answer.status == OE_RESOURCE_EXHAUSTED &&
               answer.body.find("run budget exhausted") != std::string::npos &&
               answer.body.find("runtime.budget.max_tokens is 1000") != std::string::npos &&
               answer.body.find("across every process of the run") != std::string::npos) {
      ++refused;
    } else {
      std::lock_guard lock(mutex);
      other.push_back(answer.body);
    }
  });
  EXPECT_TRUE(other.empty()) << other.front();
  EXPECT_EQ(ok.load(), 1000 / kSharedCallTokens);
  EXPECT_EQ(refused.load(), 4 * 3 * 2 - 1000 / kSharedCallTokens);
  EXPECT_EQ(server_.requestCount(), size_t{1000 / kSharedCallTokens});

  int64_t spent_here = 0;
  for (const auto& service : all) {
    spent_here += service->runUsage().tokens();
  }
  EXPECT_EQ(spent_here, 1000);
  auto conn = pg::Connection::open(db_.url());
  ASSERT_TRUE(conn.ok());
  auto row = (*conn)->exec(
      "SELECT input_tokens + output_tokens, calls, (SELECT count(*) FROM oe_budget_holds) "
      "FROM oe_budget WHERE chain_id = 'chain-1'");
  ASSERT_TRUE(row.ok()) << row.error().message;
  EXPECT_EQ(row->int64(0, 0), 1000);  // the chain's spending, as every worker recorded it
  EXPECT_EQ(row->int64(0, 1), 1000 / kSharedCallTokens);
  EXPECT_EQ(row->int64(0, 2), 0);  // no reservation left behind
}

#ifdef OE_TEST_LLM_CALLER
// The same with four real processes, each with its own service, connections and renewal thread:
// one limit and one budget for all of them.
TEST_F(SharedLimitsTest, FourProcessesShareOneMaxInFlightAndOneBudget) {
  server_.rejectAbove(5);
  server_.setHandler([](const test::RecordedRequest&) {
    return FakeLlmServer::heldUntil(FakeLlmServer::openAiText("ok", 26, 74), 5);
  });
  test::TempDir dir;
  std::vector<std::unique_ptr<test::BackgroundProcess>> callers;
  for (int p = 0; p < 4; ++p) {
    callers.push_back(std::make_unique<test::BackgroundProcess>(
        std::vector<std::string>{OE_TEST_LLM_CALLER, db_.url(), "chain-1",
                                 R"({"limits": {"openai": {"max_in_flight": 5}},
                                     "budget": {"max_tokens": 2000}})",
                                 "3", "3", kSharedRequest},
        std::map<std::string, std::string>{}, dir.path(), dir / ("caller" + std::to_string(p))));
  }
  int ok = 0;
  int refused = 0;
  std::vector<std::string> other;
  for (auto& caller : callers) {
    ASSERT_EQ(caller->wait(), 0) << caller->err();
    std::istringstream lines(caller->out());
    for (std::string line; std::getline(lines, line);) {
      if (line == "ok") {
        ++ok;
      } else if (line.find("run budget exhausted") != std::string::npos) {
        ++refused;
      } else {
        other.push_back(line);
      }
    }
  }
  EXPECT_TRUE(other.empty()) << other.front();
  EXPECT_EQ(ok, 2000 / kSharedCallTokens);  // of 36 attempts
  EXPECT_EQ(refused, 4 * 3 * 3 - 2000 / kSharedCallTokens);
  EXPECT_EQ(server_.requestCount(), size_t{2000 / kSharedCallTokens});  // no 429, no retry
  EXPECT_EQ(server_.peakInFlight(), 5u);
}

// kill -9 for real: a process holding the only slot keeps it past its ttl while it lives (it
// renews it), and once killed its slot is taken by a waiter after the ttl.
TEST_F(SharedLimitsTest, ASlotOfAProcessKilledWithSigkillIsReclaimed) {
  test::TempDir dir;
  const std::string runtime = R"({"limits": {"openai": {"max_in_flight": 1}}})";
  test::BackgroundProcess holder({OE_TEST_LLM_CALLER, "--hold", db_.url(), "chain-1", runtime,
                                  "600", (dir / "ready").string()},
                                 {}, dir.path(), dir / "holder");
  ASSERT_TRUE(test::waitForFile(dir / "ready")) << holder.err();
  // Alive: its row outlives the first expiry, and no one else gets room.
  ASSERT_TRUE(slotRenewed(db_.url()));
  auto other = SharedLimits::open(db_.url(), "chain-1", Usage{});
  ASSERT_TRUE(other.ok()) << other.error().message;
  RateLimiter probe(settings(runtime).limits, other->get());
  EXPECT_FALSE(probe.tryAcquire("openai", "m", 1, RateLimiter::Clock::now()).ticket);
  auto all = services(1, runtime);
  ASSERT_EQ(all.size(), 1u);
  server_.setHandler(
      [](const test::RecordedRequest&) { return FakeLlmServer::openAiText("ok", 26, 74); });

  holder.signal(SIGKILL);
  EXPECT_EQ(holder.wait(), 128 + SIGKILL);
  CallCtx ctx;
  const Answer answer = all[0]->complete(Site{&ctx, "ask", nullptr}, kSharedRequest);
  ASSERT_EQ(answer.status, OE_OK) << answer.body;
  ASSERT_EQ(ctx.activities.size(), 1u);  // it waited for the dead process's slot to lapse
  EXPECT_NE(ctx.activities[0].find("runtime.limits.openai"), std::string::npos);
}
#endif

TEST_F(SharedLimitsTest, AKilledHoldersSlotIsReclaimedAfterItExpires) {
  server_.setHandler(
      [](const test::RecordedRequest&) { return FakeLlmServer::openAiText("ok", 26, 74); });
  auto all = services(1, R"({"limits": {"openai": {"max_in_flight": 1}}})");
  ASSERT_EQ(all.size(), 1u);
  // A worker took the only slot and died: nothing renews its row any more.
  auto conn = pg::Connection::open(db_.url());
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE((*conn)
                  ->exec("INSERT INTO oe_limit_slots (scope, name, holder, expires_at) VALUES "
                         "('chain-1', 'runtime.limits.openai', 'dead-worker', "
                         "now() + interval '1 second')")
                  .ok());

  CallCtx ctx;
  const Answer answer = all[0]->complete(Site{&ctx, "ask", nullptr}, kSharedRequest);
  ASSERT_EQ(answer.status, OE_OK) << answer.body;
  // It had to wait for the dead worker's slot, then went through once that lapsed.
  ASSERT_EQ(ctx.activities.size(), 1u);
  EXPECT_NE(ctx.activities[0].find("waiting for room under runtime.limits.openai"),
            std::string::npos)
      << ctx.activities[0];
  auto expired =
      (*conn)->exec("SELECT expires_at <= now() FROM oe_limit_slots WHERE holder = 'dead-worker'");
  ASSERT_TRUE(expired.ok());
  ASSERT_EQ(expired->size(), 1);  // still counted in the minute window, no longer in flight
  EXPECT_TRUE(expired->boolean(0, 0));
  EXPECT_EQ(server_.requestCount(), 1u);
}

TEST_F(SharedLimitsTest, ARunWithNothingToCountNeverConnects) {
  // A database that does not exist: opening it would fail create() (after its retries).
  const std::string missing = test::PgCluster::shared().url("oe_no_such_database");
  Settings nothing = settings("{}");
  nothing.shared_store_url = missing;
  auto service = LlmService::create(nothing, registry_, Usage{});
  ASSERT_TRUE(service.ok()) << service.error().message;
  server_.setHandler(
      [](const test::RecordedRequest&) { return FakeLlmServer::openAiText("ok", 26, 74); });
  CallCtx ctx;
  EXPECT_EQ((*service)->complete(Site{&ctx, "ask", nullptr}, kSharedRequest).status, OE_OK);
}

// The counters directly: two processes' limiters share per-minute windows and renew what they hold.
class SharedCountersTest : public ::testing::Test {
 protected:
  std::unique_ptr<SharedLimits> open(std::chrono::milliseconds ttl = std::chrono::seconds(30)) {
    auto shared =
        SharedLimits::open(db_.url(), "chain-1", Usage{},
                           {.ttl = ttl, .retry_for = std::chrono::seconds(10), .holder = ""});
    EXPECT_TRUE(shared.ok()) << shared.error().message;
    return shared.ok() ? std::move(shared).value() : nullptr;
  }
  static std::map<std::string, ProviderLimits, std::less<>> limitsOf(const char* json) {
    Settings s;
    EXPECT_TRUE(applyRuntime(Json::parse(json), s).ok());
    return s.limits;
  }
  // Two processes' view of one run: each its own counters' connections and limiter.
  struct TwoProcesses {
    std::unique_ptr<SharedLimits> a;
    std::unique_ptr<SharedLimits> b;
    std::optional<RateLimiter> first;
    std::optional<RateLimiter> second;
  };
  void twoProcesses(const char* runtime_json, TwoProcesses& two) {
    two.a = open();
    two.b = open();
    ASSERT_TRUE(two.a && two.b);
    const auto limits = limitsOf(runtime_json);
    two.first.emplace(limits, two.a.get());
    two.second.emplace(limits, two.b.get());
  }
  test::PgTestDb db_;
};

TEST_F(SharedCountersTest, RequestsPerMinuteCountEveryProcess) {
  TwoProcesses two;
  ASSERT_NO_FATAL_FAILURE(
      twoProcesses(R"({"limits": {"openai": {"requests_per_minute": 2}}})", two));
  RateLimiter& first = *two.first;
  RateLimiter& second = *two.second;
  const auto now = RateLimiter::Clock::now();
  auto one = first.tryAcquire("openai", "gpt-4o", 10, now);
  ASSERT_TRUE(one.ticket);
  first.release(*one.ticket, 10);  // ended, but still in the minute's window
  ASSERT_TRUE(second.tryAcquire("openai", "gpt-4o", 10, now).ticket);
  auto third = first.tryAcquire("openai", "gpt-4o", 10, now);
  EXPECT_FALSE(third.ticket);
  ASSERT_TRUE(third.retry_at);  // when the first call leaves the window, within the minute
  EXPECT_GT(*third.retry_at, now);
  EXPECT_LE(*third.retry_at, now + RateLimiter::kWindow + std::chrono::seconds(1));
  // Another provider has no limit in common.
  EXPECT_TRUE(second.tryAcquire("anthropic", "claude", 10, now).ticket);
}

TEST_F(SharedCountersTest, TokensPerMinuteUseTheActualUsageOfEveryProcess) {
  TwoProcesses two;
  ASSERT_NO_FATAL_FAILURE(
      twoProcesses(R"({"limits": {"openai": {"tokens_per_minute": 100}}})", two));
  RateLimiter& first = *two.first;
  RateLimiter& second = *two.second;
  const auto now = RateLimiter::Clock::now();
  auto big = first.tryAcquire("openai", "m", 90, now);
  ASSERT_TRUE(big.ticket);
  EXPECT_FALSE(second.tryAcquire("openai", "m", 20, now).ticket);  // 90 + 20 > 100
  first.release(*big.ticket, 30);                                  // it used 30
  EXPECT_TRUE(second.tryAcquire("openai", "m", 20, now).ticket);   // 30 + 20
}

TEST_F(SharedCountersTest, AHeldSlotIsRenewedAndAReleasedOneIsNot) {
  auto holder = open(std::chrono::milliseconds(600));
  ASSERT_TRUE(holder);
  const auto limits = limitsOf(R"({"limits": {"openai": {"max_in_flight": 1}}})");
  RateLimiter limiter(limits, holder.get());
  auto ticket = limiter.tryAcquire("openai", "m", 1, RateLimiter::Clock::now());
  ASSERT_TRUE(ticket.ticket);
  EXPECT_TRUE(slotRenewed(db_.url()));
  // Meanwhile another process finds no room: the slot is live.
  auto other = open();
  RateLimiter other_limiter(limits, other.get());
  EXPECT_FALSE(other_limiter.tryAcquire("openai", "m", 1, RateLimiter::Clock::now()).ticket);
  limiter.release(*ticket.ticket, 1);
  EXPECT_TRUE(other_limiter.tryAcquire("openai", "m", 1, RateLimiter::Clock::now()).ticket);
}

TEST_F(SharedCountersTest, AReleaseInOneProcessWakesTheWaitersOfAnother) {
  // Declared first, destroyed last: the waiter's renewal thread may call back until it stops.
  std::mutex mutex;
  std::condition_variable woken;
  bool wake = false;
  auto waiter = open();
  auto releaser = open();
  ASSERT_TRUE(waiter && releaser);
  waiter->onRoom([&] {
    std::lock_guard lock(mutex);
    wake = true;
    woken.notify_all();
  });
  const auto limits = limitsOf(R"({"limits": {"openai": {"max_in_flight": 1}}})");
  RateLimiter limiter(limits, releaser.get());
  auto ticket = limiter.tryAcquire("openai", "m", 1, RateLimiter::Clock::now());
  ASSERT_TRUE(ticket.ticket);
  limiter.release(*ticket.ticket, 1);
  std::unique_lock lock(mutex);
  // The deadline only ends a broken test: the NOTIFY arrives in milliseconds.
  EXPECT_TRUE(woken.wait_for(lock, std::chrono::seconds(30), [&] { return wake; }));
}

TEST_F(SharedCountersTest, ABudgetHoldOfAKilledHolderLapses) {
  auto live = open();
  ASSERT_TRUE(live);
  Ledger ledger(Budget{.max_tokens = 100}, Usage{}, live.get());
  auto conn = pg::Connection::open(db_.url());
  ASSERT_TRUE(conn.ok());
  // A dead worker's hold of 80 tokens, already past its expiry, and a live one of 10.
  ASSERT_TRUE((*conn)
                  ->exec("INSERT INTO oe_budget_holds (chain_id, holder, tokens, cost_usd, "
                         "expires_at) VALUES ('chain-1', 'dead', 80, 0, now() - interval '1 s'), "
                         "('chain-1', 'alive', 10, 0, now() + interval '1 hour')")
                  .ok());
  Ledger::Reservation need{90, 0, 0};
  EXPECT_FALSE(ledger.reserve(need).has_value());  // 10 held + 90 <= 100: the 80 do not count
  EXPECT_NE(need.hold, 0);
  Ledger::Reservation more{1, 0, 0};
  auto refused = ledger.reserve(more);
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->message.find("100 held by calls in flight across every process"),
            std::string::npos)
      << refused->message;
  ledger.cancel(need);
  EXPECT_FALSE(ledger.reserve(more).has_value());
}

// With the server away past the retries, a call neither passes a limit nor spends a budget it
// cannot check; both work again once the server is back.
TEST(SharedLimitsFaults, NothingPassesUncheckedWhileTheServerIsAway) {
  test::TempDir dir;
  auto cluster = test::PgCluster::privateIn(dir / "pg");
  test::PgTestDb db(*cluster);
  auto shared = SharedLimits::open(
      db.url(), "chain-1", Usage{},
      {.ttl = std::chrono::seconds(30), .retry_for = std::chrono::milliseconds(200), .holder = ""});
  ASSERT_TRUE(shared.ok()) << shared.error().message;
  Ledger ledger(Budget{.max_tokens = 100}, Usage{}, shared->get());
  Settings settings;
  ASSERT_TRUE(
      applyRuntime(Json::parse(R"({"limits": {"openai": {"max_in_flight": 1}}})"), settings).ok());
  RateLimiter limiter(settings.limits, shared->get());
  Ledger::Reservation first{10, 0, 0};
  ASSERT_FALSE(ledger.reserve(first).has_value());
  ledger.settle(first, Usage{.input_tokens = 10, .calls = 1});

  cluster->stopNow();
  Ledger::Reservation need{10, 0, 0};
  auto refused = ledger.reserve(need);
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->message.find("run budget cannot be checked"), std::string::npos)
      << refused->message;
  const auto now = RateLimiter::Clock::now();
  auto waiting = limiter.tryAcquire("openai", "m", 1, now);
  EXPECT_FALSE(waiting.ticket);
  EXPECT_TRUE(waiting.retry_at.has_value());  // asks again, as for a per-minute window

  cluster->start();
  EXPECT_FALSE(ledger.reserve(need).has_value()) << "no reconnect after the restart";
  EXPECT_TRUE(limiter.tryAcquire("openai", "m", 1, RateLimiter::Clock::now()).ticket);
  auto totals = (*shared)->totals();
  ASSERT_TRUE(totals.ok()) << totals.error().message;
  EXPECT_EQ(totals->spent.tokens(), 10);
  EXPECT_EQ(totals->held_tokens, 10);  // `need`, reserved after the restart
}

// What sharing costs a call: a limit slot taken and given back, a budget hold reserved and
// settled, over the suite's Unix socket. Printed for docs/llm.md; the totals are what is checked.
TEST_F(SharedCountersTest, CostOfOneCallUnderSharedLimitsAndBudget) {
  auto shared = open();
  ASSERT_TRUE(shared);
  RateLimiter limiter(limitsOf(R"({"limits": {"openai": {"max_in_flight": 5}}})"), shared.get());
  Ledger ledger(Budget{.max_tokens = 1000000}, Usage{}, shared.get());
  constexpr int kCalls = 200;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) {
    Ledger::Reservation need{100, 0, 0};
    ASSERT_FALSE(ledger.reserve(need).has_value());
    auto ticket = limiter.tryAcquire("openai", "m", 100, RateLimiter::Clock::now());
    ASSERT_TRUE(ticket.ticket);
    limiter.release(*ticket.ticket, 10);
    ledger.settle(need, Usage{.input_tokens = 6, .output_tokens = 4, .calls = 1});
  }
  const auto per_call = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::steady_clock::now() - start) /
                        kCalls;
  std::printf("[ measure  ] shared limits + budget: %lld us per call (%d calls)\n",
              static_cast<long long>(per_call.count()), kCalls);
  RecordProperty("us_per_call", static_cast<int>(per_call.count()));
  auto totals = shared->totals();
  ASSERT_TRUE(totals.ok()) << totals.error().message;
  EXPECT_EQ(totals->spent.tokens(), 10 * kCalls);
  EXPECT_EQ(totals->spent.calls, kCalls);
  EXPECT_EQ(totals->held_tokens, 0);
}

}  // namespace
}  // namespace oe::llm

// The approvals file (src/oe/approvals): a question recorded once per chain and node, decided by
// exactly one of several deciders at once (real SQLite, two connections, real threads), and a
// passed deadline decided by its on_timeout.
#include "oe/approvals/approval_store.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <thread>
#include <vector>

#include "oe/approvals/decision_text.hpp"
#include "support/pg_test_db.hpp"
#include "support/temp_dir.hpp"

namespace oe::approvals {
namespace {

Request question(const std::string& node, int64_t deadline_ms = -1,
                 const std::string& on_timeout = "fail") {
  Request r;
  r.chain_id = "chain-1";
  r.node_id = node;
  r.run_id = "run-1";
  r.prompt = "Ship " + node + "?";
  r.shown = Json{{"$.draft", "v1"}};
  r.requested_at = "2026-01-01T00:00:00.000Z";
  r.deadline_ms = deadline_ms;
  r.on_timeout = on_timeout;
  return r;
}

Decision by(const std::string& who, bool approve) {
  Decision d;
  d.decision = approve ? "approved" : "rejected";
  d.by = who;
  d.at = "2026-01-01T01:00:00.000Z";
  d.comment = "from " + who;
  return d;
}

TEST(ApprovalStoreTest, AsksOncePerChainAndNodeAndKeepsTheFirstDeadline) {
  test::TempDir dir;
  auto store = Store::open(storePath(dir.path()));
  ASSERT_TRUE(store) << store.error().message;
  auto first = (*store)->ask(question("review", 1000));
  ASSERT_TRUE(first) << first.error().message;
  auto again = (*store)->ask(question("review", 5000));  // a resumed run parking again
  ASSERT_TRUE(again);
  EXPECT_EQ(again->deadline_ms, 1000);
  EXPECT_EQ(again->shown, (Json{{"$.draft", "v1"}}));
  EXPECT_FALSE(again->decision);
  auto other = question("review");
  other.chain_id = "chain-2";  // a fresh run asks again
  ASSERT_TRUE((*store)->ask(other));
  auto listed = (*store)->list("chain-1");
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->size(), 1u);
  auto all = (*store)->list();
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 2u);
}

TEST(ApprovalStoreTest, TheFirstDecisionStandsAndTheSecondIsToldWhoDecided) {
  test::TempDir dir;
  auto store = Store::open(storePath(dir.path()));
  ASSERT_TRUE(store);
  ASSERT_TRUE((*store)->ask(question("review")));
  auto ana = (*store)->decide("chain-1", "review", by("ana", true));
  ASSERT_TRUE(ana) << ana.error().message;
  EXPECT_TRUE(ana->won);
  auto bob = (*store)->decide("chain-1", "review", by("bob", false));
  ASSERT_TRUE(bob);
  EXPECT_FALSE(bob->won);
  ASSERT_TRUE(bob->request.decision);
  EXPECT_EQ(bob->request.decision->by, "ana");
  EXPECT_TRUE(bob->request.decision->approved());
  EXPECT_EQ(describeDecision(*bob->request.decision),
            "approved by ana at 2026-01-01T01:00:00.000Z: from ana");
  auto never = (*store)->decide("chain-1", "nope", by("ana", true));
  ASSERT_FALSE(never);
  EXPECT_NE(never.error().message.find("no approval of node \"nope\""), std::string::npos);
}

// Two deciders, each with its own connection (`open`), released at once on each of the
// questions n0..n<rounds-1>: exactly one wins every time, and both read back the same decision.
template <class Open>
void expectOneWinnerPerRound(const Open& open, int rounds) {
  std::atomic<int> ready{0};
  std::vector<int> wins(2, 0);
  std::vector<std::vector<std::string>> seen(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      auto store = open();
      ASSERT_TRUE(store) << store.error().message;
      for (int i = 0; i < rounds; ++i) {
        ready.fetch_add(1);
        while (ready.load() < 2 * (i + 1)) {
          std::this_thread::yield();
        }
        auto decided = (*store)->decide("chain-1", "n" + std::to_string(i),
                                        by(t == 0 ? "ana" : "bob", t == 0));
        ASSERT_TRUE(decided) << decided.error().message;
        wins[static_cast<size_t>(t)] += decided->won ? 1 : 0;
        seen[static_cast<size_t>(t)].push_back(decided->request.decision->by);
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(wins[0] + wins[1], rounds);
  EXPECT_EQ(seen[0], seen[1]);  // both were told the one decision that stands
}

// Two deciders, each with its own connection as two `oe approve` processes have, released at
// once: exactly one wins every time, and both read back the same decision.
TEST(ApprovalStoreTest, TwoDecidersAtOnceOneWins) {
  test::TempDir dir;
  const auto path = storePath(dir.path());
  constexpr int kRounds = 40;
  {
    auto store = Store::open(path);
    ASSERT_TRUE(store);
    for (int i = 0; i < kRounds; ++i) {
      ASSERT_TRUE((*store)->ask(question("n" + std::to_string(i))));
    }
  }
  expectOneWinnerPerRound([&] { return Store::open(path); }, kRounds);
}

TEST(ApprovalStoreTest, APassedDeadlineDecidesByItsOnTimeout) {
  test::TempDir dir;
  auto store = Store::open(storePath(dir.path()));
  ASSERT_TRUE(store);
  for (const auto& [on_timeout, expected] : std::vector<std::pair<std::string, std::string>>{
           {"approve", "approved"}, {"reject", "rejected"}, {"fail", "expired"}}) {
    auto asked = (*store)->ask(question(on_timeout, 10'000, on_timeout));
    ASSERT_TRUE(asked);
    auto early = (*store)->settleTimeout(*asked, 9'999);
    ASSERT_TRUE(early);
    EXPECT_FALSE(early->decision) << on_timeout;
    auto late = (*store)->settleTimeout(*asked, 10'000);
    ASSERT_TRUE(late);
    ASSERT_TRUE(late->decision) << on_timeout;
    EXPECT_EQ(late->decision->decision, expected);
    EXPECT_EQ(late->decision->by, "timeout");
    EXPECT_TRUE(late->decision->timed_out);
    EXPECT_EQ(late->decision->at, isoOfMs(10'000));
    // A person after the deadline is told it was decided.
    auto after = (*store)->decide("chain-1", on_timeout, by("ana", true));
    ASSERT_TRUE(after);
    EXPECT_FALSE(after->won);
  }
  auto no_deadline = (*store)->ask(question("open"));
  ASSERT_TRUE(no_deadline);
  auto settled = (*store)->settleTimeout(*no_deadline, INT64_MAX);
  ASSERT_TRUE(settled);
  EXPECT_FALSE(settled->decision);
}

// The same on a PostgreSQL store (oe_approvals): two connections decide at once, one wins.
TEST(ApprovalStoreTest, TwoDecidersAtOnceOneWinsOnPostgreSQL) {
  test::PgTestDb db;
  constexpr int kRounds = 20;
  {
    auto store = Store::open(db.url());
    ASSERT_TRUE(store) << store.error().message;
    for (int i = 0; i < kRounds; ++i) {
      ASSERT_TRUE((*store)->ask(question("n" + std::to_string(i))));
    }
    auto again = (*store)->ask(question("n0", 5000));
    ASSERT_TRUE(again);
    EXPECT_EQ(again->deadline_ms, -1);  // the first question stands
  }
  expectOneWinnerPerRound([&] { return Store::open(db.url()); }, kRounds);
}

TEST(ApprovalClockTest, TheSimulatedClockReadsIsoAndMilliseconds) {
  ASSERT_EQ(setenv("OE_APPROVALS_NOW", "2026-05-26T10:00:00.123Z", 1), 0);
  EXPECT_EQ(isoOfMs(nowMs()), "2026-05-26T10:00:00.123Z");
  ASSERT_EQ(setenv("OE_APPROVALS_NOW", "3600000", 1), 0);
  EXPECT_EQ(nowMs(), 3'600'000);
  ASSERT_EQ(unsetenv("OE_APPROVALS_NOW"), 0);
  EXPECT_GT(nowMs(), 1'700'000'000'000);  // the real clock
}

}  // namespace
}  // namespace oe::approvals

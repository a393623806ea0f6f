// pruneScope with GcPolicy::runs (`DELETE /api/runs/{id}` on a PostgreSQL store) against a real
// server: exactly the chosen run goes, with what `oe gc` removes of a run it prunes, while
// another run of the scope is in progress (its rows, its chain's marks and the snapshot stay).
#include "oe/pgstore/gc.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "oe/pgstore/store_connection.hpp"
#include "support/pg_test_db.hpp"

namespace oe::pgstore {
namespace {

class PgGcChosenRuns : public ::testing::Test {
 protected:
  void SetUp() override {
    auto conn = connect(db_.url(), std::chrono::seconds(10), "gc test");
    ASSERT_TRUE(conn) << conn.error().message;
    conn_ = std::move(conn).value();
    // Scope "exp": a finished (kept), b interrupted (the one deleted), c a resume of b that is
    // still running (b's chain, the scope's taker), d failed on a chain of its own. Scope
    // "other" has a run of its own. The chain run-gone has a mark and no run left (oe gc would
    // prune it; a DELETE of another run does not look at it).
    exec(
        "INSERT INTO oe_runs (run_id, scope, chain_id, resumed_from, status, started_at) VALUES "
        "('run-a', 'exp', 'run-a', NULL, 'success', now() - interval '4 min'), "
        "('run-b', 'exp', 'run-b', NULL, 'interrupted', now() - interval '3 min'), "
        "('run-c', 'exp', 'run-b', 'run-b', 'running', now() - interval '2 min'), "
        "('run-d', 'exp', 'run-d', NULL, 'failed', now() - interval '1 min'), "
        "('run-o', 'other', 'run-o', NULL, 'success', now())");
    exec("INSERT INTO oe_scopes (scope, epoch, run_id) VALUES ('exp', 4, 'run-c')");
    exec(
        "INSERT INTO oe_events (run_id, seq, line) SELECT r, s, '{\"type\":\"x\"}' FROM "
        "unnest(ARRAY['run-a','run-b','run-c','run-d','run-o']) r, generate_series(1, 2) s");
    exec(
        "INSERT INTO oe_attempts (run_id, node_id, call_key, attempt, kind, config, request) "
        "VALUES ('run-b', 't', 'k', 1, 'tool', '{}', '{}'), ('run-c', 't', 'k', 1, 'tool', '{}', "
        "'{}')");
    // b alone wrote and used k1; k2 b wrote and a used last; k3 c wrote.
    exec(
        "INSERT INTO oe_cache (key, node_id, run_id, value, last_used_run) VALUES "
        "('k1', 't', 'run-b', '{}', NULL), ('k2', 't', 'run-b', '{}', 'run-a'), "
        "('k3', 't', 'run-c', '{}', NULL)");
    // x: b's two full rows, then c's newer one (b's go). y: b's row is the newest full one (it
    // stays). z: b's full row and c's append after it (both stay).
    exec(
        "INSERT INTO oe_state_history (scope, field, value_old, value_new, append_from, node_id, "
        "run_id, ts, write_id) VALUES "
        "('exp', 'x', NULL, '1', NULL, 't', 'run-b', '', 'run-b:1'), "
        "('exp', 'x', '1', '2', NULL, 't', 'run-b', '', 'run-b:2'), "
        "('exp', 'y', NULL, '\"y\"', NULL, 't', 'run-b', '', 'run-b:2'), "
        "('exp', 'z', NULL, '[1]', NULL, 't', 'run-b', '', 'run-b:2'), "
        "('exp', 'x', '2', '3', NULL, 't', 'run-c', '', 'run-c:1'), "
        "('exp', 'z', '[1]', '[2]', 1, 't', 'run-c', '', 'run-c:1')");
    exec(
        "INSERT INTO oe_state_snapshot (scope, field, value, updated_at, node_id, run_id) VALUES "
        "('exp', 'x', '3', '', 't', 'run-c'), ('exp', 'y', '\"y\"', '', 't', 'run-b')");
    exec(
        "INSERT INTO oe_state_writes (scope, write_id, run_id) VALUES ('exp', 'run-b:1', "
        "'run-b'), ('exp', 'run-b:2', 'run-b'), ('exp', 'run-c:1', 'run-c')");
    exec(
        "INSERT INTO oe_landed_writes (scope, chain_id, write_key, run_id) VALUES "
        "('exp', 'run-a', 't', 'run-a'), ('exp', 'run-b', 't', 'run-b'), "
        "('exp', 'run-b', 'u', 'run-c'), ('exp', 'run-d', 't', 'run-d'), "
        "('exp', 'run-gone', 't', 'run-gone')");
  }

  void exec(const std::string& sql) {
    auto done = conn_->exec(sql);
    ASSERT_TRUE(done) << sql << ": " << done.error().message;
  }

  int64_t count(const std::string& sql) {
    auto rows = conn_->exec(sql);
    EXPECT_TRUE(rows) << sql << ": " << rows.error().message;
    return rows ? rows->int64(0, 0) : -1;
  }

  GcReport prune(std::vector<std::string> runs) {
    GcPolicy policy;
    policy.runs = std::move(runs);
    auto report = pruneScope(*conn_, "exp", policy);
    EXPECT_TRUE(report) << report.error().message;
    return report ? *report : GcReport{};
  }

  test::PgTestDb db_;
  std::unique_ptr<pg::Connection> conn_;
};

TEST_F(PgGcChosenRuns, RemovesExactlyTheRunWhileAnotherOfItsChainRuns) {
  const GcReport report = prune({"run-b"});
  EXPECT_EQ(report.removed, std::vector<std::string>{"run-b"});
  EXPECT_EQ(report.kept, (std::vector<std::string>{"run-d", "run-c", "run-a"}));
  EXPECT_EQ(report.events, 2);
  EXPECT_EQ(report.attempts, 1);
  EXPECT_EQ(report.cache_entries, 1) << "k1 only: a used k2 last";
  EXPECT_EQ(report.history_rows, 2) << "x's two rows before c's; y and z keep their full row";
  EXPECT_EQ(report.write_claims, 2);
  EXPECT_EQ(report.landed_marks, 0) << "c, still running, continues b's chain";
  EXPECT_GT(report.bytes, 0);

  EXPECT_EQ(count("SELECT count(*) FROM oe_runs WHERE run_id = 'run-b'"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM oe_runs"), 4);
  EXPECT_EQ(count("SELECT count(*) FROM oe_events WHERE run_id = 'run-b'"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM oe_events"), 8);
  EXPECT_EQ(count("SELECT count(*) FROM oe_attempts WHERE run_id = 'run-c'"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM oe_cache WHERE key IN ('k2', 'k3')"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM oe_cache WHERE key = 'k1'"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM oe_state_history WHERE run_id = 'run-c'"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM oe_state_history WHERE run_id = 'run-b' AND field IN "
                  "('y', 'z')"),
            2);
  EXPECT_EQ(count("SELECT count(*) FROM oe_state_snapshot WHERE scope = 'exp'"), 2)
      << "the snapshot is not touched";
  EXPECT_EQ(count("SELECT count(*) FROM oe_state_writes WHERE run_id = 'run-c'"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM oe_landed_writes WHERE chain_id = 'run-b'"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM oe_landed_writes"), 5);

  // d's chain has no other run: its mark goes with it; chain a's stays, and so does run-gone's
  // (not d's chain).
  const GcReport second = prune({"run-d"});
  EXPECT_EQ(second.removed, std::vector<std::string>{"run-d"});
  EXPECT_EQ(second.landed_marks, 1);
  EXPECT_EQ(count("SELECT count(*) FROM oe_landed_writes WHERE chain_id = 'run-d'"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM oe_landed_writes WHERE chain_id = 'run-gone'"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM oe_landed_writes"), 4);
}

TEST_F(PgGcChosenRuns, AnIdOfAnotherScopeOrNoneRemovesNothing) {
  const GcReport report = prune({"run-o", "nope"});
  EXPECT_TRUE(report.removed.empty());
  EXPECT_EQ(count("SELECT count(*) FROM oe_runs"), 5);
  EXPECT_EQ(count("SELECT count(*) FROM oe_events"), 10);
}

// A run that took the scope but has not written its oe_runs row yet may continue any chain:
// no mark goes until its row is there (the rest of the run's removal does not wait for it).
TEST_F(PgGcChosenRuns, MarksStayWhileTheScopesTakerHasNoRowYet) {
  exec("UPDATE oe_scopes SET run_id = 'run-starting' WHERE scope = 'exp'");
  const GcReport report = prune({"run-d"});
  EXPECT_EQ(report.removed, std::vector<std::string>{"run-d"});
  EXPECT_EQ(report.landed_marks, 0);
  EXPECT_EQ(report.events, 2);
  EXPECT_EQ(count("SELECT count(*) FROM oe_landed_writes WHERE chain_id = 'run-d'"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM oe_runs WHERE run_id = 'run-d'"), 0);
  // An oe command that took the scope (oe gc, oe reset-state) is no run: a's mark goes.
  exec("UPDATE oe_scopes SET run_id = 'oe host:1' WHERE scope = 'exp'");
  const GcReport again = prune({"run-a"});
  EXPECT_EQ(again.landed_marks, 1);
  EXPECT_EQ(count("SELECT count(*) FROM oe_landed_writes WHERE chain_id = 'run-a'"), 0);
}

}  // namespace
}  // namespace oe::pgstore

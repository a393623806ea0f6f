// The store's writes when the path to PostgreSQL breaks (tests/support/tcp_proxy.hpp): a state
// write cut mid-statement, one whose answer is lost, one sent again while the first still runs
// on the server; event batches sent twice; and the scope's fence, which refuses every write of
// a coordinator whose scope another took.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "oe/pg/schema.hpp"
#include "oe/pgstore/event_sink.hpp"
#include "oe/pgstore/pg_cache.hpp"
#include "oe/pgstore/pg_state_backend.hpp"
#include "oe/pgstore/run_record.hpp"
#include "oe/state/state_store.hpp"
#include "support/pg_test_db.hpp"
#include "support/tcp_proxy.hpp"
#include "support/temp_dir.hpp"

namespace oe::pgstore {
namespace {

using test::TcpProxy;

spec::StateSpec itemsSchema() {
  spec::StateSpec s;
  const spec::FieldSpec items{"items", spec::FieldType::kArray, spec::MergeStrategy::kArrayAppend,
                              {}};
  s.index.emplace(items.name, 0);
  s.fields.push_back(items);
  return s;
}

class PgFaultTest : public ::testing::Test {
 protected:
  std::string proxied() const { return proxy_->pgUrl(db_.name()); }

  pg::Connection& direct() {
    if (!direct_) {
      auto conn = pg::Connection::open(db_.url());
      EXPECT_TRUE(conn) << (conn ? "" : conn.error().message);
      direct_ = std::move(conn).value();
      EXPECT_TRUE(pg::migrate(*direct_));
    }
    return *direct_;
  }
  // On a connection of its own: the test's other one may be in a transaction, where
  // pg_stat_activity does not change.
  int64_t count(const std::string& sql) {
    if (!observer_) {
      auto conn = pg::Connection::open(db_.url());
      EXPECT_TRUE(conn) << (conn ? "" : conn.error().message);
      observer_ = std::move(conn).value();
    }
    auto rows = observer_->exec(sql);
    EXPECT_TRUE(rows) << (rows ? "" : rows.error().message);
    return rows ? rows->int64(0, 0) : -1;
  }
  std::string storedItems() {
    auto rows = direct().exec(
        "SELECT value FROM oe_state_snapshot WHERE scope = 'exp' AND field = 'items'");
    return rows && !rows->empty() ? std::string(rows->text(0, 0)) : "";
  }
  // Polls the server's view (every 10 ms, at most a minute) until `ready`.
  static bool eventually(const std::function<bool()>& ready) {
    for (int i = 0; i < 6000; ++i) {
      if (ready()) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  std::unique_ptr<state::StateStore> openStore(std::shared_ptr<ScopeFence> fence = nullptr) {
    auto backend = PgStateBackend::open(proxied(), "exp", std::chrono::seconds(10), fence);
    EXPECT_TRUE(backend) << (backend ? "" : backend.error().message);
    auto store = state::StateStore::open(std::move(backend).value(), itemsSchema());
    EXPECT_TRUE(store) << (store ? "" : store.error().message);
    return std::move(store).value();
  }

  test::PgTestDb db_;
  std::unique_ptr<TcpProxy> proxy_ = TcpProxy::toPostgres(db_.cluster().dir());
  std::unique_ptr<pg::Connection> direct_;
  std::unique_ptr<pg::Connection> observer_;
};

// The client loses its connection while its write waits on the server (here for a row lock the
// test holds); the write is sent again on a new session while the first still runs. Neither
// statement can see the other's uncommitted rows: only a key the database enforces (the write
// id's claim) keeps the item from being appended twice.
TEST_F(PgFaultTest, AWriteSentAgainWhileTheFirstStillRunsLandsOnce) {
  auto store = openStore();
  ASSERT_TRUE(store->write({{"items", Json::array({1})}}, state::WriteMeta{"r1", "a"}));
  ASSERT_TRUE(direct().exec("BEGIN"));
  ASSERT_TRUE(direct().exec(
      "SELECT 1 FROM oe_state_snapshot WHERE scope = 'exp' AND field = 'items' FOR UPDATE"));
  proxy_->on("INSERT INTO oe_state_history", TcpProxy::Action::kOrphan);
  auto written = std::async(std::launch::async, [&store] {
    return store->write({{"items", Json::array({2})}}, state::WriteMeta{"r1", "b"});
  });
  // Both statements, the orphaned first try and the retry, wait for the test's lock.
  ASSERT_TRUE(eventually([&] {
    return count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
                 "wait_event_type = 'Lock' AND query LIKE '%oe_state_history%'") == 2;
  }));
  ASSERT_TRUE(direct().exec("COMMIT"));
  auto result = written.get();
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(proxy_->counters().fired, 1);
  ASSERT_TRUE(eventually([&] {
    return count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
                 "query LIKE '%oe_state_history%' AND state = 'active' AND "
                 "pid <> pg_backend_pid()") == 0;
  }));
  EXPECT_EQ(storedItems(), "[1,2]");
  EXPECT_EQ(count("SELECT count(*) FROM oe_state_history WHERE field = 'items'"), 2);
  EXPECT_EQ(*store->field("items"), Json::array({1, 2}));
  proxy_->cutAll();
}

// A write cut mid-statement never ran: sent again, it lands. A write whose answer was lost had
// landed: sent again, it finds its claim and writes nothing. Either way, once.
TEST_F(PgFaultTest, AStateWriteCutOrWithItsAnswerLostLandsOnce) {
  auto store = openStore();
  ASSERT_TRUE(store->write({{"items", Json::array({1})}}, state::WriteMeta{"r1", "a"}));
  proxy_->on("INSERT INTO oe_state_history", TcpProxy::Action::kCut);
  ASSERT_TRUE(store->write({{"items", Json::array({2})}}, state::WriteMeta{"r1", "b"}));
  proxy_->on("INSERT INTO oe_state_history", TcpProxy::Action::kLoseReply);
  ASSERT_TRUE(store->write({{"items", Json::array({3})}}, state::WriteMeta{"r1", "c"}));
  EXPECT_EQ(proxy_->counters().fired, 2);
  EXPECT_EQ(storedItems(), "[1,2,3]");
  EXPECT_EQ(count("SELECT count(*) FROM oe_state_history"), 3);
  EXPECT_EQ(*store->field("items"), Json::array({1, 2, 3}));
}

// The event writer's batch whose answer was lost is sent again: its lines are numbered, so the
// second try adds none of them twice.
TEST_F(PgFaultTest, AnEventBatchSentAgainAddsNoLineTwice) {
  test::TempDir tmp;
  auto log = events::EventLog::open(tmp.path() / "r1.jsonl", "r1");
  ASSERT_TRUE(log);
  auto sink = EventSink::open(proxied(), "r1", std::chrono::seconds(10));
  ASSERT_TRUE(sink) << sink.error().message;
  (*sink)->attach(**log);
  proxy_->on("INSERT INTO oe_events", TcpProxy::Action::kLoseReply);
  (*log)->runStarted(Json::object());
  for (int i = 0; i < 50; ++i) {
    (*log)->nodeStarted("n" + std::to_string(i), std::nullopt);
  }
  (*log)->runFinished("success");
  EXPECT_EQ((*sink)->close(), std::nullopt);
  EXPECT_EQ(proxy_->counters().fired, 1);
  EXPECT_EQ(count("SELECT count(*) FROM oe_events WHERE run_id = 'r1'"), 52);
  EXPECT_EQ(count("SELECT count(DISTINCT line) FROM oe_events WHERE run_id = 'r1'"), 52);
  auto read = readRunEvents(direct(), "r1");
  ASSERT_TRUE(read);
  auto local = events::readEventLog(tmp.path() / "r1.jsonl");
  ASSERT_TRUE(local);
  EXPECT_EQ(read->events, local->events);
}

// A coordinator whose scope another took (its lock's session was lost, another took the lock
// and the scope meanwhile): each of its writes (state and mark, cache, events) is refused in its
// own statement and writes nothing, and the run is told once.
TEST_F(PgFaultTest, TheFenceRefusesEveryWriteOfACoordinatorWhoseScopeAnotherTook) {
  RunInfo info;
  info.run_id = "run-a";
  info.scope = "exp";
  info.chain_id = "run-a";
  auto patience = std::make_shared<pg::Patience>();
  auto record = RunRecord::begin(proxied(), info, std::chrono::seconds(10), {}, patience);
  ASSERT_TRUE(record) << record.error().message;
  auto fence = (*record)->fence();
  ASSERT_GT(fence->epoch(), 0);
  std::atomic<int> told{0};
  std::string why;
  fence->onLost([&](std::string message) {
    why = std::move(message);
    ++told;
  });
  auto store = openStore(fence);
  ASSERT_TRUE(store->beginChain("run-a"));
  ASSERT_TRUE(store->write({{"items", Json::array({1})}}, state::WriteMeta{"run-a", "a", "a", "k"}));
  auto cache = PgCache::open(proxied(), std::chrono::seconds(10), fence);
  ASSERT_TRUE(cache);
  ASSERT_TRUE((*cache)->put("key-a", "a", "run-a", "{}"));
  auto sink = EventSink::open(proxied(), "run-a", std::chrono::seconds(10), fence);
  ASSERT_TRUE(sink);

  // Another takes the scope (as a second coordinator does once it has the lock).
  auto taken = takeScope(direct(), "exp", "run-b");
  ASSERT_TRUE(taken) << taken.error().message;
  EXPECT_EQ(*taken, fence->epoch() + 1);

  auto refused = store->write({{"items", Json::array({2})}},
                              state::WriteMeta{"run-a", "b", "b", "k"});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("another coordinator took scope \"exp\""),
            std::string::npos)
      << refused.error().message;
  EXPECT_EQ(storedItems(), "[1]");
  EXPECT_EQ(count("SELECT count(*) FROM oe_landed_writes WHERE write_key = 'b'"), 0);
  auto put = (*cache)->put("key-b", "b", "run-a", "{}");
  ASSERT_FALSE(put);
  EXPECT_NE(put.error().message.find("another coordinator"), std::string::npos);
  EXPECT_EQ(count("SELECT count(*) FROM oe_cache WHERE key = 'key-b'"), 0);
  (*sink)->add(R"({"type":"node.started"})");
  const auto closed = (*sink)->close();
  ASSERT_TRUE(closed);
  EXPECT_NE(closed->find("another coordinator"), std::string::npos) << *closed;
  EXPECT_EQ(count("SELECT count(*) FROM oe_events WHERE run_id = 'run-a'"), 0);
  EXPECT_EQ(told.load(), 1);
  EXPECT_NE(why.find("scope \"exp\""), std::string::npos);
}

// A transaction-mode pooler hands statements to any server session: the session that answers
// does not hold the lock taken before. Said, not ignored.
TEST_F(PgFaultTest, ASessionThatDoesNotHoldTheScopesLockIsNamedAsAPooler) {
  ASSERT_TRUE(holdScope(direct(), "exp"));
  ASSERT_TRUE(checkSessionHoldsScope(direct(), "exp"));
  auto other = pg::Connection::open(db_.url());
  ASSERT_TRUE(other);
  auto moved = checkSessionHoldsScope(**other, "exp");
  ASSERT_FALSE(moved);
  EXPECT_NE(moved.error().message.find("transaction"), std::string::npos)
      << moved.error().message;
  EXPECT_NE(moved.error().message.find("PgBouncer"), std::string::npos);
}

}  // namespace
}  // namespace oe::pgstore

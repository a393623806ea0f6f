// The coordinator's dispatcher when the path to PostgreSQL breaks (tests/support/tcp_proxy.hpp):
// a cancel whose answer is lost, a round that fails after it took results, a database that is
// away while the run gives attempts up or waits for them. Every callback must come, once.
#include "oe/queue/dispatcher.hpp"

#include <oe/oe.h>

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <map>
#include <mutex>

#include "oe/pg/schema.hpp"
#include "support/pg_test_db.hpp"
#include "support/tcp_proxy.hpp"

namespace oe::queue {
namespace {

using test::TcpProxy;
using std::chrono::milliseconds;

// The callbacks' results, by ticket, as the dispatcher's thread delivers them.
class Results {
 public:
  Dispatcher::OnFinished callback(uint64_t* ticket) {
    return [this, ticket](const Finished& f) {
      std::lock_guard lock(mutex_);
      ++calls_[*ticket];
      got_[*ticket] = f;
      changed_.notify_all();
    };
  }
  // Waits (at most a minute) for the ticket's result.
  std::optional<Finished> wait(uint64_t ticket) {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, std::chrono::seconds(60),
                           [&] { return got_.count(ticket) > 0; })) {
      return std::nullopt;
    }
    return got_[ticket];
  }
  int calls(uint64_t ticket) {
    std::lock_guard lock(mutex_);
    return calls_[ticket];
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<uint64_t, Finished> got_;
  std::map<uint64_t, int> calls_;
};

class DispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto conn = pg::Connection::open(db_.url());
    ASSERT_TRUE(conn) << conn.error().message;
    direct_ = std::move(conn).value();
    ASSERT_TRUE(pg::migrate(*direct_));
  }
  // A test that failed halfway leaves the path broken: opened again, so that the dispatcher
  // (the fixture's, destroyed here) can end.
  void TearDown() override {
    proxy_->disarm();
    proxy_->hold(false);
    proxy_->swallowReplies(false);
    proxy_->refuse(false);
    proxy_->cutAll();
    dispatcher_.reset();
  }
  Dispatcher& start(DispatcherOptions options = {}) {
    auto started = Dispatcher::start(proxy_->pgUrl(db_.name()), "run-1", std::move(options));
    EXPECT_TRUE(started) << (started ? "" : started.error().message);
    dispatcher_ = std::move(started).value();
    return *dispatcher_;
  }
  static NewAttempt attempt(const std::string& node) {
    NewAttempt a;
    a.run_id = "run-1";
    a.node_id = node;
    a.call_key = node;
    a.kind = "tool";
    a.config = "{}";
    a.request = "{}";
    return a;
  }
  int64_t rows(const std::string& where) {
    auto counted = direct_->exec("SELECT count(*) FROM oe_attempts WHERE " + where);
    EXPECT_TRUE(counted) << (counted ? "" : counted.error().message);
    return counted ? counted->int64(0, 0) : -1;
  }
  // Polls the queue's rows (every 10 ms, at most a minute) until `n` match.
  bool waitRows(const std::string& where, int64_t n) {
    for (int i = 0; i < 6000; ++i) {
      if (rows(where) == n) {
        return true;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }

  test::PgTestDb db_;
  std::unique_ptr<TcpProxy> proxy_ = TcpProxy::toPostgres(db_.cluster().dir());
  std::unique_ptr<pg::Connection> direct_;
  Results results_;
  std::unique_ptr<Dispatcher> dispatcher_;
};

// The cancel lands but its answer is lost; sent again on a new session it finds nothing left to
// cancel. The attempt was cancelled all the same: the run must hear of it (it waits for every
// call it gave up), not wait for a result that will never come.
TEST_F(DispatcherTest, ACancelWhoseAnswerWasLostStillReachesTheRun) {
  Dispatcher* dispatcher = &start();
  uint64_t ticket = 0;
  ticket = dispatcher->submit(attempt("a"), results_.callback(&ticket));
  ASSERT_TRUE(waitRows("status = 'ready'", 1));
  proxy_->on("WHERE id = $1 AND status IN ('ready', 'leased')", TcpProxy::Action::kLoseReply);
  dispatcher->cancel(ticket);
  auto result = results_.wait(ticket);
  ASSERT_TRUE(result) << "the cancelled attempt's callback never came";
  EXPECT_EQ(result->result_status, OE_CANCELLED);
  EXPECT_EQ(proxy_->counters().fired, 1);
  EXPECT_EQ(rows("status = 'cancelled'"), 1);
  dispatcher_.reset();
  EXPECT_EQ(results_.calls(ticket), 1);
}

// One round takes the first cancellation's callback, then its next statement fails (the second
// cancel is cut): the callback it took is still delivered, and the second comes after the
// reconnect.
TEST_F(DispatcherTest, ACallbackTakenBeforeAFailureInTheSameRoundIsStillDelivered) {
  Dispatcher* dispatcher = &start();
  uint64_t first = 0;
  uint64_t second = 0;
  first = dispatcher->submit(attempt("a"), results_.callback(&first));
  second = dispatcher->submit(attempt("b"), results_.callback(&second));
  ASSERT_TRUE(waitRows("status = 'ready'", 2));
  // Held inside a statement of its idle polling (one waits in the proxy), the dispatcher
  // takes both cancellations in its next round.
  proxy_->hold(true);
  ASSERT_TRUE(proxy_->waitUntil([](const TcpProxy::Counters& c) { return c.waiting > 0; }));
  dispatcher->cancel(first);
  dispatcher->cancel(second);
  proxy_->on("WHERE id = $1 AND status IN ('ready', 'leased')", TcpProxy::Action::kCut, 1,
             /*skip=*/1);
  proxy_->hold(false);
  auto a = results_.wait(first);
  auto b = results_.wait(second);
  ASSERT_TRUE(a) << "the callback taken before the failure was dropped";
  ASSERT_TRUE(b);
  EXPECT_EQ(a->result_status, OE_CANCELLED);
  EXPECT_EQ(b->result_status, OE_CANCELLED);
  EXPECT_EQ(proxy_->counters().fired, 1);
  dispatcher_.reset();
  EXPECT_EQ(results_.calls(first), 1);
  EXPECT_EQ(results_.calls(second), 1);
}

// The database goes away while the run waits for an attempt: the dispatcher waits for it (and
// says so), it does not fail the attempt; a cancellation meanwhile is settled at once (the run
// may be stopping), and the end of the run does not wait for the database either.
TEST_F(DispatcherTest, WhileTheDatabaseIsAwayItWaitsSaysSoAndSettlesCancelsAtOnce) {
  std::mutex mutex;
  std::condition_variable said_cv;
  int said = 0;
  DispatcherOptions options;
  options.report_every = milliseconds(100);
  options.say = [&](const std::string& message) {
    EXPECT_NE(message.find("out of reach"), std::string::npos) << message;
    std::lock_guard lock(mutex);
    ++said;
    said_cv.notify_all();
  };
  Dispatcher* dispatcher = &start(options);
  uint64_t waited = 0;
  uint64_t given_up = 0;
  waited = dispatcher->submit(attempt("a"), results_.callback(&waited));
  given_up = dispatcher->submit(attempt("b"), results_.callback(&given_up));
  ASSERT_TRUE(waitRows("status = 'ready'", 2));
  proxy_->refuse(true);
  proxy_->cutAll();
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(said_cv.wait_for(lock, std::chrono::seconds(60), [&] { return said >= 2; }));
  }
  dispatcher->cancel(given_up);
  auto cancelled = results_.wait(given_up);
  ASSERT_TRUE(cancelled) << "a cancel waited for the database";
  EXPECT_EQ(cancelled->result_status, OE_CANCELLED);
  EXPECT_EQ(results_.calls(waited), 0) << "the attempt in flight was failed, not waited for";
  // The database is back: a worker's result for the waited attempt reaches the run.
  AttemptQueue queue(*direct_);
  auto claimed = queue.claim("w", {"default"}, 10, std::chrono::seconds(60));
  ASSERT_TRUE(claimed);
  Completion done;
  for (const Claimed& c : *claimed) {
    if (c.node_id == "a") {
      done.id = c.id;
      done.fence = c.fence;
    }
  }
  ASSERT_NE(done.id, 0);
  done.ok = true;
  done.response = R"({"state_delta":{}})";
  ASSERT_TRUE(*queue.complete("w", done));
  proxy_->refuse(false);
  auto result = results_.wait(waited);
  ASSERT_TRUE(result);
  EXPECT_TRUE(result->ok);
  EXPECT_EQ(result->response, done.response);
  dispatcher_.reset();
  EXPECT_EQ(results_.calls(waited), 1);
  EXPECT_EQ(results_.calls(given_up), 1);
}

// The run ends while the network swallows every answer (a server that vanished): the
// dispatcher's end gives its statement in flight a short grace and does not wait further.
TEST_F(DispatcherTest, TheEndOfARunDoesNotWaitForADatabaseThatStoppedAnswering) {
  Dispatcher* dispatcher = &start();
  uint64_t ticket = 0;
  ticket = dispatcher->submit(attempt("a"), results_.callback(&ticket));
  ASSERT_TRUE(waitRows("status = 'ready'", 1));
  dispatcher->cancel(ticket);
  ASSERT_TRUE(results_.wait(ticket));
  // An answer the proxy swallowed: the dispatcher waits for it.
  const int64_t dropped = proxy_->counters().dropped;
  proxy_->swallowReplies(true);
  ASSERT_TRUE(proxy_->waitUntil(
      [dropped](const TcpProxy::Counters& c) { return c.dropped > dropped; }));
  auto ended = std::async(std::launch::async, [this] { dispatcher_.reset(); });
  const bool in_time = ended.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  proxy_->cutAll();  // frees a dispatcher that would wait for ever, so the test can end
  ended.wait();
  EXPECT_TRUE(in_time) << "the dispatcher's end waited for a database that does not answer";
  proxy_->swallowReplies(false);
}

}  // namespace
}  // namespace oe::queue

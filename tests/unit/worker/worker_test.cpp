// `oe worker` when its database goes away (tests/support/tcp_proxy.hpp): it waits for it, as
// long as it takes, says so, works again once it is back, and a stop ends the wait at once.
#include "oe/worker/worker.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>

#include "oe/pg/schema.hpp"
#include "support/pg_test_db.hpp"
#include "support/tcp_proxy.hpp"

namespace oe::worker {
namespace {

using std::chrono::milliseconds;

// The worker's messages, waited for by content.
class Messages final : public plugins::LogSink {
 public:
  void write(oe_log_level /*level*/, std::string_view source, std::string_view message) override {
    std::lock_guard lock(mutex_);
    lines_.push_back(std::string(source) + ": " + std::string(message));
    changed_.notify_all();
  }
  // Waits (at most a minute) until `n` lines contain `text`.
  bool waitFor(const std::string& text, size_t n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(60), [&] {
      size_t found = 0;
      for (const auto& line : lines_) {
        found += line.find(text) != std::string::npos ? 1 : 0;
      }
      return found >= n;
    });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> lines_;
};

TEST(WorkerOutageTest, AWorkerWaitsOutTheDatabaseSaysSoAndAStopEndsItAtOnce) {
  test::PgTestDb db;
  auto proxy = test::TcpProxy::toPostgres(db.cluster().dir());
  auto direct = pg::Connection::open(db.url());
  ASSERT_TRUE(direct);
  ASSERT_TRUE(pg::migrate(**direct));
  Messages messages;
  WorkerOptions options;
  options.url = proxy->pgUrl(db.name());
  options.id = "w";
  options.log = &messages;
  options.report_every = milliseconds(100);
  options.lease = milliseconds(3000);
  auto worker = Worker::start(options);
  ASSERT_TRUE(worker) << worker.error().message;
  auto ran = std::async(std::launch::async, [&worker] { return (*worker)->run(); });

  proxy->refuse(true);
  proxy->cutAll();
  ASSERT_TRUE(messages.waitFor("out of reach", 3)) << "the worker did not say it waits";
  ASSERT_EQ(ran.wait_for(milliseconds(0)), std::future_status::timeout) << "it gave up";

  // Back: the worker claims again (an attempt it cannot run: its folder does not exist; it
  // completes it as failed, which is all this needs).
  proxy->refuse(false);
  queue::NewAttempt attempt;
  attempt.run_id = "run-1";
  attempt.node_id = "n";
  attempt.call_key = "n";
  attempt.kind = "tool";
  attempt.config = R"({"experience_dir":"/nonexistent/oe-worker-test","node":{}})";
  attempt.request = "{}";
  ASSERT_TRUE(queue::AttemptQueue(**direct).enqueue({attempt}, /*notify=*/true));
  bool failed = false;
  for (int i = 0; i < 6000 && !failed; ++i) {
    auto rows = (*direct)->exec(
        "SELECT count(*) FROM oe_attempts WHERE status = 'failed' AND lease_owner = 'w'");
    ASSERT_TRUE(rows);
    failed = rows->int64(0, 0) == 1;
    if (!failed) {
      std::this_thread::sleep_for(milliseconds(10));
    }
  }
  EXPECT_TRUE(failed) << "the worker did not work again once the database was back";

  // Away again; a stop ends the wait at once (the test's minute is the bound).
  proxy->refuse(true);
  proxy->cutAll();
  ASSERT_TRUE(messages.waitFor("out of reach", 4));
  (*worker)->stop();
  ASSERT_EQ(ran.wait_for(std::chrono::seconds(60)), std::future_status::ready)
      << "a stop waited for the database";
  auto outcome = ran.get();
  EXPECT_TRUE(outcome) << outcome.error().message;
}

// A server that restarts while a worker starts (found by the crash harness as a coordinator
// left waiting for ever, docs/testing.md "Found so far" 6): the worker lost its connection in
// the middle of the schema's migration lock and exited. It now connects again and starts over.
TEST(WorkerOutageTest, AConnectionLostWhileTheWorkerStartsIsOpenedAgainAndTheStartGoesOn) {
  test::PgTestDb db;
  auto proxy = test::TcpProxy::toPostgres(db.cluster().dir());
  auto direct = pg::Connection::open(db.url());
  ASSERT_TRUE(direct);
  proxy->on("pg_advisory_lock", test::TcpProxy::Action::kCut);
  proxy->on("INSERT INTO oe_workers", test::TcpProxy::Action::kLoseReply);
  Messages messages;
  WorkerOptions options;
  options.url = proxy->pgUrl(db.name());
  options.id = "w";
  options.log = &messages;
  auto worker = Worker::start(options);
  ASSERT_TRUE(worker) << worker.error().message;
  EXPECT_EQ(proxy->counters().fired, 2);  // both faults happened, and the start got past them
  auto rows = (*direct)->exec("SELECT count(*) FROM oe_workers WHERE id = 'w'");
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->int64(0, 0), 1);
  (*worker)->stop();
}

}  // namespace
}  // namespace oe::worker

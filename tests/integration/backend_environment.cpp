// The same integration tests on the PostgreSQL backend (issue 15, item 5): ctest registers the
// run-engine tests a second and a third time with OE_TEST_BACKEND=postgresql (and
// OE_TEST_WORKERS=N), and this environment then gives each test process a database of its own
// (OE_STORE, which every `oe` the test starts inherits) and, with workers, N `oe worker`
// processes serving it (OE_WORKERS=1 sends every `oe run` through the queue). The tests
// themselves do not change: they must end in the same final states on every backend.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "support/pg_test_db.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace oe::test {
namespace {

class BackendEnvironment final : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* backend = std::getenv("OE_TEST_BACKEND");  // NOLINT(concurrency-mt-unsafe)
    if (backend == nullptr || std::string(backend) != "postgresql") {
      return;
    }
    db_ = std::make_unique<PgTestDb>();
    ::setenv("OE_STORE", db_->url().c_str(), 1);  // NOLINT(concurrency-mt-unsafe): set-up
    const char* workers = std::getenv("OE_TEST_WORKERS");  // NOLINT(concurrency-mt-unsafe)
    const int count = workers != nullptr ? std::atoi(workers) : 0;
    if (count <= 0) {
      return;
    }
    ::setenv("OE_WORKERS", "1", 1);  // NOLINT(concurrency-mt-unsafe): set-up
    logs_ = std::make_unique<TempDir>();
    for (int i = 0; i < count; ++i) {
      workers_.push_back(std::make_unique<BackgroundProcess>(
          std::vector<std::string>{OE_EXE, "worker", "--store", db_->url(), "--concurrency", "8"},
          std::map<std::string, std::string>{{"OE_PLUGIN_PATH", ""}}, logs_->path(),
          *logs_ / ("worker-" + std::to_string(i))));
    }
  }

  void TearDown() override {
    if (!workers_.empty()) {
      // The runs went through the queue: a harness that silently ran them in process would
      // prove nothing about the workers.
      auto conn = pg::Connection::open(db_->url());
      ASSERT_TRUE(conn) << conn.error().message;
      auto done = (*conn)->exec("SELECT count(*) FROM oe_attempts WHERE status = 'done'");
      ASSERT_TRUE(done) << done.error().message;
      EXPECT_GT(done->int64(0, 0), 0) << "no node attempt was run by an `oe worker`";
    }
    for (auto& worker : workers_) {
      worker->signal(SIGTERM);  // a worker finishes what it holds and exits 0
      EXPECT_EQ(worker->wait(), 0) << worker->err();
    }
    workers_.clear();
    db_.reset();
  }

 private:
  std::unique_ptr<PgTestDb> db_;
  std::unique_ptr<TempDir> logs_;
  std::vector<std::unique_ptr<BackgroundProcess>> workers_;
};

// gtest_main runs the registered environments; a static registration is the documented way to
// add one without a main of our own.
[[maybe_unused]] ::testing::Environment* const kBackend =
    ::testing::AddGlobalTestEnvironment(new BackendEnvironment);  // NOLINT: gtest takes ownership

}  // namespace
}  // namespace oe::test

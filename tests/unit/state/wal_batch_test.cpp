// The WAL-batching VFS (common/sqlite_vfs.hpp) that every oe database is opened through: a
// commit that returned is in the WAL file (another connection, and a killed writer's next
// opener, see it), and nothing of an uncommitted transaction is.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "oe/common/sqlite.hpp"
#include "support/temp_dir.hpp"

namespace oe::sqlite {
namespace {

int64_t countRows(const std::filesystem::path& db_path) {
  sqlite3* raw = nullptr;  // the default VFS: sees only what is in the files
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  Db db(raw);
  sqlite3_busy_timeout(raw, 5000);
  auto stmt = prepare(raw, "SELECT COUNT(*) FROM t");
  EXPECT_TRUE(stmt) << (stmt ? "" : stmt.error().message);
  if (!stmt || sqlite3_step(stmt->get()) != SQLITE_ROW) {
    return -1;
  }
  return sqlite3_column_int64(stmt->get(), 0);
}

Db openWithTable(const std::filesystem::path& db_path) {
  auto db = open(db_path);
  EXPECT_TRUE(db) << (db ? "" : db.error().message);
  EXPECT_TRUE(useWal(db->get()));
  EXPECT_TRUE(exec(db->get(), "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT, "
                              "w TEXT); CREATE INDEX IF NOT EXISTS t_v ON t(v);"));
  return std::move(*db);
}

TEST(WalBatch, EachCommitIsVisibleToAnotherConnectionAtOnce) {
  test::TempDir dir;
  const auto path = dir.path() / "t.sqlite";
  Db db = openWithTable(path);
  auto insert = prepare(db.get(), "INSERT INTO t (v, w) VALUES (?1, ?2)");
  ASSERT_TRUE(insert);
  const std::string big(5000, 'x');  // two pages per row, so a commit has several frames
  for (int i = 1; i <= 40; ++i) {
    ASSERT_TRUE(exec(db.get(), "BEGIN IMMEDIATE"));
    for (int k = 0; k < 3; ++k) {
      StmtScope scope(insert->get());
      const std::string v = std::to_string(i * 10 + k);
      bindText(insert->get(), 1, v);
      bindText(insert->get(), 2, big);
      ASSERT_EQ(sqlite3_step(insert->get()), SQLITE_DONE);
    }
    ASSERT_TRUE(exec(db.get(), "COMMIT"));
    ASSERT_EQ(countRows(path), i * 3) << "after commit " << i;
  }
  // A rolled-back transaction leaves nothing, and the next commit still lands.
  ASSERT_TRUE(exec(db.get(), "BEGIN IMMEDIATE; INSERT INTO t (v) VALUES ('gone'); ROLLBACK"));
  ASSERT_TRUE(exec(db.get(), "INSERT INTO t (v) VALUES ('kept')"));
  EXPECT_EQ(countRows(path), 121);
  auto check = prepare(db.get(), "PRAGMA integrity_check");
  ASSERT_TRUE(check);
  ASSERT_EQ(sqlite3_step(check->get()), SQLITE_ROW);
  EXPECT_EQ(columnText(check->get(), 0), "ok");
}

// A writer killed with SIGKILL at an arbitrary moment: every commit it reported as done is in
// the file, and the file is sound.
TEST(WalBatch, CommitsThatReturnedSurviveAKill) {
  for (int round = 0; round < 6; ++round) {
    test::TempDir dir;
    const auto path = dir.path() / "t.sqlite";
    { Db db = openWithTable(path); }
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(pipe_fds[0]);
      Db db = openWithTable(path);
      const std::string big(3000, 'y');
      for (int i = 0;; ++i) {
        const std::string sql = "BEGIN IMMEDIATE; INSERT INTO t (v, w) VALUES ('" +
                                std::to_string(i) + "', '" + big + "'); COMMIT";
        if (!exec(db.get(), sql.c_str())) {
          ::_exit(3);
        }
        const char done = 'c';  // one byte per commit that returned
        if (::write(pipe_fds[1], &done, 1) != 1) {
          ::_exit(4);
        }
      }
    }
    ::close(pipe_fds[1]);
    // Let it commit a varying number of times, then kill it wherever it is.
    const int wanted = 50 + round * 37;
    int reported = 0;
    char buf[64];
    while (reported < wanted) {
      const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
      ASSERT_GT(n, 0);
      reported += static_cast<int>(n);
    }
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    while (true) {  // commits reported between our last read and the kill
      const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
      if (n <= 0) {
        break;
      }
      reported += static_cast<int>(n);
    }
    ::close(pipe_fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped on its own: " << status;
    const int64_t rows = countRows(path);
    EXPECT_GE(rows, reported) << "round " << round;
    EXPECT_LE(rows, reported + 1) << "round " << round;  // at most the one being committed
    Db db = openWithTable(path);
    auto check = prepare(db.get(), "PRAGMA integrity_check");
    ASSERT_TRUE(check);
    ASSERT_EQ(sqlite3_step(check->get()), SQLITE_ROW);
    EXPECT_EQ(columnText(check->get(), 0), "ok");
  }
}

}  // namespace
}  // namespace oe::sqlite

// StoreLock across real processes: one writer per state store (issue 10, item 4).
#include "oe/state/store_lock.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "support/temp_dir.hpp"

namespace oe::state {
namespace {

// A byte over a pipe: the processes' only synchronisation.
void sendByte(int fd, char c) { ASSERT_EQ(::write(fd, &c, 1), 1); }
char recvByte(int fd) {
  char c = 0;
  return ::read(fd, &c, 1) == 1 ? c : '\0';
}

class StoreLockTest : public ::testing::Test {
 protected:
  test::TempDir dir_;
  std::filesystem::path db_path_ = dir_ / ".openexpertise/state.sqlite";
};

TEST_F(StoreLockTest, NobodyHoldsAStoreThatWasNeverLocked) {
  EXPECT_FALSE(StoreLock::holder(db_path_).has_value());
}

TEST_F(StoreLockTest, AHeldLockNamesItsHolderAndIsFreeAfterRelease) {
  {
    auto lock = StoreLock::acquire(db_path_, "run-1", false);
    ASSERT_TRUE(lock.ok()) << lock.error().message;
    EXPECT_TRUE(lock->held());
    auto holder = StoreLock::holder(db_path_);
    ASSERT_TRUE(holder.has_value());
    EXPECT_EQ(holder->run_id, "run-1");
    EXPECT_EQ(holder->pid, ::getpid());
    EXPECT_FALSE(holder->started.empty());
    StoreLock moved = std::move(*lock);  // movable: still held
    EXPECT_TRUE(StoreLock::holder(db_path_).has_value());
  }
  EXPECT_FALSE(StoreLock::holder(db_path_).has_value());
  EXPECT_TRUE(StoreLock::acquire(db_path_, "run-2", false).ok());
}

// Another process holds the store: acquire without wait is refused with a message naming the
// run and its pid and saying what to do.
TEST_F(StoreLockTest, ASecondProcessIsRefusedWithAMessageNamingTheRun) {
  int to_parent[2];
  int to_child[2];
  ASSERT_EQ(::pipe(to_parent), 0);
  ASSERT_EQ(::pipe(to_child), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char go = 0;
    (void)::read(to_child[0], &go, 1);  // the parent holds the lock now
    auto second = StoreLock::acquire(db_path_, "run-child", false);
    const auto holder = StoreLock::holder(db_path_);
    // The refused acquire must not have cleared the holder's name (holder() reads it again).
    const bool ok = !second.ok() &&
                    second.error().message.find("run-parent") != std::string::npos &&
                    second.error().message.find("pid " + std::to_string(::getppid())) !=
                        std::string::npos &&
                    second.error().message.find("--wait") != std::string::npos &&
                    holder && holder->run_id == "run-parent";
    if (!ok) {
      std::fprintf(stderr, "child saw: %s; holder %s; ppid %d\n",
                   second.ok() ? "(acquired)" : second.error().message.c_str(),
                   holder ? holder->run_id.c_str() : "(none)", static_cast<int>(::getppid()));
    }
    char c = ok ? 'y' : 'n';
    (void)::write(to_parent[1], &c, 1);
    ::_exit(0);
  }
  auto lock = StoreLock::acquire(db_path_, "run-parent", false);
  ASSERT_TRUE(lock.ok()) << lock.error().message;
  sendByte(to_child[1], 'l');
  EXPECT_EQ(recvByte(to_parent[0]), 'y');
  for (int fd : {to_parent[0], to_parent[1], to_child[0], to_child[1]}) {
    ::close(fd);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
}

// wait=true blocks until the holder lets go, then holds the store itself. (The child is
// forked before the parent locks: a forked child shares its parent's open lock file, and so its
// flock, until it closes it.)
TEST_F(StoreLockTest, WaitBlocksUntilTheHolderReleases) {
  int to_parent[2];
  int to_child[2];
  ASSERT_EQ(::pipe(to_parent), 0);
  ASSERT_EQ(::pipe(to_child), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char go = 0;
    (void)::read(to_child[0], &go, 1);  // the parent holds the lock now
    const bool refused = !StoreLock::acquire(db_path_, "run-second", false).ok();
    char c = refused ? 'r' : 'n';
    (void)::write(to_parent[1], &c, 1);
    auto waited = StoreLock::acquire(db_path_, "run-second", true);
    c = waited.ok() ? 'g' : 'n';
    (void)::write(to_parent[1], &c, 1);
    (void)::read(to_child[0], &go, 1);  // hold it until the parent has looked
    ::_exit(0);
  }
  auto lock = StoreLock::acquire(db_path_, "run-first", false);
  ASSERT_TRUE(lock.ok()) << lock.error().message;
  sendByte(to_child[1], 'l');
  EXPECT_EQ(recvByte(to_parent[0]), 'r');
  *lock = StoreLock();  // release: the waiting child gets it
  EXPECT_EQ(recvByte(to_parent[0]), 'g');
  auto holder = StoreLock::holder(db_path_);
  ASSERT_TRUE(holder.has_value());
  EXPECT_EQ(holder->run_id, "run-second");
  EXPECT_EQ(holder->pid, child);
  EXPECT_FALSE(StoreLock::acquire(db_path_, "run-third", false).ok());
  sendByte(to_child[1], 'x');
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(StoreLock::holder(db_path_).has_value());
  for (int fd : {to_parent[0], to_parent[1], to_child[0], to_child[1]}) {
    ::close(fd);
  }
}

// A holder killed with SIGKILL leaves its lock file, naming it, but not a held lock.
TEST_F(StoreLockTest, AKilledHoldersLockFileIsNotAHeldLock) {
  int to_parent[2];
  ASSERT_EQ(::pipe(to_parent), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto lock = StoreLock::acquire(db_path_, "run-killed", false);
    char c = lock.ok() ? 'l' : 'n';
    (void)::write(to_parent[1], &c, 1);
    for (;;) {
      ::pause();
    }
  }
  ASSERT_EQ(recvByte(to_parent[0]), 'l');
  ASSERT_TRUE(StoreLock::holder(db_path_).has_value());
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(std::filesystem::exists(StoreLock::lockPath(db_path_)));
  EXPECT_FALSE(StoreLock::holder(db_path_).has_value());
  EXPECT_TRUE(StoreLock::acquire(db_path_, "run-next", false).ok());
  ::close(to_parent[0]);
  ::close(to_parent[1]);
}

}  // namespace
}  // namespace oe::state

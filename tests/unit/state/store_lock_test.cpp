// StoreLock across real processes: one writer per state store (issue 10, item 4).
#include "oe/state/store_lock.hpp"

#include <gtest/gtest.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
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

// Kills and reaps a forked child that is still there when the test ends early (a failed ASSERT
// returns before the child is told to exit, and it would wait on its pipe for ever).
class ChildGuard {
 public:
  explicit ChildGuard(pid_t pid) : pid_(pid) {}
  ~ChildGuard() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;
  void reaped() { pid_ = -1; }

 private:
  pid_t pid_;
};

// True when the kernel lists `pid` as waiting for an flock (a "->" line of /proc/locks).
bool blockedOnFlock(pid_t pid) {
  std::ifstream locks("/proc/locks");
  const std::string pid_field = " " + std::to_string(pid) + " ";
  for (std::string line; std::getline(locks, line);) {
    if (line.find("-> FLOCK") != std::string::npos && line.find(pid_field) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// wait=true blocks until the holder lets go, then holds the store itself. Proven by the order of
// events, not by time: the kernel lists the waiter as blocked on the lock while the parent holds
// it (and it has said nothing), and when its acquire returns the parent's "released" mark, made
// just before the release, is already there. (The child is forked before the parent locks: a
// forked child shares its parent's open lock file, and so its flock, until it closes it.)
TEST_F(StoreLockTest, WaitBlocksUntilTheHolderReleases) {
  int to_parent[2];
  int to_child[2];
  ASSERT_EQ(::pipe(to_parent), 0);
  ASSERT_EQ(::pipe(to_child), 0);
  const auto released = dir_ / "released";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char go = 0;
    (void)::read(to_child[0], &go, 1);  // the parent holds the lock now
    const bool refused = !StoreLock::acquire(db_path_, "run-second", false).ok();
    char c = refused ? 'r' : 'n';
    (void)::write(to_parent[1], &c, 1);
    auto waited = StoreLock::acquire(db_path_, "run-second", true);
    // 'e': the acquire returned before the holder let go.
    c = !waited.ok() ? 'n' : std::filesystem::exists(released) ? 'g' : 'e';
    (void)::write(to_parent[1], &c, 1);
    (void)::read(to_child[0], &go, 1);  // hold it until the parent has looked
    ::_exit(0);
  }
  ChildGuard guard(child);
  auto lock = StoreLock::acquire(db_path_, "run-first", false);
  ASSERT_TRUE(lock.ok()) << lock.error().message;
  sendByte(to_child[1], 'l');
  EXPECT_EQ(recvByte(to_parent[0]), 'r');
  // Until the kernel shows the child waiting for the lock: a byte from it first means that its
  // acquire returned while the lock was held. (The deadline only turns a hang into a failure.)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool blocked = false;
  while (!blocked && std::chrono::steady_clock::now() < deadline) {
    pollfd from_child{to_parent[0], POLLIN, 0};
    ASSERT_EQ(::poll(&from_child, 1, 10), 0) << "the waiter went on while the lock was held";
    blocked = blockedOnFlock(child);
  }
  ASSERT_TRUE(blocked) << "the waiter never blocked on the lock";
  const auto held_by = StoreLock::holder(db_path_);
  ASSERT_TRUE(held_by.has_value());
  EXPECT_EQ(held_by->run_id, "run-first");
  std::ofstream(released) << "";
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
  guard.reaped();
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

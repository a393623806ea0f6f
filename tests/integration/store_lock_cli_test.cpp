// Destructive commands refuse while a run holds the state store's lock (issue 10, item 4).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "oe_fixture.hpp"

namespace oe::test {
namespace {

constexpr std::string_view kExperience = R"(name: locked
version: 0.1.0
state: { schema: { n: { type: number } } }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./tools/put.sh }
  edges: []
)";

class StoreLockCliTest : public OeTest {
 protected:
  std::filesystem::path workspace() const { return dir_.path() / ".openexpertise"; }

  // A child process holding the flock on state.sqlite.lock, named as a run names itself there,
  // until release() (the lock is taken by plain flock(2), as StoreLock takes it).
  void hold() {
    std::filesystem::create_directories(workspace());
    const auto lock = workspace() / "state.sqlite.lock";
    ASSERT_EQ(::pipe(to_parent_), 0);
    ASSERT_EQ(::pipe(to_child_), 0);
    holder_ = ::fork();
    ASSERT_GE(holder_, 0);
    if (holder_ == 0) {
      const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT, 0644);
      bool ok = fd >= 0 && ::flock(fd, LOCK_EX) == 0;
      const std::string text = R"({"run_id":"run-in-progress","pid":)" +
                               std::to_string(::getpid()) +
                               R"(,"started":"2026-01-01T00:00:00.000Z"})";
      ok = ok && ::ftruncate(fd, 0) == 0 &&
           ::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size());
      char c = ok ? 'l' : 'n';
      (void)::write(to_parent_[1], &c, 1);
      (void)::read(to_child_[0], &c, 1);
      ::_exit(0);
    }
    char c = 0;
    ASSERT_EQ(::read(to_parent_[0], &c, 1), 1);
    ASSERT_EQ(c, 'l');
  }
  void release() {
    char c = 'x';
    ASSERT_EQ(::write(to_child_[1], &c, 1), 1);
    int status = 0;
    ASSERT_EQ(::waitpid(holder_, &status, 0), holder_);
    for (int fd : {to_parent_[0], to_parent_[1], to_child_[0], to_child_[1]}) {
      ::close(fd);
    }
  }

  pid_t holder_ = -1;
  int to_parent_[2] = {-1, -1};
  int to_child_[2] = {-1, -1};
};

TEST_F(StoreLockCliTest, ResetStateAndCacheClearRefuseWhileARunHoldsTheStore) {
  writeExperience(kExperience);
  writeExecutable("tools/put.sh", "#!/bin/sh\necho '{\"state_delta\":{\"n\":1}}'\n");
  std::filesystem::create_directories(workspace() / "cache");
  std::ofstream(workspace() / "state.sqlite") << "";
  std::ofstream(workspace() / "cache" / "cache.sqlite") << "";
  hold();
  const std::string dir = dir_.path().string();

  auto reset = oe({"reset-state", "--yes", "--experience", dir});
  EXPECT_EQ(reset.exit_code, 1);
  EXPECT_NE(reset.err.find("run run-in-progress (pid " + std::to_string(holder_)),
            std::string::npos)
      << reset.err;
  EXPECT_TRUE(std::filesystem::exists(workspace() / "state.sqlite"));

  auto clear = oe({"cache", "clear", "--yes", "--experience", dir});
  EXPECT_EQ(clear.exit_code, 1);
  EXPECT_NE(clear.err.find("run-in-progress"), std::string::npos) << clear.err;
  EXPECT_TRUE(std::filesystem::exists(workspace() / "cache" / "cache.sqlite"));

  release();  // the lock file stays behind, but nobody holds it
  auto reset_after = oe({"reset-state", "--yes", "--experience", dir});
  EXPECT_EQ(reset_after.exit_code, 0) << reset_after.err;
  EXPECT_FALSE(std::filesystem::exists(workspace() / "state.sqlite"));
  auto clear_after = oe({"cache", "clear", "--yes", "--experience", dir});
  EXPECT_EQ(clear_after.exit_code, 0) << clear_after.err;
  EXPECT_FALSE(std::filesystem::exists(workspace() / "cache"));
}

}  // namespace
}  // namespace oe::test

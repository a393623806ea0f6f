// One writer per state store (issue 10, item 4): a run holds an flock on `<db>.lock` for its
// whole life; a second run waits or is refused, and destructive commands refuse while it holds.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "oe/common/result.hpp"

namespace oe::state {

// Who holds a store's lock, as the holder wrote it into the lock file.
struct LockHolder {
  std::string run_id;
  int64_t pid = 0;
  std::string started;  // ISO-8601 UTC, when the lock was taken
};

// Exclusive lock of the state store at a db path. The kernel releases an flock when its holder
// dies (kill -9 included), so a lock file left behind is not a held lock. The descriptor is
// O_CLOEXEC: the tools a run starts do not inherit (and keep) it. Movable; released (and the
// file's content cleared) on destruction.
class StoreLock {
 public:
  StoreLock() = default;
  ~StoreLock();
  StoreLock(StoreLock&& other) noexcept;
  StoreLock& operator=(StoreLock&& other) noexcept;
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

  // Exclusive lock of the state store at db_path: flock on "<db_path>.lock" beside it (created,
  // with its folders, when missing), whose content names the holder ({run_id, pid, started}).
  // wait=false: an error naming the run in progress and its pid and saying what to do (wait,
  // or pass --wait); wait=true: blocks until free.
  static Result<StoreLock> acquire(const std::filesystem::path& db_path, std::string_view run_id,
                                   bool wait);
  // Who holds it now, without taking it (nullopt: nobody). A holder that has not yet written
  // its name reads as a LockHolder with an empty run_id and pid 0.
  static std::optional<LockHolder> holder(const std::filesystem::path& db_path);

  // "<db_path>.lock".
  static std::filesystem::path lockPath(const std::filesystem::path& db_path);
  // "run <id> (pid <pid>, started <ts>)", or "another run" when the holder is not named yet.
  static std::string describe(const LockHolder& holder);

  bool held() const { return fd_ >= 0; }

 private:
  explicit StoreLock(int fd) : fd_(fd) {}
  void release();

  int fd_ = -1;
};

}  // namespace oe::state

// Append-only journals in front of SQLite, shared by the state store and the cache: a line
// appended with one write(2) survives a kill of the process, like a WAL commit with
// synchronous=NORMAL, for a tenth of a commit's cost; the owner folds its lines into SQLite in
// batches. The owner holds an flock on its journal for its whole life, which is how another
// process tells a live journal from the orphan of a killed one (and folds only orphans).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "oe/common/result.hpp"

namespace oe {

class Journal {
 public:
  Journal() = default;
  ~Journal();
  Journal(Journal&& other) noexcept;
  Journal& operator=(Journal&& other) noexcept;
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Creates `<dir>/<prefix><pid>-<random>.jsonl` (exclusive) and locks it.
  static Result<Journal> create(const std::filesystem::path& dir, std::string_view prefix);

  bool isOpen() const { return fd_ >= 0; }
  const std::filesystem::path& path() const { return path_; }
  // Bytes appended since create() or the last clear().
  uint64_t size() const { return size_; }

  // Appends `line` (ending in '\n') with one write(2) (more only if the kernel writes it in
  // parts). On failure (a full disk) the part of the line that got in is cut off again and the
  // journal stays open; if even that fails it closes (isOpen() is false), so that nothing is
  // ever appended after a torn line.
  Result<void> append(std::string_view line);
  // Empties the file (its lines are folded).
  Result<void> clear();
  // Unlinks the file while still holding its lock, then closes it.
  void remove();

  // Each line of `text` ('\n'-separated; the last may be torn, without its '\n').
  static void forEachLine(std::string_view text, const std::function<void(std::string_view)>& fn);

  // Every journal named `<prefix>*.jsonl` in `dir`, live or not (for listings).
  static std::vector<std::filesystem::path> list(const std::filesystem::path& dir,
                                                 std::string_view prefix);

  // For each journal of `prefix` in `dir` whose owner is gone (no lock on it, still linked),
  // except `skip`: locks it, calls fold(path, content) and removes the file when fold returns
  // true. Two processes folding at once never fold the same journal twice.
  static void foldOrphans(
      const std::filesystem::path& dir, std::string_view prefix,
      const std::function<bool(const std::filesystem::path&, std::string_view)>& fold,
      const std::filesystem::path& skip = {});

 private:
  void close();

  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Calls `fold` on its own thread once arm() has been called and `delay` has passed, so that
// what a store batched reaches SQLite within `delay` even while the thread that wrote it is
// busy (an inline node call can take minutes). `fold` takes the owner's lock itself; arm() and
// disarm() may be called with that lock held.
class FoldTimer {
 public:
  FoldTimer(std::chrono::milliseconds delay, std::function<void()> fold);
  ~FoldTimer();  // stops and joins the thread; a pending fold is the owner's to do
  FoldTimer(const FoldTimer&) = delete;
  FoldTimer& operator=(const FoldTimer&) = delete;

  void arm();     // no-op when armed; starts the thread on first use
  void disarm();  // the owner folded by itself

 private:
  void loop();

  const std::chrono::milliseconds delay_;
  const std::function<void()> fold_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool armed_ = false;
  bool stop_ = false;
  std::chrono::steady_clock::time_point armed_at_;
  std::thread thread_;
};

}  // namespace oe

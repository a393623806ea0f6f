// DigestCache: data files hashed when a call is keyed, read again only when they changed;
// folders through every file below them, within bounds.
#include "oe/cache/digest_cache.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include "oe/cache/cache_store.hpp"
#include "support/temp_dir.hpp"

namespace oe::cache {
namespace {

namespace fs = std::filesystem;

// Moves a file's modification time into the past, as if written long before the run: only
// then does DigestCache trust its identity (a file changed within the last 2 s may change again
// within one timestamp tick).
void age(const fs::path& p) {
  fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::hours(1));
}

TEST(DigestCache, AnUnchangedOldFileIsReadOnceAChangedOneAgain) {
  test::TempDir dir;
  const auto file = dir.write("input.txt", "one");
  age(file);
  DigestCache digests;
  const auto first = digests.digest(file);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(*first, sha256Hex("one"));
  EXPECT_EQ(*digests.digest(file), *first);
  EXPECT_EQ(digests.filesRead(), 1u);
  dir.write("input.txt", "two");  // same size: the timestamps and the change time tell
  EXPECT_EQ(*digests.digest(file), sha256Hex("two"));
  EXPECT_EQ(digests.filesRead(), 2u);
}

TEST(DigestCache, AFreshFileIsReadEveryTime) {
  test::TempDir dir;
  const auto file = dir.write("out.txt", "a");
  DigestCache digests;
  EXPECT_EQ(*digests.digest(file), sha256Hex("a"));
  // Rewritten within the same timestamp tick, in place: nothing in stat() may show it.
  dir.write("out.txt", "b");
  EXPECT_EQ(*digests.digest(file), sha256Hex("b"));
}

TEST(DigestCache, AFolderIsHashedThroughEveryFileBelowIt) {
  test::TempDir dir;
  dir.write("data/a.csv", "1");
  dir.write("data/sub/b.csv", "2");
  dir.write("data/.git/HEAD", "ref");
  DigestCache digests;
  const auto before = digests.digest(dir / "data");
  ASSERT_TRUE(before) << before.error().message;
  dir.write("data/.git/HEAD", "other ref");  // version-control metadata does not count
  EXPECT_EQ(*digests.digest(dir / "data"), *before);
  dir.write("data/sub/b.csv", "3");  // a file two levels down does
  const auto changed = digests.digest(dir / "data");
  EXPECT_NE(*changed, *before);
  dir.write("data/sub/c.csv", "");  // so does a new, empty one
  EXPECT_NE(*digests.digest(dir / "data"), *changed);
}

TEST(DigestCache, AFolderPastTheBoundIsRefusedSayingWhatToDo) {
  test::TempDir dir;
  for (size_t i = 0; i <= DigestCache::kMaxFolderFiles; ++i) {
    dir.write("big/f" + std::to_string(i), "");
  }
  DigestCache digests;
  bool too_large = false;
  const auto refused = digests.digest(dir / "big", &too_large);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(too_large);
  EXPECT_NE(refused.error().message.find("more than 10000 files"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("cache: false"), std::string::npos);
}

TEST(DigestCache, AMissingPathIsAnErrorNamingIt) {
  test::TempDir dir;
  DigestCache digests;
  bool too_large = false;
  const auto missing = digests.digest(dir / "nope.txt", &too_large);
  ASSERT_FALSE(missing);
  EXPECT_FALSE(too_large);
  EXPECT_NE(missing.error().message.find("nope.txt"), std::string::npos);
}

}  // namespace
}  // namespace oe::cache

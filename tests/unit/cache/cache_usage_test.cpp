// The retention side of CacheStore (oe gc, docs/durability.md): which runs replayed an entry
// (touch), the upgrade of caches written before that was recorded, pruning and compaction.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <map>
#include <string>

#include "oe/cache/cache_store.hpp"
#include "support/temp_dir.hpp"

namespace oe::cache {
namespace {

class CacheUsageTest : public ::testing::Test {
 protected:
  std::unique_ptr<CacheStore> open() {
    auto store = CacheStore::open(dir_.path() / "cache");
    EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error().message);
    return store.ok() ? std::move(*store) : nullptr;
  }
  std::map<std::string, CacheEntry> byKey(CacheStore& store) {
    std::map<std::string, CacheEntry> out;
    for (auto& e : store.list()) {
      out.emplace(e.key, e);
    }
    return out;
  }
  uint64_t bytesOnDisk() {
    uint64_t total = 0;
    for (const char* name : {"cache.sqlite", "cache.sqlite-wal"}) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(dir_.path() / "cache" / name, ec);
      total += ec ? 0 : size;
    }
    return total;
  }

  test::TempDir dir_;
  Json output_ = {{"state_delta", {{"val", 42}}}};
};

TEST_F(CacheUsageTest, TouchRecordsTheLastRunThatReplayedAnEntry) {
  auto store = open();
  ASSERT_TRUE(store->put("k1", "a", "r1", output_).ok());
  ASSERT_TRUE(store->put("k2", "b", "r1", output_).ok());
  auto before = byKey(*store);
  EXPECT_EQ(before["k1"].last_used_run, "");  // never replayed
  EXPECT_EQ(before["k1"].last_used_at, "");

  ASSERT_TRUE(store->touch({"k1", "no-such-key"}, "r2").ok());  // a vanished key is ignored
  auto after = byKey(*store);
  EXPECT_EQ(after["k1"].last_used_run, "r2");
  EXPECT_EQ(after["k1"].last_used_at.size(), 24u) << after["k1"].last_used_at;  // ISO ms UTC
  EXPECT_EQ(after["k1"].run_id, "r1");  // the writer stays
  EXPECT_EQ(after["k2"].last_used_run, "");
  EXPECT_EQ(after.size(), 2u);  // touch never creates entries

  ASSERT_TRUE(store->touch({"k1"}, "r3").ok());
  EXPECT_EQ(byKey(*store)["k1"].last_used_run, "r3");
  ASSERT_TRUE(store->touch({}, "r4").ok());
  EXPECT_EQ(byKey(*store)["k1"].last_used_run, "r3");
}

TEST_F(CacheUsageTest, TouchIsDurableAcrossReopen) {
  {
    auto store = open();
    ASSERT_TRUE(store->put("k1", "a", "r1", output_).ok());
    ASSERT_TRUE(store->touch({"k1"}, "r2").ok());
  }
  auto store = open();
  EXPECT_EQ(byKey(*store)["k1"].last_used_run, "r2");
}

TEST_F(CacheUsageTest, ACacheWrittenBeforeUsageTrackingGainsTheColumnsAndStillWorks) {
  std::filesystem::create_directories(dir_.path() / "cache");
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open((dir_.path() / "cache" / "cache.sqlite").c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw,
                         "CREATE TABLE cache_entries (key TEXT PRIMARY KEY, node_id TEXT NOT NULL, "
                         "run_id TEXT NOT NULL, created_at TEXT NOT NULL, output TEXT NOT NULL);"
                         "INSERT INTO cache_entries VALUES ('old', 'n', 'r0', "
                         "'2026-01-01T00:00:00.000Z', '{\"state_delta\":{\"v\":1}}');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);

  {
    auto store = open();
    auto got = store->get("old");
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ((*got)["state_delta"]["v"], 1);
    auto entries = byKey(*store);
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries["old"].run_id, "r0");
    EXPECT_EQ(entries["old"].last_used_run, "");
    ASSERT_TRUE(store->touch({"old"}, "r1").ok());
    ASSERT_TRUE(store->put("new", "n", "r1", output_).ok());
  }
  auto again = open();  // the second open finds the columns and adds nothing
  auto entries = byKey(*again);
  EXPECT_EQ(entries["old"].last_used_run, "r1");
  EXPECT_EQ(entries.size(), 2u);
}

TEST_F(CacheUsageTest, PruneKeepsEntriesWrittenOrLastReplayedByAKeptRun) {
  auto store = open();
  ASSERT_TRUE(store->put("written_by_kept", "a", "r3", output_).ok());
  ASSERT_TRUE(store->put("used_by_kept", "b", "r1", output_).ok());
  ASSERT_TRUE(store->put("used_by_pruned", "c", "r1", output_).ok());
  ASSERT_TRUE(store->put("never_used", "d", "r2", output_).ok());
  ASSERT_TRUE(store->touch({"used_by_kept"}, "r3").ok());
  ASSERT_TRUE(store->touch({"used_by_pruned"}, "r2").ok());
  const std::unordered_set<std::string> keep = {"r3", "r4"};
  const uint64_t one = output_.dump().size();

  auto dry = store->prune(keep, true);
  ASSERT_TRUE(dry.ok()) << dry.error().message;
  EXPECT_EQ(dry->entries, 2u);
  EXPECT_EQ(dry->output_bytes, 2 * one);
  EXPECT_EQ(store->list().size(), 4u);  // a dry run deletes nothing

  auto pruned = store->prune(keep, false);
  ASSERT_TRUE(pruned.ok()) << pruned.error().message;
  EXPECT_EQ(pruned->entries, 2u);
  EXPECT_EQ(pruned->output_bytes, 2 * one);
  auto left = byKey(*store);
  EXPECT_EQ(left.size(), 2u);
  EXPECT_EQ(left.count("written_by_kept"), 1u);
  EXPECT_EQ(left.count("used_by_kept"), 1u);
  EXPECT_TRUE(store->get("used_by_kept").has_value());
  EXPECT_FALSE(store->get("never_used").has_value());

  // Pruning again frees nothing; keeping no run empties the cache.
  EXPECT_EQ(store->prune(keep, false)->entries, 0u);
  EXPECT_EQ(store->prune({}, false)->entries, 2u);
  EXPECT_TRUE(store->list().empty());
}

TEST_F(CacheUsageTest, CompactGivesThePrunedSpaceBackToTheFilesystem) {
  auto store = open();
  const Json big = {{"state_delta", {{"text", std::string(16 * 1024, 'x')}}}};
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(store->put("k" + std::to_string(i), "n", i < 90 ? "old" : "new", big).ok());
  }
  ASSERT_TRUE(store->compact().ok());  // everything in the main file, the WAL emptied
  const uint64_t full = bytesOnDisk();
  EXPECT_GT(full, 100u * 16 * 1024);
  ASSERT_EQ(store->prune({"new"}, false)->entries, 90u);
  ASSERT_TRUE(store->compact().ok());
  const uint64_t compacted = bytesOnDisk();
  EXPECT_LT(compacted, full / 4) << full << " -> " << compacted;
  EXPECT_EQ(std::filesystem::file_size(dir_.path() / "cache" / "cache.sqlite-wal"), 0u);
  EXPECT_EQ(store->list().size(), 10u);
  EXPECT_TRUE(store->get("k95").has_value());
}

}  // namespace
}  // namespace oe::cache

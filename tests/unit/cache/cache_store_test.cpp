// Cache keys, file digests and CacheStore against real files: upstream's cache.test (reference
// §11.3) extended to D4 (file content in the key) and the single-SQLite-file store.
#include "oe/cache/cache_store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "oe/common/file.hpp"
#include "support/temp_dir.hpp"

namespace oe::cache {
namespace {

void writeFile(const std::filesystem::path& p, const std::string& content) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << content;
}

struct KeyInputs {
  Json node = {{"id", "a"}, {"kind", "agent"}, {"prompt", "prompts/a.md"}};
  Json state = {{"topic", "cats"}};
  Json edges = {{"pre", {{"x", 1}}}};
  Json args = {{"n", 3}, {"$item", "q"}};
  std::vector<FileDigest> files = {{"prompts/a.md", sha256Hex("Say hi")}};
  Json kind = {{"plugin", "dev.oe.agent"}, {"version", "0.1.0"}, {"sha256", sha256Hex("agent.so")}};

  std::string key() const { return cacheKey(node, state, edges, args, files, kind); }
};

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(CacheKeyTest, IsDeterministic) {
  KeyInputs in;
  const std::string key = in.key();
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(KeyInputs{}.key(), key);
  // Object member order in the inputs does not matter (canonical JSON).
  KeyInputs reordered;
  reordered.args = Json::parse(R"({"$item":"q","n":3})");
  EXPECT_EQ(reordered.key(), key);
}

TEST(CacheKeyTest, IsTheHashOfTheDocumentedCanonicalJson) {
  KeyInputs in;
  Json files = Json::array();
  for (const FileDigest& f : in.files) {
    files.push_back({{"path", f.path}, {"sha256", f.sha256}});
  }
  const Json doc = {{"n", in.node}, {"s", in.state}, {"e", in.edges},    {"a", in.args},
                    {"f", files},   {"k", in.kind},  {"v", "oe-cache/2"}};
  EXPECT_EQ(in.key(), sha256Hex(doc.dump()));
  // The text form, as the run calls it, gives the same key.
  EXPECT_EQ(in.key(), cacheKeyOfText(in.node.dump(), in.state.dump(), in.edges.dump(),
                                     in.args.dump(), in.files, in.kind.dump()));
}

TEST(CacheKeyTest, ChangesWithEveryInput) {
  const std::string base = KeyInputs{}.key();
  std::set<std::string> keys = {base};
  KeyInputs args;
  args.args["n"] = 4;
  keys.insert(args.key());
  KeyInputs state;
  state.state["topic"] = "dogs";
  keys.insert(state.key());
  KeyInputs edges;
  edges.edges["pre"]["x"] = 2;
  keys.insert(edges.key());
  KeyInputs node;
  node.node["model"] = "other";
  keys.insert(node.key());
  KeyInputs file;  // D4: the prompt's content changed, its path did not
  file.files[0].sha256 = sha256Hex("Say hello");
  keys.insert(file.key());
  KeyInputs no_file;
  no_file.files.clear();
  keys.insert(no_file.key());
  // The plugin behind the kind: another version, or the same version rebuilt.
  KeyInputs upgraded;
  upgraded.kind["version"] = "0.2.0";
  keys.insert(upgraded.key());
  KeyInputs rebuilt;
  rebuilt.kind["sha256"] = sha256Hex("agent.so, rebuilt");
  keys.insert(rebuilt.key());
  KeyInputs other_plugin;
  other_plugin.kind["plugin"] = "com.acme.agent";
  keys.insert(other_plugin.key());
  EXPECT_EQ(keys.size(), 10u);
}

TEST(CacheKeyTest, TellsTypesApart) {
  KeyInputs one;
  one.args = {{"n", 1}};
  KeyInputs one_str;
  one_str.args = {{"n", "1"}};
  KeyInputs missing;
  missing.args = Json::object();
  KeyInputs null_value;
  null_value.args = {{"n", nullptr}};
  const std::set<std::string> keys = {one.key(), one_str.key(), missing.key(), null_value.key()};
  EXPECT_EQ(keys.size(), 4u);
}

TEST(CacheKeyTest, FileOrderDoesNotMatter) {
  KeyInputs ab;
  ab.files = {{"a.md", sha256Hex("a")}, {"b.py", sha256Hex("b")}};
  KeyInputs ba;
  ba.files = {{"b.py", sha256Hex("b")}, {"a.md", sha256Hex("a")}};
  EXPECT_EQ(ab.key(), ba.key());
}

TEST(FileDigestTest, HashesFileContent) {
  test::TempDir dir;
  writeFile(dir / "p.md", "abc");
  auto d = fileDigest(dir / "p.md");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, sha256Hex("abc"));
  writeFile(dir / "p.md", "abd");
  EXPECT_EQ(*fileDigest(dir / "p.md"), sha256Hex("abd"));
}

TEST(FileDigestTest, HashesALargeFileInChunks) {
  test::TempDir dir;
  std::string big(200 * 1024 + 17, 'x');
  for (size_t i = 0; i < big.size(); i += 97) {
    big[i] = static_cast<char>('a' + i % 26);
  }
  writeFile(dir / "big.bin", big);
  EXPECT_EQ(*fileDigest(dir / "big.bin"), sha256Hex(big));
}

TEST(FileDigestTest, SkillFolderUsesSkillMd) {
  test::TempDir dir;
  writeFile(dir / "skill/SKILL.md", "---\nname: s\n---\nbody");
  writeFile(dir / "skill/notes.txt", "ignored");
  auto d = fileDigest(dir / "skill");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, sha256Hex("---\nname: s\n---\nbody"));
  writeFile(dir / "skill/notes.txt", "still ignored");
  EXPECT_EQ(*fileDigest(dir / "skill"), *d);
}

TEST(FileDigestTest, OtherFolderHashesItsFiles) {
  test::TempDir dir;
  writeFile(dir / "tool/a.py", "print(1)");
  writeFile(dir / "tool/b.py", "print(2)");
  auto first = fileDigest(dir / "tool");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->size(), 64u);
  EXPECT_EQ(*fileDigest(dir / "tool"), *first);
  writeFile(dir / "tool/b.py", "print(3)");
  auto changed = fileDigest(dir / "tool");
  EXPECT_NE(*changed, *first);
  writeFile(dir / "tool/c.py", "");
  auto with_c = fileDigest(dir / "tool");
  EXPECT_NE(*with_c, *changed);
  std::filesystem::rename(dir / "tool/c.py", dir / "tool/d.py");  // a rename counts too
  EXPECT_NE(*fileDigest(dir / "tool"), *with_c);
}

TEST(FileDigestTest, MissingFileIsAnErrorNamingIt) {
  test::TempDir dir;
  auto d = fileDigest(dir / "prompts/missing.md");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("prompts/missing.md"), std::string::npos);
}

class CacheStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<CacheStore> open() {
    auto store = CacheStore::open(cache_dir_);
    EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error().message);
    return store.ok() ? std::move(*store) : nullptr;
  }
  // The entries committed to cache.sqlite, read through a connection of its own.
  int committedEntries() const {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open((cache_dir_ / "cache.sqlite").c_str(), &db), SQLITE_OK);
    sqlite3_stmt* count = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM cache_entries", -1, &count, nullptr),
              SQLITE_OK);
    EXPECT_EQ(sqlite3_step(count), SQLITE_ROW);
    const int rows = sqlite3_column_int(count, 0);
    sqlite3_finalize(count);
    sqlite3_close(db);
    return rows;
  }

  test::TempDir dir_;
  std::filesystem::path cache_dir_ = dir_ / ".openexpertise/cache";
  Json output_ = {{"state_delta", {{"val", 42}}}, {"edge_output", "e"},
                  {"metrics", {{"tokens_in", 1}}}};
};

TEST_F(CacheStoreTest, GetOfAMissingKeyIsNullopt) {
  auto store = open();
  EXPECT_FALSE(store->get("nope").has_value());
}

TEST_F(CacheStoreTest, PutThenGetRoundTrips) {
  auto store = open();
  ASSERT_TRUE(store->put("k1", "node-a", "run-1", output_).ok());
  auto got = store->get("k1");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, output_);
  EXPECT_FALSE(store->get("k2").has_value());
}

TEST_F(CacheStoreTest, PutReplacesAnExistingEntry) {
  auto store = open();
  ASSERT_TRUE(store->put("k", "a", "r1", Json{{"state_delta", {{"v", 1}}}}).ok());
  ASSERT_TRUE(store->put("k", "a", "r2", Json{{"state_delta", {{"v", 2}}}}).ok());
  EXPECT_EQ((*store->get("k"))["state_delta"]["v"], 2);
  auto entries = store->list();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].run_id, "r2");
}

TEST_F(CacheStoreTest, PersistsAcrossReopen) {
  {
    auto store = open();
    ASSERT_TRUE(store->put("k1", "node-a", "run-1", output_).ok());
  }
  auto store = open();
  auto got = store->get("k1");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ((*got)["state_delta"]["val"], 42);
}

TEST_F(CacheStoreTest, DeletingTheFolderClearsIt) {
  {
    auto store = open();
    ASSERT_TRUE(store->put("k1", "node-a", "run-1", output_).ok());
  }
  std::filesystem::remove_all(cache_dir_);
  auto store = open();
  EXPECT_FALSE(store->get("k1").has_value());
  EXPECT_TRUE(store->list().empty());
}

// While a store is open its entries go to one journal next to cache.sqlite; closing folds them
// in. Never a file per entry.
TEST_F(CacheStoreTest, UsesOneSqliteFileNotAFilePerEntry) {
  auto names = [this] {
    std::set<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(cache_dir_)) {
      const std::string name = e.path().filename().string();
      out.insert(name.starts_with("journal-") && name.ends_with(".jsonl") ? "journal" : name);
    }
    return out;
  };
  auto store = open();
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(store->put("key" + std::to_string(i), "n", "r", output_).ok());
  }
  EXPECT_EQ(names(), (std::set<std::string>{"cache.sqlite", "cache.sqlite-shm",
                                            "cache.sqlite-wal", "journal"}));
  EXPECT_EQ(store->path(), cache_dir_ / "cache.sqlite");
  EXPECT_EQ(store->get("key7"), output_);  // read back before the fold
  store.reset();
  EXPECT_EQ(names().count("journal"), 0u);
  EXPECT_EQ(committedEntries(), 20);
}

// A long run does not hold its entries in memory: every kFoldEntries puts are committed and the
// journal starts again; a get() finds entries on either side of a commit.
TEST_F(CacheStoreTest, EveryFullBatchIsCommittedAndTheJournalEmptied) {
  auto store = open();
  const size_t n = CacheStore::kFoldEntries + 3;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(store->put("key" + std::to_string(i), "n", "r", output_).ok());
  }
  EXPECT_EQ(committedEntries(), static_cast<int>(CacheStore::kFoldEntries));
  size_t journal_lines = 0;
  for (const auto& e : std::filesystem::directory_iterator(cache_dir_)) {
    if (e.path().filename().string().starts_with("journal-")) {
      const std::string text = readFile(e.path()).value_or("");
      journal_lines += static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
    }
  }
  EXPECT_EQ(journal_lines, 3u);
  EXPECT_EQ(store->get("key0"), output_);
  EXPECT_EQ(store->get("key" + std::to_string(n - 1)), output_);
  ASSERT_TRUE(store->flush().ok());
  EXPECT_EQ(committedEntries(), static_cast<int>(n));
}

// A store killed before it closed leaves its journal: the next open() folds the complete lines
// (a torn last line is a node that never finished) and removes the journal.
TEST_F(CacheStoreTest, TheJournalOfAKilledStoreIsFoldedByTheNextOpen) {
  open().reset();  // creates the folder and cache.sqlite
  const auto journal = cache_dir_ / "journal-1-0123456789abcdef.jsonl";
  {
    std::ofstream out(journal, std::ios::binary);
    out << R"({"k":"a","n":"node-a","r":"run-1","t":"2026-11-22T10:00:00.000Z","o":{"v":1}})"
        << '\n'
        << R"({"k":"b","n":"node-b","r":"run-1","t":"2026-11-22T10:00:01.000Z","o":[1,"x"]})"
        << '\n'
        << R"({"k":"c","n":"node-c","r":"run-1","t":"2026-11-22T10:00:02.000Z","o":{"v)";
  }
  auto store = open();
  EXPECT_FALSE(std::filesystem::exists(journal));
  EXPECT_EQ(store->get("a"), (Json{{"v", 1}}));
  EXPECT_EQ(store->get("b"), (Json{1, "x"}));
  EXPECT_FALSE(store->get("c").has_value());
  const auto entries = store->list();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].node_id, "node-a");
  EXPECT_EQ(entries[1].created_at, "2026-11-22T10:00:01.000Z");
}

// Another store's journal while that store is open (a run going on in another process) is
// left alone, and listed.
TEST_F(CacheStoreTest, ALiveJournalIsListedButNotFolded) {
  auto running = open();
  ASSERT_TRUE(running->put("live", "node-l", "run-live", output_).ok());
  auto other = open();
  const auto entries = other->list();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].key, "live");
  EXPECT_EQ(entries[0].run_id, "run-live");
  EXPECT_EQ(entries[0].size_bytes, output_.dump().size());
  running.reset();  // folds its own
  EXPECT_EQ(other->get("live"), output_);
  EXPECT_EQ(other->list().size(), 1u);
}

TEST_F(CacheStoreTest, ListShowsEntryMetadata) {
  auto store = open();
  ASSERT_TRUE(store->put("k1", "node-a", "run-1", output_).ok());
  ASSERT_TRUE(store->put("k2", "node-b", "run-1", Json::object()).ok());
  auto entries = store->list();
  ASSERT_EQ(entries.size(), 2u);
  std::map<std::string, CacheEntry> by_key;
  for (const CacheEntry& e : entries) {
    by_key[e.key] = e;
  }
  EXPECT_EQ(by_key["k1"].node_id, "node-a");
  EXPECT_EQ(by_key["k1"].run_id, "run-1");
  EXPECT_EQ(by_key["k1"].size_bytes, output_.dump().size());
  EXPECT_EQ(by_key["k2"].size_bytes, 2u);
  EXPECT_EQ(by_key["k1"].created_at.size(), 24u);  // 2026-05-26T10:00:00.123Z
  EXPECT_EQ(by_key["k1"].created_at.back(), 'Z');
}

TEST_F(CacheStoreTest, ACorruptEntryIsAMiss) {
  {
    auto store = open();
    ASSERT_TRUE(store->put("k1", "node-a", "run-1", output_).ok());
  }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((cache_dir_ / "cache.sqlite").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "UPDATE cache_entries SET output = '{\"state_delta\":'", nullptr,
                           nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = open();
  EXPECT_FALSE(store->get("k1").has_value());
  ASSERT_TRUE(store->put("k1", "node-a", "run-2", output_).ok());  // and put repairs it
  EXPECT_EQ(*store->get("k1"), output_);
}

TEST_F(CacheStoreTest, InvalidUtf8OutputIsAnError) {
  auto store = open();
  auto r = store->put("k", "node-a", "r", Json{{"s", std::string("\xff")}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("node \"node-a\""), std::string::npos);
  EXPECT_FALSE(store->get("k").has_value());
}

TEST_F(CacheStoreTest, OpenFailsWithAClearMessage) {
  writeFile(cache_dir_, "a file where the cache folder should be");
  auto store = CacheStore::open(cache_dir_);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message.find("cannot open the cache in " + cache_dir_.string()),
            std::string::npos);
}

// Nested runs of a for_each open one child's cache at the same moment (the CI failure of
// NestedRunTest.AForEachRunsOneChildPerItem: "database is locked"). Every opener must wait its
// turn, however the first ones race to create the file, switch it to WAL and add the schema.
TEST(CacheStoreOpenTest, ManyOpenersOfOneNewCacheAllSucceed) {
  for (int round = 0; round < 40; ++round) {
    oe::test::TempDir dir;
    const auto cache_dir = dir.path() / "cache";
    constexpr int kOpeners = 8;
    std::vector<std::string> errors(kOpeners);
    std::vector<std::thread> threads;
    for (int i = 0; i < kOpeners; ++i) {
      threads.emplace_back([&, i] {
        auto store = CacheStore::open(cache_dir);
        if (!store) {
          errors[static_cast<size_t>(i)] = store.error().message;
          return;
        }
        auto r = (*store)->put("k" + std::to_string(i), "n", "r", Json{{"i", i}});
        if (!r) {
          errors[static_cast<size_t>(i)] = r.error().message;
        }
      });
    }
    for (auto& t : threads) {
      t.join();
    }
    for (int i = 0; i < kOpeners; ++i) {
      ASSERT_EQ(errors[static_cast<size_t>(i)], "") << "round " << round << ", opener " << i;
    }
  }
}

}  // namespace
}  // namespace oe::cache

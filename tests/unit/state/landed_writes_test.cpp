// Landed-write marks (issue 10, item 1): a resumed run knows which writes of its chain already
// landed, atomically with their rows, also across a kill.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "oe/state/state_store.hpp"
#include "support/temp_dir.hpp"

namespace oe::state {
namespace {

spec::StateSpec landedSchema() {
  spec::StateSpec s;
  for (const spec::FieldSpec& f : {
           spec::FieldSpec{"items", spec::FieldType::kArray, spec::MergeStrategy::kArrayAppend, {}},
           spec::FieldSpec{"id", spec::FieldType::kString, spec::MergeStrategy::kSetOnce, {}},
           spec::FieldSpec{"note", spec::FieldType::kString, spec::MergeStrategy::kLastWins, {}},
       }) {
    s.index.emplace(f.name, s.fields.size());
    s.fields.push_back(f);
  }
  return s;
}

int64_t landedCount(const std::filesystem::path& db, const char* sql) {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(h, sql, -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  int64_t n = -1;
  if (sqlite3_step(stmt) == SQLITE_ROW) {
    n = sqlite3_column_int64(stmt, 0);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(h);
  return n;
}

// The marks in the file, one per (chain, write_key), however stored: older versions' rows and
// the batches oe writes now.
constexpr const char* kMarks =
    "SELECT count(*) FROM (SELECT chain, write_key FROM oe_landed_writes UNION "
    "SELECT b.chain, j.value ->> 0 FROM oe_landed_batches b, json_each(b.marks) j)";

class LandedWritesTest : public ::testing::Test {
 protected:
  std::unique_ptr<StateStore> open() {
    auto store = StateStore::open(db_path_, landedSchema());
    EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error().message);
    return store.ok() ? std::move(*store) : nullptr;
  }

  test::TempDir dir_;
  std::filesystem::path db_path_ = dir_ / ".openexpertise/state.sqlite";
};

TEST_F(LandedWritesTest, AWriteWithAKeyLandsItsMarkInTheCurrentChain) {
  auto store = open();
  EXPECT_FALSE(store->landed("fan#0", "k0"));  // no chain yet
  ASSERT_TRUE(store->beginChain("run-a").ok());
  EXPECT_FALSE(store->landed("fan#0", "k0"));
  ASSERT_TRUE(store->write({{"items", Json::array({0})}},
                           WriteMeta{"run-a", "fan", "fan#0", "k0"})
                  .ok());
  EXPECT_TRUE(store->landed("fan#0", "k0"));
  EXPECT_TRUE(store->landed("fan#0", ""));     // input unknown: the key decides
  EXPECT_FALSE(store->landed("fan#0", "k1"));  // computed from other inputs: applied
  EXPECT_FALSE(store->landed("fan#1", "k0"));
  EXPECT_FALSE(store->landed("", ""));  // untracked writes are never skipped
}

TEST_F(LandedWritesTest, UntrackedWritesAndWritesWithoutAChainRecordNoMark) {
  auto store = open();
  ASSERT_TRUE(store->write({{"items", Json::array({0})}}, WriteMeta{"r", "n", "n", "k"}).ok());
  ASSERT_TRUE(store->beginChain("r").ok());
  EXPECT_FALSE(store->landed("n", "k"));
  ASSERT_TRUE(store->write({{"items", Json::array({1})}}, WriteMeta{"r", "n"}).ok());
  store.reset();
  EXPECT_EQ(landedCount(db_path_, kMarks), 0);
}

// A last_wins write is marked too: applied again on a resume, it would put back a value that a
// later write had replaced (before, only array_append and set_once writes were).
TEST_F(LandedWritesTest, EveryMergeStrategyRecordsAMark) {
  auto store = open();
  ASSERT_TRUE(store->beginChain("r").ok());
  ASSERT_TRUE(store->write({{"note", "a"}}, WriteMeta{"r", "n", "n", "k"}).ok());
  ASSERT_TRUE(store->write({{"note", "b"}, {"items", Json::array({1})}},
                           WriteMeta{"r", "m", "m", "k"})
                  .ok());
  ASSERT_TRUE(store->write({{"id", "x"}}, WriteMeta{"r", "s", "s", "k"}).ok());
  EXPECT_TRUE(store->landed("n", "k"));
  EXPECT_TRUE(store->landed("m", "k"));
  EXPECT_TRUE(store->landed("s", "k"));
  store.reset();
  EXPECT_EQ(landedCount(db_path_, kMarks), 3);
}

TEST_F(LandedWritesTest, MarksAreSeenByTheirChainOnlyAndSurviveAReopen) {
  {
    auto store = open();
    ASSERT_TRUE(store->beginChain("chain-1").ok());
    ASSERT_TRUE(
        store->write({{"items", Json::array({1})}}, WriteMeta{"chain-1", "a", "a", "ka"}).ok());
  }
  auto store = open();
  ASSERT_TRUE(store->beginChain("chain-2").ok());
  EXPECT_FALSE(store->landed("a", "ka"));  // a different chain does not see them
  ASSERT_TRUE(
      store->write({{"items", Json::array({2})}}, WriteMeta{"chain-2", "b", "b", "kb"}).ok());
  ASSERT_TRUE(store->beginChain("chain-1").ok());  // switching back: committed and reloaded
  EXPECT_TRUE(store->landed("a", "ka"));
  EXPECT_FALSE(store->landed("b", "kb"));
  ASSERT_TRUE(store->beginChain("chain-2").ok());
  EXPECT_TRUE(store->landed("b", "kb"));
}

TEST_F(LandedWritesTest, ALaterMarkWithTheSameKeyReplacesTheInputKey) {
  {
    auto store = open();
    ASSERT_TRUE(store->beginChain("c").ok());
    ASSERT_TRUE(store->write({{"items", Json::array({1})}}, WriteMeta{"r1", "a", "a", "k1"}).ok());
    ASSERT_TRUE(store->write({{"items", Json::array({2})}}, WriteMeta{"r1", "a", "a", "k2"}).ok());
    EXPECT_TRUE(store->landed("a", "k2"));
    EXPECT_FALSE(store->landed("a", "k1"));
  }
  auto store = open();
  ASSERT_TRUE(store->beginChain("c").ok());
  EXPECT_TRUE(store->landed("a", "k2"));
  EXPECT_FALSE(store->landed("a", "k1"));
  EXPECT_EQ(landedCount(db_path_, kMarks), 1);
}

// A set_once write of the same value again writes no field, but it did land: its mark is kept,
// so a later resume does not try it again.
TEST_F(LandedWritesTest, AWriteWhoseFieldsWereAllSkippedStillLandsItsMark) {
  {
    auto store = open();
    ASSERT_TRUE(store->beginChain("c").ok());
    ASSERT_TRUE(store->write({{"id", "x"}}, WriteMeta{"r1", "a", "a", "k"}).ok());
    auto written = store->write({{"id", "x"}}, WriteMeta{"r1", "b", "b", "kb"});
    ASSERT_TRUE(written.ok());
    EXPECT_TRUE(written->empty());
    EXPECT_TRUE(store->landed("b", "kb"));
    // An empty delta changes nothing if applied again: no mark (the engine does not even
    // call write() for one).
    ASSERT_TRUE(store->write(Json::object(), WriteMeta{"r1", "e", "e", "ke"}).ok());
  }
  auto store = open();
  ASSERT_TRUE(store->beginChain("c").ok());
  EXPECT_TRUE(store->landed("b", "kb"));
  EXPECT_FALSE(store->landed("e", "ke"));
  EXPECT_EQ(landedCount(db_path_, "SELECT count(*) FROM state_history"), 1);
}

// A store killed after its writes (no destructor, no flush: the rows and marks are only in the
// journal): the next open folds both; a write and its mark are one journal line.
TEST_F(LandedWritesTest, MarksSurviveAKillWithTheirRows) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto store = StateStore::open(db_path_, landedSchema());
    bool ok = store.ok() && (*store)->beginChain("run-1").ok();
    for (int i = 0; ok && i < 5; ++i) {
      const std::string key = "fan#" + std::to_string(i);
      const std::string input = "in" + std::to_string(i);
      ok = (*store)->write({{"items", Json::array({i})}}, WriteMeta{"run-1", "fan", key, input})
               .ok();
      if (ok && i == 2) {
        ok = (*store)->flush().ok();  // 0..2 committed, 3..4 only in the journal
      }
    }
    ::_exit(ok ? 0 : 1);  // as a SIGKILL would leave it
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  auto store = open();
  ASSERT_TRUE(store->beginChain("run-1").ok());
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(store->landed("fan#" + std::to_string(i), "in" + std::to_string(i))) << i;
  }
  EXPECT_FALSE(store->landed("fan#5", "in5"));
  EXPECT_EQ(*store->field("items"), Json::array({0, 1, 2, 3, 4}));
  store.reset();
  EXPECT_EQ(landedCount(db_path_, kMarks), 5);
  EXPECT_EQ(landedCount(db_path_, "SELECT count(*) FROM state_history"), 5);
}

// A torn last line (the kill fell inside the write(2)) loses the write and its mark together.
TEST_F(LandedWritesTest, ATornLineLosesTheWriteAndItsMarkTogether) {
  std::filesystem::create_directories(db_path_.parent_path());
  std::ofstream(db_path_.string() + "-oe-journal-1-00.jsonl")
      << R"({"n":"a","r":"r1","t":"2026-01-01T00:00:00.000Z","c":"r1","k":"a","i":"ka",)"
         R"("w":[["items",null,[1]]]})"
         "\n"
      << R"({"n":"b","r":"r1","t":"2026-01-01T00:00:00.001Z","c":"r1","k":"b","i":"kb",)"
         R"("w":[["items",[1],[1,)";
  auto store = open();
  ASSERT_TRUE(store->beginChain("r1").ok());
  EXPECT_TRUE(store->landed("a", "ka"));
  EXPECT_FALSE(store->landed("b", "kb"));
  EXPECT_EQ(*store->field("items"), Json::array({1}));
}

// Journal lines written before marks existed still fold (and record no mark).
TEST_F(LandedWritesTest, OldJournalLinesWithoutMarksStillFold) {
  std::filesystem::create_directories(db_path_.parent_path());
  std::ofstream(db_path_.string() + "-oe-journal-1-00.jsonl")
      << R"({"n":"a","r":"r1","t":"2026-01-01T00:00:00.000Z","w":[["items",null,[1]]]})"
         "\n";
  auto store = open();
  EXPECT_EQ(*store->field("items"), Json::array({1}));
  store.reset();
  EXPECT_EQ(landedCount(db_path_, kMarks), 0);
}

// A batch of marks is one row per commit (a row per mark cost a B-tree insert per write).
TEST_F(LandedWritesTest, ACommitStoresItsMarksInOneRow) {
  {
    auto store = open();
    ASSERT_TRUE(store->beginChain("c").ok());
    for (int i = 0; i < 10; ++i) {
      const std::string key = "n" + std::to_string(i);
      ASSERT_TRUE(store->write({{"note", key}}, WriteMeta{"r", key, key, "k"}).ok());
    }
  }
  EXPECT_EQ(landedCount(db_path_, "SELECT count(*) FROM oe_landed_batches"), 1);
  EXPECT_EQ(landedCount(db_path_, kMarks), 10);
}

// Files written by the oe before batches keep their marks in oe_landed_writes: still read, and
// still pruned by gc.
TEST_F(LandedWritesTest, MarksOlderVersionsWroteAreStillRead) {
  open().reset();  // creates the tables
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db_path_.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h,
                         "INSERT INTO oe_chains (id, chain_id) VALUES (7, 'old');"
                         "INSERT INTO oe_landed_writes VALUES (7, 'a', 'ka'), (7, 'b', 'kb');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(h);
  auto store = open();
  ASSERT_TRUE(store->beginChain("old").ok());
  EXPECT_TRUE(store->landed("a", "ka"));
  ASSERT_NE(store->landedInput("b"), nullptr);
  EXPECT_EQ(*store->landedInput("b"), "kb");
  // A newer mark of the same key wins over the old row.
  ASSERT_TRUE(store->write({{"note", "x"}}, WriteMeta{"r", "b", "b", "kb2"}).ok());
  store.reset();
  store = open();
  ASSERT_TRUE(store->beginChain("old").ok());
  EXPECT_EQ(*store->landedInput("b"), "kb2");
  store.reset();
  auto pruned = pruneHistory(db_path_, {}, false);
  ASSERT_TRUE(pruned.ok()) << pruned.error().message;
  EXPECT_EQ(pruned->marks, 3u);  // a and b in old rows, b in a batch
  EXPECT_EQ(landedCount(db_path_, kMarks), 0);
}

TEST_F(LandedWritesTest, GcDeletesTheMarksOfChainsWithNoKeptRun) {
  {
    auto store = open();
    ASSERT_TRUE(store->beginChain("c1").ok());
    ASSERT_TRUE(store->write({{"items", Json::array({1})}}, WriteMeta{"c1", "a", "a", "k"}).ok());
    ASSERT_TRUE(store->beginChain("c2").ok());
    ASSERT_TRUE(store->write({{"items", Json::array({2})}}, WriteMeta{"c2", "a", "a", "k"}).ok());
    // c2 resumed as r3, which landed a write of its own.
    ASSERT_TRUE(store->write({{"items", Json::array({3})}}, WriteMeta{"r3", "b", "b", "k"}).ok());
    ASSERT_TRUE(store->beginChain("c4").ok());
    ASSERT_TRUE(store->write({{"items", Json::array({4})}}, WriteMeta{"c4", "a", "a", "k"}).ok());
    ASSERT_TRUE(store->beginChain("c5").ok());
    ASSERT_TRUE(store->write({{"items", Json::array({5})}}, WriteMeta{"c5", "a", "a", "k"}).ok());
  }
  // Kept: r3 (so chain c2), and a resume of c4 that landed nothing (keep_chains names c4).
  auto dry = pruneHistory(db_path_, {"r3", "r6"}, true, {"c4"});
  ASSERT_TRUE(dry.ok()) << dry.error().message;
  EXPECT_EQ(dry->marks, 2u);  // c1 and c5
  EXPECT_EQ(landedCount(db_path_, kMarks), 5);
  auto pruned = pruneHistory(db_path_, {"r3", "r6"}, false, {"c4"});
  ASSERT_TRUE(pruned.ok()) << pruned.error().message;
  EXPECT_EQ(pruned->marks, 2u);
  EXPECT_EQ(landedCount(db_path_, "SELECT count(*) FROM oe_landed_batches b, json_each(b.marks) "
                                  "JOIN oe_chains ON chain = oe_chains.id WHERE chain_id IN "
                                  "('c2', 'c4')"),
            3);
  EXPECT_EQ(landedCount(db_path_, "SELECT count(*) FROM oe_chains"), 2);
  EXPECT_EQ(landedCount(db_path_, "SELECT count(*) FROM oe_chain_runs"), 3);  // c2, r3, c4
  EXPECT_EQ(landedCount(db_path_, kMarks), 3);
}

}  // namespace
}  // namespace oe::state

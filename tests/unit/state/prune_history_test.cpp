// pruneHistory (oe gc, docs/durability.md) against real SQLite files: which history rows go,
// that the snapshot and the newest row of each field stay, dry runs, and that the file shrinks.
#include <gtest/gtest.h>

#include "oe/state/state_store.hpp"
#include "support/temp_dir.hpp"

namespace oe::state {
namespace {

using spec::FieldSpec;
using spec::FieldType;
using spec::MergeStrategy;

spec::StateSpec schema() {
  spec::StateSpec s;
  for (const FieldSpec& f : {FieldSpec{"a", FieldType::kAny, MergeStrategy::kLastWins, {}},
                             FieldSpec{"b", FieldType::kAny, MergeStrategy::kLastWins, {}},
                             FieldSpec{"c", FieldType::kAny, MergeStrategy::kLastWins, {}}}) {
    s.index.emplace(f.name, s.fields.size());
    s.fields.push_back(f);
  }
  return s;
}

class PruneHistoryTest : public ::testing::Test {
 protected:
  std::unique_ptr<StateStore> open() {
    auto store = StateStore::open(db_, schema_);
    EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error().message);
    return store.ok() ? std::move(*store) : nullptr;
  }
  void write(StateStore& store, const Json& delta, std::string_view run) {
    auto r = store.write(delta, WriteMeta{run, "n"});
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  std::vector<std::string> runsOf(const std::vector<HistoryRow>& rows) {
    std::vector<std::string> out;
    for (const auto& row : rows) {
      out.push_back(row.run_id);
    }
    return out;
  }
  uint64_t bytesOnDisk() {
    uint64_t total = 0;
    for (const char* suffix : {"", "-wal"}) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(db_.string() + suffix, ec);
      total += ec ? 0 : size;
    }
    return total;
  }

  test::TempDir dir_;
  std::filesystem::path db_ = dir_ / ".openexpertise/state.sqlite";
  spec::StateSpec schema_ = schema();
};

TEST_F(PruneHistoryTest, DeletesRowsOfPrunedRunsButKeepsTheNewestRowOfEachField) {
  {
    auto store = open();
    write(*store, {{"a", 1}, {"b", 1}, {"c", 1}}, "r1");
    write(*store, {{"a", 2}, {"b", 2}}, "r2");
    write(*store, {{"a", 3}}, "r3");
  }
  auto dry = pruneHistory(db_, {"r3"}, true);
  ASSERT_TRUE(dry.ok()) << dry.error().message;
  // a: r1, r2 go (r3 is kept); b: r1 goes, r2 is b's newest; c: r1 is c's newest.
  EXPECT_EQ(dry->rows, 3u);
  EXPECT_EQ(dry->value_bytes, 1u + 2u + 1u);  // a:r1 (new "1"), a:r2 ("1" and "2"), b:r1
  EXPECT_EQ(open()->history("a").value().size(), 3u);  // nothing deleted by the dry run

  auto pruned = pruneHistory(db_, {"r3"}, false);
  ASSERT_TRUE(pruned.ok()) << pruned.error().message;
  EXPECT_EQ(pruned->rows, 3u);
  auto store = open();
  EXPECT_EQ(runsOf(store->history("a").value()), (std::vector<std::string>{"r3"}));
  EXPECT_EQ(runsOf(store->history("b").value()), (std::vector<std::string>{"r2"}));
  EXPECT_EQ(runsOf(store->history("c").value()), (std::vector<std::string>{"r1"}));
  EXPECT_EQ(store->snapshot(), (Json{{"a", 3}, {"b", 2}, {"c", 1}}));  // never touched
  // The newest row of each field still agrees with the snapshot.
  EXPECT_EQ(store->history("b").value().back().value_new, 2);
}

TEST_F(PruneHistoryTest, KeptRunsKeepEveryRow) {
  {
    auto store = open();
    for (int i = 0; i < 5; ++i) {
      write(*store, {{"a", i}}, "r" + std::to_string(i % 2));
    }
  }
  auto pruned = pruneHistory(db_, {"r0", "r1"}, false);
  ASSERT_TRUE(pruned.ok()) << pruned.error().message;
  EXPECT_EQ(pruned->rows, 0u);
  EXPECT_EQ(open()->history("a").value().size(), 5u);
  EXPECT_EQ(pruneHistory(db_, {"r0"}, false)->rows, 2u);  // r1's two rows; r0's stay
  EXPECT_EQ(runsOf(open()->history("a").value()), (std::vector<std::string>{"r0", "r0", "r0"}));
}

TEST_F(PruneHistoryTest, AMissingFileIsNotCreated) {
  auto pruned = pruneHistory(db_, {}, false);
  ASSERT_TRUE(pruned.ok()) << pruned.error().message;
  EXPECT_EQ(pruned->rows, 0u);
  EXPECT_FALSE(std::filesystem::exists(db_));
}

TEST_F(PruneHistoryTest, TheFileShrinksAndTheWalIsEmptied) {
  {
    auto store = open();
    for (int i = 0; i < 60; ++i) {
      write(*store, {{"a", std::string(8 * 1024, static_cast<char>('a' + i % 26))}},
            "old" + std::to_string(i));
    }
    write(*store, {{"b", "kept"}}, "new");
  }
  // Closing the last connection checkpointed the WAL: the rows are in the main file.
  const uint64_t before = bytesOnDisk();
  EXPECT_GT(before, 60u * 8 * 1024);
  auto pruned = pruneHistory(db_, {"new"}, false);
  ASSERT_TRUE(pruned.ok()) << pruned.error().message;
  EXPECT_EQ(pruned->rows, 59u);  // the newest row of `a` stays
  const uint64_t after = bytesOnDisk();
  EXPECT_LT(after, before / 4) << before << " -> " << after;
  auto store = open();
  EXPECT_EQ(store->history("a").value().size(), 1u);
  EXPECT_EQ(store->field("b")->get<std::string>(), "kept");
}

// D17: an appended field's history is explained by its last full row and the appends after
// it: gc keeps all of those, whatever run wrote them, and prunes the rows before.
TEST_F(PruneHistoryTest, KeepsTheRowsBackToTheLastFullValueOfAnAppendedField) {
  schema_.fields.push_back(FieldSpec{"log", FieldType::kArray, MergeStrategy::kArrayAppend, {}});
  schema_.index.emplace("log", schema_.fields.size() - 1);
  {
    auto store = open();
    write(*store, {{"log", Json::array({1})}}, "r1");  // full (first write)
    write(*store, {{"log", Json::array({2})}}, "r1");  // append
    write(*store, {{"log", Json::array({3})}}, "r2");  // append
    write(*store, {{"a", 1}}, "r1");
    write(*store, {{"a", 2}}, "r2");
  }
  auto pruned = pruneHistory(db_, {"r3"}, false);
  ASSERT_TRUE(pruned.ok()) << pruned.error().message;
  EXPECT_EQ(pruned->rows, 1u);  // a's first row only
  auto store = open();
  const auto log = store->history("log").value();
  ASSERT_EQ(log.size(), 3u);
  Json value = log[0].value_new;
  for (size_t i = 1; i < log.size(); ++i) {
    ASSERT_TRUE(log[i].append_from.has_value());
    EXPECT_EQ(*log[i].append_from, value.size());
    value.insert(value.end(), log[i].value_new.begin(), log[i].value_new.end());
  }
  EXPECT_EQ(value, *store->field("log"));  // the kept rows explain the current value
  EXPECT_EQ(runsOf(store->history("a").value()), std::vector<std::string>{"r2"});
}

}  // namespace
}  // namespace oe::state

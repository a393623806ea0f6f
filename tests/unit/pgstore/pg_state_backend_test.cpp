// StateStore over PgStateBackend against a real PostgreSQL server: the cases of the SQLite state
// tests that apply (merges, type errors leave nothing, set_once, D17 history, landed marks across
// a reopen), plus scopes and a server restart between writes.
#include "oe/pgstore/pg_state_backend.hpp"

#include <gtest/gtest.h>

#include "oe/state/state_store.hpp"
#include "support/pg_test_db.hpp"
#include "support/temp_dir.hpp"

namespace oe::pgstore {
namespace {

using spec::FieldSpec;
using spec::FieldType;
using spec::MergeStrategy;
using state::StateStore;
using state::WriteMeta;

spec::StateSpec schema() {
  spec::StateSpec s;
  for (const FieldSpec& f : std::initializer_list<FieldSpec>{
           {"greeting", FieldType::kString, MergeStrategy::kLastWins, {}},
           {"count", FieldType::kNumber, MergeStrategy::kLastWins, {}},
           {"items", FieldType::kArray, MergeStrategy::kArrayAppend, {}},
           {"id", FieldType::kString, MergeStrategy::kSetOnce, {}},
       }) {
    s.index.emplace(f.name, s.fields.size());
    s.fields.push_back(f);
  }
  return s;
}

class PgStateTest : public ::testing::Test {
 protected:
  std::unique_ptr<StateStore> open(const std::string& scope = "exp") {
    auto backend = PgStateBackend::open(db_.url(), scope, std::chrono::seconds(10));
    EXPECT_TRUE(backend) << (backend ? "" : backend.error().message);
    auto store = StateStore::open(std::move(backend).value(), schema());
    EXPECT_TRUE(store) << (store ? "" : store.error().message);
    return std::move(store).value();
  }
  // What is stored, read past the store (not what its mirror says).
  std::optional<std::string> stored(const std::string& field, const std::string& scope = "exp") {
    auto conn = pg::Connection::open(db_.url());
    EXPECT_TRUE(conn);
    auto rows = (*conn)->exec("SELECT value FROM oe_state_snapshot WHERE scope = $1 AND field = $2",
                              {scope, field});
    EXPECT_TRUE(rows) << (rows ? "" : rows.error().message);
    if (!rows || rows->empty()) {
      return std::nullopt;
    }
    return std::string(rows->text(0, 0));
  }
  int64_t historyRows() {
    auto conn = pg::Connection::open(db_.url());
    auto rows = (*conn)->exec("SELECT count(*) FROM oe_state_history");
    return rows->int64(0, 0);
  }

  test::PgTestDb db_;
};

TEST_F(PgStateTest, WritesAreStoredAndSeenByTheNextOpen) {
  {
    auto store = open();
    ASSERT_TRUE(store->write({{"greeting", "hi"}, {"count", 2}}, WriteMeta{"r1", "n1"}));
    EXPECT_EQ(*store->field("greeting"), "hi");
  }
  EXPECT_EQ(stored("greeting"), "\"hi\"");
  auto again = open();
  EXPECT_EQ(again->snapshot(), (Json{{"greeting", "hi"}, {"count", 2}}));
}

TEST_F(PgStateTest, ATypeErrorLeavesNothingInTheDatabaseOrTheMirror) {
  auto store = open();
  auto bad = store->write({{"greeting", "hi"}, {"count", "three"}}, WriteMeta{"r1", "n1"});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("count"), std::string::npos);
  EXPECT_EQ(store->field("greeting"), nullptr);
  EXPECT_EQ(stored("greeting"), std::nullopt);
  EXPECT_EQ(historyRows(), 0);
}

TEST_F(PgStateTest, SetOnceAcceptsTheSameValueAndRefusesAnother) {
  auto store = open();
  ASSERT_TRUE(store->write({{"id", "a"}}, WriteMeta{"r1", "n1"}));
  auto same = store->write({{"id", "a"}}, WriteMeta{"r1", "n2"});
  ASSERT_TRUE(same);
  EXPECT_TRUE(same->empty());  // D2: skipped
  auto other = store->write({{"id", "b"}}, WriteMeta{"r1", "n3"});
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("set_once"), std::string::npos);
  EXPECT_EQ(stored("id"), "\"a\"");
  EXPECT_EQ(historyRows(), 1);
}

TEST_F(PgStateTest, ArrayAppendConcatenatesAndItsHistoryHoldsTheAppendedItems) {  // D17
  {
    auto store = open();
    ASSERT_TRUE(store->write({{"items", Json::array({1})}}, WriteMeta{"r1", "a"}));
    ASSERT_TRUE(store->write({{"items", Json::array()}}, WriteMeta{"r1", "b"}));
    ASSERT_TRUE(store->write({{"items", Json::array({2, 3})}}, WriteMeta{"r1", "c"}));
    EXPECT_EQ(*store->field("items"), Json::array({1, 2, 3}));
    auto history = store->history("items");
    ASSERT_TRUE(history) << history.error().message;
    ASSERT_EQ(history->size(), 3u);
    EXPECT_FALSE((*history)[0].append_from);
    ASSERT_TRUE((*history)[2].append_from);
    EXPECT_EQ(*(*history)[2].append_from, 1u);
    EXPECT_EQ((*history)[2].value_new, Json::array({2, 3}));
    const auto whole = state::expandAppends(*history);
    EXPECT_EQ(whole[2].value_old, Json::array({1}));
    EXPECT_EQ(whole[2].value_new, Json::array({1, 2, 3}));
  }
  EXPECT_EQ(stored("items"), "[1,2,3]");
  auto again = open();
  EXPECT_EQ(*again->field("items"), Json::array({1, 2, 3}));
  ASSERT_TRUE(again->write({{"items", Json::array({4})}}, WriteMeta{"r2", "d"}));
  EXPECT_EQ(stored("items"), "[1,2,3,4]");
}

TEST_F(PgStateTest, HistoryForRunListsOneRunsRows) {
  auto store = open();
  ASSERT_TRUE(store->write({{"greeting", "a"}}, WriteMeta{"r1", "n1"}));
  ASSERT_TRUE(store->write({{"greeting", "b"}, {"count", 1}}, WriteMeta{"r2", "n2"}));
  auto rows = store->historyForRun("r2");
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].field, "count");  // a write's fields in sorted order
  EXPECT_EQ((*rows)[1].field, "greeting");
  EXPECT_EQ((*rows)[1].value_old, Json("a"));
  EXPECT_EQ((*rows)[1].node_id, "n2");
}

TEST_F(PgStateTest, LandedMarksAreSeenByTheirChainAfterAReopen) {
  {
    auto store = open();
    ASSERT_TRUE(store->beginChain("chain-1"));
    ASSERT_TRUE(
        store->write({{"items", Json::array({1})}}, WriteMeta{"r1", "n1", "n1", "input-a"}));
    // last_wins only: marked too (applied again, it could undo a later write).
    ASSERT_TRUE(store->write({{"greeting", "x"}}, WriteMeta{"r1", "n2", "n2", "input-b"}));
    EXPECT_TRUE(store->landed("n1", "input-a"));
  }
  auto again = open();
  EXPECT_FALSE(again->landed("n1", "input-a"));  // no chain yet
  ASSERT_TRUE(again->beginChain("chain-1"));
  EXPECT_TRUE(again->landed("n1", "input-a"));
  EXPECT_FALSE(again->landed("n1", "input-other"));
  EXPECT_TRUE(again->landed("n2", "input-b"));
  ASSERT_TRUE(again->beginChain("chain-2"));
  EXPECT_FALSE(again->landed("n1", "input-a"));
}

TEST_F(PgStateTest, ScopesAreSeparateStates) {
  auto a = open("one");
  auto b = open("two");
  ASSERT_TRUE(a->write({{"greeting", "from one"}}, WriteMeta{"r1", "n1"}));
  ASSERT_TRUE(b->write({{"greeting", "from two"}}, WriteMeta{"r2", "n1"}));
  EXPECT_EQ(open("one")->snapshot(), (Json{{"greeting", "from one"}}));
  EXPECT_EQ(open("two")->snapshot(), (Json{{"greeting", "from two"}}));
  auto conn = pg::Connection::open(db_.url());
  ASSERT_TRUE(resetState(**conn, "one"));
  EXPECT_EQ(open("one")->snapshot(), Json::object());
  EXPECT_EQ(open("two")->snapshot(), (Json{{"greeting", "from two"}}));
}

TEST_F(PgStateTest, AWriteSentTwiceLandsOnce) {
  // What a retry after a COMMIT whose answer was lost looks like to the database.
  auto backend = PgStateBackend::open(db_.url(), "exp", std::chrono::seconds(5));
  ASSERT_TRUE(backend);
  const std::vector<state::BackendRow> first = {{"items", std::nullopt, "[\"a\\\\\\\"b\"]", false}};
  const std::vector<state::BackendRow> rows = {
      {"items", std::string(R"({"$oe_append":{"from_length":1}})"), "[\"c\"]", true}};
  ASSERT_TRUE((*backend)->write({"r1:1", "n", "r1", "ts", "", "", "", first}));
  const state::BackendWrite again{"r1:2", "n", "r1", "ts", "chain", "k", "i", rows};
  ASSERT_TRUE((*backend)->write(again));
  ASSERT_TRUE((*backend)->write(again));
  EXPECT_EQ(stored("items"), "[\"a\\\\\\\"b\",\"c\"]");  // quotes and backslashes kept
  EXPECT_EQ(historyRows(), 2);
  auto marks = (*backend)->landedWrites("chain");
  ASSERT_TRUE(marks);
  EXPECT_EQ(marks->at("k"), "i");
}

TEST(PgStateRestartTest, AWriteAfterTheServerRestartedReconnectsAndLands) {
  test::TempDir tmp;
  auto cluster = test::PgCluster::privateIn(tmp.path() / "pg");
  test::PgTestDb db(*cluster);
  auto backend = PgStateBackend::open(db.url(), "exp", std::chrono::seconds(30));
  ASSERT_TRUE(backend) << backend.error().message;
  auto store = StateStore::open(std::move(backend).value(), schema());
  ASSERT_TRUE(store);
  ASSERT_TRUE((*store)->write({{"items", Json::array({1})}}, WriteMeta{"r1", "a"}));
  cluster->stopNow();
  cluster->start();
  auto after = (*store)->write({{"items", Json::array({2})}}, WriteMeta{"r1", "b"});
  ASSERT_TRUE(after) << after.error().message;
  auto backend2 = PgStateBackend::open(db.url(), "exp", std::chrono::seconds(10));
  ASSERT_TRUE(backend2);
  auto reopened = StateStore::open(std::move(backend2).value(), schema());
  ASSERT_TRUE(reopened);
  EXPECT_EQ(*(*reopened)->field("items"), Json::array({1, 2}));  // each append once
}

}  // namespace
}  // namespace oe::pgstore

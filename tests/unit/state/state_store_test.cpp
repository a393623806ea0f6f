// StateStore against real SQLite files: upstream's state.test (reference §5) plus D2, D10, D11,
// atomicity, the exact tables, and the mirror.
#include "oe/state/state_store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

#include "support/temp_dir.hpp"

namespace oe::state {
namespace {

using spec::FieldSpec;
using spec::FieldType;
using spec::MergeStrategy;

spec::StateSpec schemaOf(std::initializer_list<FieldSpec> fields) {
  spec::StateSpec s;
  for (const FieldSpec& f : fields) {
    s.index.emplace(f.name, s.fields.size());
    s.fields.push_back(f);
  }
  return s;
}

spec::StateSpec defaultSchema() {
  return schemaOf({
      {"greeting", FieldType::kString, MergeStrategy::kLastWins, {}},
      {"count", FieldType::kNumber, MergeStrategy::kLastWins, {}},
      {"items", FieldType::kArray, MergeStrategy::kArrayAppend, {}},
      {"id", FieldType::kString, MergeStrategy::kSetOnce, {}},
      {"cfg", FieldType::kObject, MergeStrategy::kLastWins, {}},
      {"flag", FieldType::kBoolean, MergeStrategy::kLastWins, {}},
      {"anything", FieldType::kAny, MergeStrategy::kLastWins, {}},
      {"nothing", FieldType::kNull, MergeStrategy::kLastWins, {}},
  });
}

WriteMeta meta(std::string_view run = "r1", std::string_view node = "n1") {
  return WriteMeta{run, node};
}

// Raw access to the file, to check what is really stored (not what the mirror says).
class RawDb {
 public:
  explicit RawDb(const std::filesystem::path& p) {
    EXPECT_EQ(sqlite3_open(p.c_str(), &db_), SQLITE_OK);
  }
  ~RawDb() { sqlite3_close(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  // Every row as "col|col|..." strings; NULL shows as <null>.
  std::vector<std::string> rows(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db_);
    std::vector<std::string> out;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      std::string row;
      for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
        if (i > 0) {
          row += '|';
        }
        const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
        row += t ? t : "<null>";
      }
      out.push_back(row);
    }
    sqlite3_finalize(stmt);
    return out;
  }
  void exec(const std::string& sql) {
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << err;
    sqlite3_free(err);
  }

 private:
  sqlite3* db_ = nullptr;
};

class StateStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<StateStore> open(const spec::StateSpec& schema) {
    auto store = StateStore::open(db_path_, schema);
    EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error().message);
    return store.ok() ? std::move(*store) : nullptr;
  }

  // Counts the group-commit journals beside the database; `remove` deletes them too.
  size_t removeJournals(bool remove) {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(db_path_.parent_path())) {
      if (e.path().filename().string().starts_with("state.sqlite-oe-journal-")) {
        ++n;
        if (remove) {
          std::filesystem::remove(e.path());
        }
      }
    }
    return n;
  }

  test::TempDir dir_;
  std::filesystem::path db_path_ = dir_ / ".openexpertise/state.sqlite";
};

TEST_F(StateStoreTest, UnsetFieldReadsAsNull) {
  auto store = open(defaultSchema());
  EXPECT_EQ(store->field("greeting"), nullptr);
  EXPECT_EQ(store->field("undeclared"), nullptr);
  EXPECT_EQ(store->snapshot(), Json::object());
}

TEST_F(StateStoreTest, WritesAndReadsAString) {
  auto store = open(defaultSchema());
  auto written = store->write({{"greeting", "hello"}}, meta());
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_EQ(*written, std::vector<std::string>{"greeting"});
  ASSERT_NE(store->field("greeting"), nullptr);
  EXPECT_EQ(*store->field("greeting"), "hello");
  EXPECT_EQ(store->snapshot(), (Json{{"greeting", "hello"}}));
}

TEST_F(StateStoreTest, CreatesParentFoldersAndUsesWal) {
  auto store = open(defaultSchema());
  ASSERT_TRUE(store->write({{"count", 1}}, meta()).ok());
  EXPECT_TRUE(std::filesystem::exists(db_path_));
  EXPECT_TRUE(std::filesystem::exists(db_path_.string() + "-wal"));
  RawDb raw(db_path_);
  EXPECT_EQ(raw.rows("PRAGMA journal_mode"), std::vector<std::string>{"wal"});
}

// Upstream's tables and indexes exactly, plus oe's own oe_journal_folds (group commit) and
// oe_chains, oe_chain_runs, oe_landed_batches and (read for older files) oe_landed_writes:
// the landed-write marks of run chains.
TEST_F(StateStoreTest, CreatesExactlyTheUpstreamTablesAndIndexes) {
  auto store = open(defaultSchema());
  RawDb raw(db_path_);
  EXPECT_EQ(raw.rows("SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE "
                     "'sqlite_%' ORDER BY name"),
            (std::vector<std::string>{"index|idx_history_field|state_history",
                                      "index|idx_history_run|state_history",
                                      "index|idx_landed_batches_chain|oe_landed_batches",
                                      "table|oe_chain_runs|oe_chain_runs",
                                      "table|oe_chains|oe_chains",
                                      "table|oe_journal_folds|oe_journal_folds",
                                      "table|oe_landed_batches|oe_landed_batches",
                                      "table|oe_landed_writes|oe_landed_writes",
                                      "table|state_history|state_history",
                                      "table|state_snapshot|state_snapshot"}));
  EXPECT_EQ(raw.rows("SELECT name, type, \"notnull\", pk FROM pragma_table_info('state_snapshot')"),
            (std::vector<std::string>{"field|TEXT|0|1", "value|TEXT|1|0", "updated_at|TEXT|1|0",
                                      "updated_by_node|TEXT|1|0", "updated_by_run|TEXT|1|0"}));
  EXPECT_EQ(raw.rows("SELECT name, type, \"notnull\", pk FROM pragma_table_info('state_history')"),
            (std::vector<std::string>{"id|INTEGER|0|1", "field|TEXT|1|0", "value_old|TEXT|0|0",
                                      "value_new|TEXT|1|0", "node_id|TEXT|1|0", "run_id|TEXT|1|0",
                                      "ts|TEXT|1|0"}));
  EXPECT_EQ(raw.rows("SELECT sql LIKE '%AUTOINCREMENT%' FROM sqlite_master WHERE "
                     "name = 'state_history'"),
            std::vector<std::string>{"1"});
  EXPECT_EQ(raw.rows("SELECT name FROM pragma_index_info('idx_history_field')"),
            std::vector<std::string>{"field"});
  EXPECT_EQ(raw.rows("SELECT name FROM pragma_index_info('idx_history_run')"),
            std::vector<std::string>{"run_id"});
}

TEST_F(StateStoreTest, UndeclaredWriteFails) {
  auto store = open(defaultSchema());
  auto r = store->write({{"nope", 1}}, meta());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "Node \"n1\" wrote to undeclared state field \"nope\". Declare it in state.schema or "
            "remove it from the node's output.");
}

TEST_F(StateStoreTest, TypeMismatchFailsAndNamesTheField) {
  auto store = open(defaultSchema());
  auto r = store->write({{"count", "seven"}}, meta("r1", "counter"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "Node \"counter\" wrote string to field \"count\", which is declared as type number "
            "in state.schema. Fix the node's output or update state.schema.");
  EXPECT_EQ(store->field("count"), nullptr);
}

TEST_F(StateStoreTest, TypeChecksFollowUpstream) {
  auto store = open(defaultSchema());
  EXPECT_TRUE(store->write({{"count", 3}}, meta()).ok());
  EXPECT_TRUE(store->write({{"count", 2.5}}, meta()).ok());
  EXPECT_TRUE(store->write({{"count", -4}}, meta()).ok());
  EXPECT_TRUE(store->write({{"cfg", {{"a", 1}}}}, meta()).ok());
  EXPECT_TRUE(store->write({{"flag", true}}, meta()).ok());
  EXPECT_TRUE(store->write({{"items", Json::array({1})}}, meta()).ok());
  // kAny ($ref-only or no type) and the null type are never checked.
  EXPECT_TRUE(store->write({{"anything", Json::array({1, "x"})}}, meta()).ok());
  EXPECT_TRUE(store->write({{"nothing", "not null at all"}}, meta()).ok());

  auto arr_as_obj = store->write({{"cfg", Json::array()}}, meta());
  ASSERT_FALSE(arr_as_obj.ok());
  EXPECT_NE(arr_as_obj.error().message.find("wrote array to field \"cfg\", which is declared "
                                            "as type object"),
            std::string::npos);
  auto obj_as_arr = store->write({{"items", Json::object()}}, meta());
  ASSERT_FALSE(obj_as_arr.ok());
  EXPECT_NE(obj_as_arr.error().message.find("wrote object to field \"items\", which is declared "
                                            "as type array"),
            std::string::npos);
  auto num_as_bool = store->write({{"flag", 1}}, meta());
  ASSERT_FALSE(num_as_bool.ok());
  EXPECT_NE(num_as_bool.error().message.find("wrote number to field \"flag\", which is declared "
                                             "as type boolean"),
            std::string::npos);
  auto bool_as_str = store->write({{"greeting", false}}, meta());
  ASSERT_FALSE(bool_as_str.ok());
  EXPECT_NE(bool_as_str.error().message.find("wrote boolean to field \"greeting\""),
            std::string::npos);
}

TEST_F(StateStoreTest, NullIsStoredAsJsonNullWithoutATypeCheck) {  // D10
  auto store = open(defaultSchema());
  auto r = store->write({{"count", nullptr}}, meta());
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_NE(store->field("count"), nullptr);
  EXPECT_TRUE(store->field("count")->is_null());
  EXPECT_EQ(store->snapshot(), (Json{{"count", nullptr}}));
  ASSERT_TRUE(store->flush().ok());  // committed, not only journaled
  RawDb raw(db_path_);
  EXPECT_EQ(raw.rows("SELECT value FROM state_snapshot WHERE field = 'count'"),
            std::vector<std::string>{"null"});
}

TEST_F(StateStoreTest, ArrayAppendConcatenates) {
  auto store = open(defaultSchema());
  ASSERT_TRUE(store->write({{"items", Json::array({1})}}, meta()).ok());
  ASSERT_TRUE(store->write({{"items", Json::array({2, 3})}}, meta()).ok());
  EXPECT_EQ(*store->field("items"), Json::array({1, 2, 3}));
  ASSERT_TRUE(store->write({{"items", Json::array()}}, meta()).ok());
  ASSERT_TRUE(store->write({{"items", Json::array({Json{{"k", "v,]"}}})}}, meta()).ok());
  const Json expected = Json::array({1, 2, 3, Json{{"k", "v,]"}}});
  EXPECT_EQ(*store->field("items"), expected);
  ASSERT_TRUE(store->flush().ok());  // committed, not only journaled
  RawDb raw(db_path_);
  EXPECT_EQ(raw.rows("SELECT value FROM state_snapshot WHERE field = 'items'"),
            std::vector<std::string>{expected.dump()});
  // The stored text and the mirror agree after a reopen too.
  store.reset();
  store = open(defaultSchema());
  EXPECT_EQ(*store->field("items"), expected);
}

TEST_F(StateStoreTest, ArrayAppendOntoAnEmptyOrNonArrayValue) {
  auto schema = schemaOf({{"log", FieldType::kAny, MergeStrategy::kArrayAppend, {}}});
  auto store = open(schema);
  ASSERT_TRUE(store->write({{"log", Json::array()}}, meta()).ok());
  ASSERT_TRUE(store->write({{"log", Json::array({"a"})}}, meta()).ok());
  EXPECT_EQ(*store->field("log"), Json::array({"a"}));
  // An existing value that is not an array counts as [] (upstream).
  ASSERT_TRUE(store->flush().ok());  // committed, not only journaled
  RawDb raw(db_path_);
  raw.exec("UPDATE state_snapshot SET value = '\"scalar\"' WHERE field = 'log'");
  store.reset();
  store = open(schema);
  ASSERT_TRUE(store->write({{"log", Json::array({"b"})}}, meta()).ok());
  EXPECT_EQ(*store->field("log"), Json::array({"b"}));
}

TEST_F(StateStoreTest, ArrayAppendRejectsANonArray) {
  auto schema = schemaOf({{"log", FieldType::kAny, MergeStrategy::kArrayAppend, {}}});
  auto store = open(schema);
  auto r = store->write({{"log", "x"}}, meta());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "Field \"log\" uses array_append but write is not an array");
  auto null_write = store->write({{"log", nullptr}}, meta());
  ASSERT_FALSE(null_write.ok());
  EXPECT_EQ(null_write.error().message,
            "Field \"log\" uses array_append but write is not an array");
}

TEST_F(StateStoreTest, SetOnceSameValueAgainIsANoOp) {  // D2
  auto store = open(defaultSchema());
  auto first = store->write({{"id", "abc"}}, meta("r1"));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, std::vector<std::string>{"id"});
  auto again = store->write({{"id", "abc"}, {"greeting", "hi"}}, meta("r2"));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(*again, std::vector<std::string>{"greeting"});
  EXPECT_EQ(store->history("id").value().size(), 1u);
  EXPECT_EQ(store->historyForRun("r2").value().size(), 1u);
}

TEST_F(StateStoreTest, SetOnceDifferentValueFailsNamingBothValues) {
  auto store = open(defaultSchema());
  ASSERT_TRUE(store->write({{"id", "abc"}}, meta()).ok());
  auto r = store->write({{"id", "xyz"}}, meta("r2", "late"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "Field \"id\" is set_once and already has value \"abc\"; node \"late\" tried to write "
            "\"xyz\". Reset the state (oe reset-state --yes) or make the field last_wins.");
  EXPECT_NE(r.error().message.find("set_once"), std::string::npos);  // upstream's /set_once/
  EXPECT_EQ(*store->field("id"), "abc");
}

TEST_F(StateStoreTest, SetOnceMessageTruncatesLongValues) {
  auto schema = schemaOf({{"doc", FieldType::kAny, MergeStrategy::kSetOnce, {}}});
  auto store = open(schema);
  ASSERT_TRUE(store->write({{"doc", std::string(5000, 'a')}}, meta()).ok());
  auto r = store->write({{"doc", std::string(5000, 'b')}}, meta());
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.error().message.size(), 600u);
  EXPECT_NE(r.error().message.find("aaa..."), std::string::npos);
  EXPECT_NE(r.error().message.find("bbb..."), std::string::npos);
}

TEST_F(StateStoreTest, SetOnceOverANullValueWrites) {
  auto store = open(defaultSchema());
  ASSERT_TRUE(store->write({{"id", nullptr}}, meta()).ok());
  auto r = store->write({{"id", "now"}}, meta());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*store->field("id"), "now");
}

TEST_F(StateStoreTest, HistoryRecordsOldAndNewValues) {
  auto store = open(defaultSchema());
  ASSERT_TRUE(store->write({{"greeting", "hello"}}, meta("r1", "greet")).ok());
  auto rows = store->history("greeting").value();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].run_id, "r1");
  EXPECT_EQ(rows[0].node_id, "greet");
  EXPECT_EQ(rows[0].field, "greeting");
  EXPECT_EQ(rows[0].value_new, "hello");
  EXPECT_FALSE(rows[0].value_old.has_value());
  EXPECT_TRUE(std::regex_match(rows[0].ts,
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << rows[0].ts;

  ASSERT_TRUE(store->write({{"greeting", "bye"}}, meta("r2", "greet")).ok());
  rows = store->history("greeting").value();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_LT(rows[0].id, rows[1].id);
  ASSERT_TRUE(rows[1].value_old.has_value());
  EXPECT_EQ(*rows[1].value_old, "hello");
  EXPECT_EQ(rows[1].value_new, "bye");
  RawDb raw(db_path_);
  EXPECT_EQ(raw.rows("SELECT value_old IS NULL FROM state_history ORDER BY id"),
            (std::vector<std::string>{"1", "0"}));
}

// D17: the first write of an array_append field keeps upstream's shape (old NULL, new the
// whole value); an append onto an array records what was appended and where.
TEST_F(StateStoreTest, HistoryRecordsWhatAnAppendAppended) {
  auto store = open(defaultSchema());
  ASSERT_TRUE(store->write({{"items", Json::array({1})}}, meta()).ok());
  ASSERT_TRUE(store->write({{"items", Json::array({2, 3})}}, meta()).ok());
  ASSERT_TRUE(store->write({{"items", Json::array()}}, meta()).ok());
  auto rows = store->history("items").value();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_FALSE(rows[0].value_old.has_value());
  EXPECT_EQ(rows[0].value_new, Json::array({1}));
  EXPECT_FALSE(rows[0].append_from.has_value());
  EXPECT_EQ(rows[1].value_new, Json::array({2, 3}));
  EXPECT_EQ(*rows[1].value_old, (Json{{"$oe_append", {{"from_length", 1}}}}));
  EXPECT_EQ(rows[1].append_from, std::optional<size_t>(1));
  EXPECT_EQ(rows[2].value_new, Json::array());
  EXPECT_EQ(rows[2].append_from, std::optional<size_t>(3));
  RawDb raw(db_path_);
  EXPECT_EQ(raw.rows("SELECT COALESCE(value_old, '-'), value_new FROM state_history ORDER BY id"),
            (std::vector<std::string>{"-|[1]", "{\"$oe_append\":{\"from_length\":1}}|[2,3]",
                                      "{\"$oe_append\":{\"from_length\":3}}|[]"}));
  EXPECT_EQ(raw.rows("SELECT value FROM state_snapshot"), std::vector<std::string>{"[1,2,3]"});
}

// A reader that wants upstream's shape gets the whole lists back from the append rows.
TEST_F(StateStoreTest, ExpandAppendsGivesUpstreamsWholeOldAndNewValues) {
  auto store = open(defaultSchema());
  ASSERT_TRUE(store->write({{"items", Json::array({1})}}, meta()).ok());
  ASSERT_TRUE(store->write({{"items", Json::array({2, 3})}}, meta()).ok());
  ASSERT_TRUE(store->write({{"items", Json::array({4})}}, meta()).ok());
  auto rows = expandAppends(store->history("items").value());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_FALSE(rows[0].value_old.has_value());
  EXPECT_EQ(rows[0].value_new, Json::array({1}));
  EXPECT_EQ(*rows[1].value_old, Json::array({1}));
  EXPECT_EQ(rows[1].value_new, Json::array({1, 2, 3}));
  EXPECT_EQ(*rows[2].value_old, Json::array({1, 2, 3}));
  EXPECT_EQ(rows[2].value_new, Json::array({1, 2, 3, 4}));
  for (const auto& row : rows) {
    EXPECT_FALSE(row.append_from.has_value());
  }
  // Without the full row before them (a window that starts too late), appends stay as they are.
  rows = store->history("items").value();
  auto late = expandAppends({rows.begin() + 1, rows.end()});
  EXPECT_EQ(late[0].append_from, std::optional<size_t>(1));
  EXPECT_EQ(late[1].append_from, std::optional<size_t>(3));
}

// The history of N appends of one item grows linearly: each row holds its item, not the list.
TEST_F(StateStoreTest, AppendHistoryGrowsLinearly) {
  auto store = open(defaultSchema());
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(store->write({{"items", Json::array({i})}}, meta()).ok());
  }
  ASSERT_TRUE(store->flush().ok());
  RawDb raw(db_path_);
  // Old form: ~2000 * 2 * 5 KB of lists; now a few bytes per row.
  EXPECT_EQ(raw.rows("SELECT SUM(length(value_new)) < 20000 FROM state_history"),
            std::vector<std::string>{"1"});
  Json expected = Json::array();
  for (int i = 0; i < 2000; ++i) {
    expected.push_back(i);
  }
  EXPECT_EQ(raw.rows("SELECT value FROM state_snapshot"), std::vector<std::string>{expected.dump()});
}

// A killed store's appends: the fold rebuilds the snapshot from the committed value.
TEST_F(StateStoreTest, AKilledStoresAppendsAreFoldedOntoTheCommittedValue) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto store = StateStore::open(db_path_, defaultSchema());
    bool ok = store.ok() && (*store)->write({{"items", Json::array({1})}}, meta()).ok() &&
              (*store)->write({{"items", Json::array({2})}}, meta()).ok() &&
              (*store)->flush().ok() &&
              (*store)->write({{"items", Json::array({3, 4})}}, meta()).ok() &&
              (*store)->write({{"items", Json::array({5})}}, meta()).ok();
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto store = open(defaultSchema());
  EXPECT_EQ(*store->field("items"), Json::array({1, 2, 3, 4, 5}));
  EXPECT_EQ(RawDb(db_path_).rows("SELECT value FROM state_snapshot"),
            std::vector<std::string>{"[1,2,3,4,5]"});
}

TEST_F(StateStoreTest, OneWriteIsSortedAndSharesOneTimestamp) {
  auto store = open(defaultSchema());
  Json delta = {{"greeting", "g"}, {"count", 1}, {"flag", true}, {"cfg", Json::object()}};
  auto r = store->write(delta, meta("r9", "multi"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<std::string>{"cfg", "count", "flag", "greeting"}));
  auto rows = store->historyForRun("r9").value();
  ASSERT_EQ(rows.size(), 4u);
  for (const HistoryRow& row : rows) {
    EXPECT_EQ(row.ts, rows[0].ts);
    EXPECT_EQ(row.node_id, "multi");
  }
  EXPECT_EQ(rows[0].field, "cfg");
  EXPECT_EQ(rows[3].field, "greeting");
  RawDb raw(db_path_);
  EXPECT_EQ(raw.rows("SELECT count(DISTINCT updated_at), min(updated_by_node), "
                     "min(updated_by_run) FROM state_snapshot"),
            std::vector<std::string>{"1|multi|r9"});
}

TEST_F(StateStoreTest, AnyErrorAppliesNothing) {
  auto store = open(defaultSchema());
  ASSERT_TRUE(store->write({{"greeting", "before"}}, meta()).ok());
  // "count" and "greeting" sort before "zzz", so they would be written first without atomicity.
  auto r = store->write({{"count", 5}, {"greeting", "after"}, {"zzz", 1}}, meta("r2"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(*store->field("greeting"), "before");
  EXPECT_EQ(store->field("count"), nullptr);
  EXPECT_TRUE(store->historyForRun("r2").value().empty());
  store.reset();
  store = open(defaultSchema());
  EXPECT_EQ(store->snapshot(), (Json{{"greeting", "before"}}));
}

TEST_F(StateStoreTest, ASqliteFailureMidCommitRollsBackTheBatchAndKeepsItForLater) {
  auto store = open(defaultSchema());
  ASSERT_TRUE(store->write({{"greeting", "before"}}, meta()).ok());
  ASSERT_TRUE(store->flush().ok());
  {
    RawDb raw(db_path_);
    raw.exec("CREATE TRIGGER boom BEFORE INSERT ON state_history WHEN NEW.field = 'greeting' "
             "BEGIN SELECT RAISE(ABORT, 'injected failure'); END");
  }
  // The write is journaled (durable), so it succeeds; "count" is committed first (sorted), then
  // "greeting" fails inside SQLite and the whole commit rolls back.
  ASSERT_TRUE(store->write({{"count", 5}, {"greeting", "after"}}, meta("r2", "n2")).ok());
  EXPECT_EQ(*store->field("greeting"), "after");
  auto r = store->flush();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("injected failure"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("field \"greeting\""), std::string::npos);
  EXPECT_NE(r.error().message.find("node \"n2\""), std::string::npos);
  EXPECT_NE(r.error().message.find("-oe-journal-"), std::string::npos) << r.error().message;
  {
    RawDb raw(db_path_);
    EXPECT_EQ(raw.rows("SELECT field FROM state_snapshot"), std::vector<std::string>{"greeting"});
    EXPECT_EQ(raw.rows("SELECT count(*) FROM state_history"), std::vector<std::string>{"1"});
    raw.exec("DROP TRIGGER boom");
  }
  // Nothing was lost: the next commit has both rows.
  ASSERT_TRUE(store->flush().ok());
  RawDb raw(db_path_);
  EXPECT_EQ(raw.rows("SELECT field, value FROM state_snapshot ORDER BY field"),
            (std::vector<std::string>{"count|5", "greeting|\"after\""}));
  EXPECT_EQ(raw.rows("SELECT count(*) FROM state_history"), std::vector<std::string>{"3"});
}

// Issue 10, item 9: history() commits the batch first; when that fails it says so instead of
// answering without the batch's rows.
TEST_F(StateStoreTest, HistoryReportsAFailedCommitInsteadOfAShorterAnswer) {
  auto store = open(defaultSchema());
  {
    RawDb raw(db_path_);
    raw.exec("CREATE TRIGGER boom BEFORE INSERT ON state_history "
             "BEGIN SELECT RAISE(ABORT, 'injected failure'); END");
  }
  ASSERT_TRUE(store->write({{"count", 5}}, meta("r2", "n2")).ok());
  auto rows = store->history("count");
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.error().message.find("injected failure"), std::string::npos)
      << rows.error().message;
  RawDb(db_path_).exec("DROP TRIGGER boom");
  auto again = store->history("count");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->size(), 1u);
}

// Group commit: the journal and the batch (see state_store.hpp).

TEST_F(StateStoreTest, WritesReachSqliteOnFlushAndWithinTheFoldDelay) {
  auto store = open(defaultSchema());
  ASSERT_TRUE(store->write({{"count", 1}}, meta()).ok());
  ASSERT_TRUE(store->flush().ok());
  EXPECT_EQ(RawDb(db_path_).rows("SELECT value FROM state_snapshot WHERE field = 'count'"),
            std::vector<std::string>{"1"});
  // Without a flush, the timer commits the batch while this thread does something else. Polled
  // for up to 20 s (a loaded CI machine), not timed.
  ASSERT_TRUE(store->write({{"count", 2}}, meta()).ok());
  std::vector<std::string> seen;
  for (int i = 0; i < 2000; ++i) {
    seen = RawDb(db_path_).rows("SELECT value FROM state_snapshot WHERE field = 'count'");
    if (seen == std::vector<std::string>{"2"}) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(seen, std::vector<std::string>{"2"});
}

TEST_F(StateStoreTest, AFullBatchIsCommittedWithoutAFlush) {
  auto store = open(defaultSchema());
  for (size_t i = 0; i < StateStore::kFoldRows; ++i) {
    ASSERT_TRUE(store->write({{"count", i}}, meta()).ok());
  }
  // Committed by the write that filled the batch, whatever the timer did.
  EXPECT_EQ(RawDb(db_path_).rows("SELECT count(*) FROM state_history"),
            std::vector<std::string>{std::to_string(StateStore::kFoldRows)});
}

TEST_F(StateStoreTest, CloseCommitsEverythingAndRemovesTheJournal) {
  {
    auto store = open(defaultSchema());
    ASSERT_TRUE(store->write({{"greeting", "hi"}, {"count", 3}}, meta()).ok());
    EXPECT_EQ(removeJournals(false), 1u);
  }
  EXPECT_EQ(removeJournals(false), 0u);
  RawDb raw(db_path_);
  EXPECT_EQ(raw.rows("SELECT count(*) FROM state_history"), std::vector<std::string>{"2"});
  EXPECT_TRUE(raw.rows("SELECT * FROM oe_journal_folds").empty());
}

// A store killed with rows in its journal: the next open() commits each of them exactly once,
// also those after a part of the journal was already committed.
TEST_F(StateStoreTest, TheJournalOfAKilledStoreIsFoldedExactlyOnceByTheNextOpen) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto store = StateStore::open(db_path_, defaultSchema());
    bool ok = store.ok() && (*store)->write({{"count", 1}}, meta("r1", "a")).ok() &&
              (*store)->write({{"greeting", "x"}}, meta("r1", "b")).ok() && (*store)->flush().ok() &&
              (*store)->write({{"count", 2}, {"items", Json::array({7})}}, meta("r1", "c")).ok() &&
              (*store)->write({{"items", Json::array({8})}}, meta("r1", "d")).ok();
    ::_exit(ok ? 0 : 1);  // no destructor: as a SIGKILL would leave it
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // a and b are committed; c and d only in the journal (unless the timer got to them first).
  ASSERT_EQ(removeJournals(false), 1u);

  auto store = open(defaultSchema());
  EXPECT_EQ(store->snapshot(),
            (Json{{"count", 2}, {"greeting", "x"}, {"items", Json::array({7, 8})}}));
  EXPECT_EQ(removeJournals(false), 0u);  // folded and removed
  RawDb raw(db_path_);
  EXPECT_EQ(raw.rows("SELECT field, COALESCE(value_old, '-'), value_new, node_id FROM "
                     "state_history ORDER BY id"),
            (std::vector<std::string>{"count|-|1|a", "greeting|-|\"x\"|b", "count|1|2|c",
                                      "items|-|[7]|c",
                                      "items|{\"$oe_append\":{\"from_length\":1}}|[8]|d"}));
  EXPECT_TRUE(raw.rows("SELECT * FROM oe_journal_folds").empty());
  store.reset();
  open(defaultSchema());  // and again: nothing is folded twice
  EXPECT_EQ(RawDb(db_path_).rows("SELECT count(*) FROM state_history"),
            std::vector<std::string>{"5"});
}

TEST_F(StateStoreTest, ATornLastJournalLineIsSkipped) {
  std::filesystem::create_directories(db_path_.parent_path());
  std::ofstream(db_path_.string() + "-oe-journal-1-00.jsonl")
      << R"({"n":"a","r":"r1","t":"2026-01-01T00:00:00.000Z","w":[["count",null,1]]})" "\n"
      << R"({"n":"b","r":"r1","t":"2026-01-01T00:00:00.001Z","w":[["count",1,)";
  auto store = open(defaultSchema());
  EXPECT_EQ(store->snapshot(), (Json{{"count", 1}}));
  EXPECT_EQ(RawDb(db_path_).rows("SELECT node_id FROM state_history"),
            std::vector<std::string>{"a"});
}

TEST_F(StateStoreTest, ALiveStoresJournalIsNotFoldedByAnotherOpen) {
  auto writer = open(defaultSchema());
  ASSERT_TRUE(writer->write({{"count", 1}}, meta()).ok());
  // A second store on the file (as `oe state` during a run): the writer's journal is locked.
  open(defaultSchema());
  EXPECT_EQ(removeJournals(false), 1u);
  writer.reset();
  EXPECT_EQ(RawDb(db_path_).rows("SELECT count(*) FROM state_history"),
            std::vector<std::string>{"1"});
}

TEST_F(StateStoreTest, NonObjectDeltaFails) {
  auto store = open(defaultSchema());
  auto r = store->write(Json::array({1}), meta("r1", "bad"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("Node \"bad\" returned a state_delta that is array"),
            std::string::npos);
}

TEST_F(StateStoreTest, EmptyDeltaWritesNothing) {
  auto store = open(defaultSchema());
  auto r = store->write(Json::object(), meta());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  EXPECT_TRUE(store->historyForRun("r1").value().empty());
}

TEST_F(StateStoreTest, InvalidUtf8IsAnErrorNotACrash) {
  auto store = open(defaultSchema());
  auto r = store->write({{"greeting", std::string("bad \xff byte")}}, meta());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("field \"greeting\""), std::string::npos);
  EXPECT_EQ(store->field("greeting"), nullptr);
}

TEST_F(StateStoreTest, PersistsAcrossInstances) {
  {
    auto store = open(defaultSchema());
    ASSERT_TRUE(store->write({{"greeting", "kept"}, {"items", Json::array({1})}}, meta()).ok());
  }
  auto store = open(defaultSchema());
  EXPECT_EQ(*store->field("greeting"), "kept");
  EXPECT_EQ(store->snapshot(), (Json{{"greeting", "kept"}, {"items", Json::array({1})}}));
  ASSERT_TRUE(store->write({{"items", Json::array({2})}}, meta("r2")).ok());
  EXPECT_EQ(*store->field("items"), Json::array({1, 2}));
}

TEST_F(StateStoreTest, SnapshotAndFieldShowDeclaredFieldsOnly) {
  {
    auto store = open(defaultSchema());
    ASSERT_TRUE(store->write({{"greeting", "hi"}}, meta()).ok());
  }
  {
    RawDb raw(db_path_);
    raw.exec("INSERT INTO state_snapshot VALUES ('legacy', '1', 't', 'n', 'r')");
  }
  auto store = open(defaultSchema());
  EXPECT_EQ(store->snapshot(), (Json{{"greeting", "hi"}}));
  EXPECT_EQ(store->field("legacy"), nullptr);
}

TEST_F(StateStoreTest, CorruptStoredValueIsReportedAtOpen) {
  {
    auto store = open(defaultSchema());
    ASSERT_TRUE(store->write({{"greeting", "hi"}}, meta()).ok());
  }
  {
    RawDb raw(db_path_);
    raw.exec("UPDATE state_snapshot SET value = '{not json' WHERE field = 'greeting'");
  }
  auto store = StateStore::open(db_path_, defaultSchema());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message.find("\"greeting\""), std::string::npos);
  EXPECT_NE(store.error().message.find("oe reset-state --yes"), std::string::npos);
}

TEST_F(StateStoreTest, FieldPointerIsStableAcrossWrites) {
  auto store = open(defaultSchema());
  ASSERT_TRUE(store->write({{"count", 1}}, meta()).ok());
  const Json* p = store->field("count");
  for (int i = 2; i < 50; ++i) {
    ASSERT_TRUE(store->write({{"count", i}, {"greeting", std::to_string(i)}}, meta()).ok());
  }
  EXPECT_EQ(store->field("count"), p);
  EXPECT_EQ(*p, 49);
}

TEST_F(StateStoreTest, UsableThroughTheExpressionInterface) {
  auto store = open(defaultSchema());
  ASSERT_TRUE(store->write({{"count", 3}}, meta()).ok());
  const expr::StateReader& reader = *store;
  ASSERT_NE(reader.field("count"), nullptr);
  EXPECT_EQ(*reader.field("count"), 3);
}

TEST_F(StateStoreTest, OpenFailsWithAClearMessage) {
  // A folder where the database file should be.
  std::filesystem::create_directories(db_path_);
  auto store = StateStore::open(db_path_, defaultSchema());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message.find("cannot open the state database"), std::string::npos);
  EXPECT_NE(store.error().message.find(db_path_.string()), std::string::npos);
}

TEST_F(StateStoreTest, RemoveStateFilesDeletesDbWalAndShm) {  // D11
  {
    auto store = open(defaultSchema());
    ASSERT_TRUE(store->write({{"count", 1}}, meta()).ok());
  }
  // SQLite deletes -wal/-shm when the last connection closes cleanly; a killed run leaves them.
  std::ofstream(db_path_.string() + "-wal") << "x";
  std::ofstream(db_path_.string() + "-shm") << "x";
  std::ofstream(db_path_.string() + "-oe-journal-1-00.jsonl") << "{}\n";  // a killed run's
  ASSERT_TRUE(removeStateFiles(db_path_).ok());
  EXPECT_EQ(removeJournals(false), 0u);
  EXPECT_FALSE(std::filesystem::exists(db_path_));
  EXPECT_FALSE(std::filesystem::exists(db_path_.string() + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(db_path_.string() + "-shm"));
  // Absent files are fine.
  EXPECT_TRUE(removeStateFiles(db_path_).ok());
  // After a reset the state is empty again.
  auto store = open(defaultSchema());
  EXPECT_EQ(store->field("count"), nullptr);
}

TEST_F(StateStoreTest, ManyAppendsStayCorrect) {
  auto schema = schemaOf({{"log", FieldType::kArray, MergeStrategy::kArrayAppend, {}}});
  auto store = open(schema);
  Json expected = Json::array();
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(store->write({{"log", Json::array({i, std::to_string(i)})}}, meta()).ok());
    expected.push_back(i);
    expected.push_back(std::to_string(i));
  }
  EXPECT_EQ(*store->field("log"), expected);
  ASSERT_TRUE(store->flush().ok());  // committed, not only journaled
  RawDb raw(db_path_);
  EXPECT_EQ(raw.rows("SELECT value FROM state_snapshot"),
            std::vector<std::string>{expected.dump()});
}

}  // namespace
}  // namespace oe::state

// source.type sqlite on real database files: value types, parameters, the read-only guarantee
// (the file is byte-identical afterwards and a write fails), and the messages.
#include <sqlite3.h>

#include "dataset_test_fixture.hpp"

namespace oe::dataset::test {
namespace {

class SqliteSourceTest : public DatasetPluginTest {
 protected:
  // Creates <dir>/<rel> and runs `sql` in it.
  void makeDb(const std::string& rel, const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(abs(rel).c_str(), &db), SQLITE_OK);
    char* message = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
    const std::string error = message == nullptr ? "" : message;
    sqlite3_free(message);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << error;
  }

  Outcome query(const std::string& sql, const Json& extra = Json::object(),
                const std::string& uri = "app.db") {
    Json source{{"type", "sqlite"}, {"uri", uri}, {"query", sql}};
    source.update(extra);
    return run(node(source));
  }

  void SetUp() override {
    DatasetPluginTest::SetUp();
    makeDb("app.db",
           "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, score REAL, data BLOB, note TEXT);"
           "INSERT INTO t VALUES (1, 'Ada', 9.5, x'00ff10', NULL);"
           "INSERT INTO t VALUES (2, 'Bob \"the\" builder', 2.0, x'', 'x');"
           "INSERT INTO t VALUES (3, 'Cy', 0.1, x'616263', NULL);");
  }
};

TEST_F(SqliteSourceTest, RowsAreObjectsWithTypedValues) {
  const Outcome out = query("SELECT id, name, score, data, note FROM t ORDER BY id");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::parse(R"([
    {"id":1,"name":"Ada","score":9.5,"data":"AP8Q","note":null},
    {"id":2,"name":"Bob \"the\" builder","score":2,"data":"","note":"x"},
    {"id":3,"name":"Cy","score":0.1,"data":"YWJj","note":null}])"));
  EXPECT_EQ(out.rows()[0].begin().key(), "id");  // column order kept
}

TEST_F(SqliteSourceTest, ExpressionsAndLargeIntegersKeepTheirValue) {
  const Outcome out = query(
      "SELECT 9007199254740993 AS big, -1 AS neg, 1e300 * 1e300 AS inf, x'616263ff' AS b4, "
      "'é' AS accent, 1 AS a, 2 AS a");
  ASSERT_TRUE(out.ok()) << out.error;
  const Json& row = out.rows()[0];
  EXPECT_EQ(row["big"].get<int64_t>(), 9007199254740993LL);
  EXPECT_EQ(row["neg"], -1);
  EXPECT_TRUE(row["inf"].is_null());  // JSON has no Infinity
  EXPECT_EQ(row["b4"], "YWJj/w==");
  EXPECT_EQ(row["accent"], "é");
  EXPECT_EQ(row["a"], 2);  // a repeated column name keeps the last value
  EXPECT_EQ(row.size(), 6U);
}

TEST_F(SqliteSourceTest, EmptyResultIsAnEmptyArray) {
  const Outcome out = query("SELECT * FROM t WHERE id > 100");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::array());
}

TEST_F(SqliteSourceTest, ParamsAreBoundInOrder) {
  const Outcome out = query("SELECT id FROM t WHERE score > ? AND name <> ?2 ORDER BY id",
                            {{"params", Json::array({1, "Ada"})}});
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::parse(R"([{"id":2}])"));
  const Outcome typed = query("SELECT ? AS n, ? AS f, ? AS t, ? AS z, ? AS j",
                              {{"params", Json::parse(R"([5, 1.5, true, null, {"k":[1]}])")}});
  ASSERT_TRUE(typed.ok()) << typed.error;
  EXPECT_EQ(typed.rows()[0], Json::parse(R"({"n":5,"f":1.5,"t":1,"z":null,"j":"{\"k\":[1]}"})"));
}

TEST_F(SqliteSourceTest, ParamCountMismatchIsNamed) {
  EXPECT_EQ(query("SELECT * FROM t WHERE id = ?").error,
            "Dataset \"load\": source.query of app.db has 1 parameter(s) but source.params gives "
            "0 value(s)");
  EXPECT_EQ(query("SELECT 1", {{"params", "nope"}}).error,
            "Dataset \"load\": source.params must be an array (bound to ?1, ?2, ... in order)");
}

TEST_F(SqliteSourceTest, TheDatabaseIsOpenedReadOnly) {
  const std::string before = oe::test::readFile(dir_ / "app.db");
  const auto mtime = std::filesystem::last_write_time(dir_ / "app.db");
  ASSERT_TRUE(query("SELECT * FROM t").ok());
  const Outcome write = query("INSERT INTO t(name) VALUES ('Mallory')");
  EXPECT_EQ(write.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(write.error,
            "Dataset \"load\": the query on app.db failed: sqlite says \"attempt to "
            "write a readonly database\"");
  EXPECT_FALSE(query("DELETE FROM t").ok());
  EXPECT_FALSE(query("DROP TABLE t").ok());
  EXPECT_FALSE(query("PRAGMA user_version = 7").ok());
  EXPECT_EQ(oe::test::readFile(dir_ / "app.db"), before);
  EXPECT_EQ(std::filesystem::last_write_time(dir_ / "app.db"), mtime);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "app.db-journal"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "app.db-wal"));
  const Outcome count = query("SELECT count(*) AS n FROM t");
  EXPECT_EQ(count.rows(), Json::parse(R"([{"n":3}])"));
}

TEST_F(SqliteSourceTest, AWalDatabaseIsReadableAndLeftUnchanged) {
  // oe's own state.sqlite is in WAL mode: pointing a dataset at such a file must work too.
  makeDb("wal.db", "PRAGMA journal_mode=WAL; CREATE TABLE w(x); INSERT INTO w VALUES (1), (2);");
  const std::string before = oe::test::readFile(dir_ / "wal.db");
  const Outcome out = query("SELECT x FROM w ORDER BY x", Json::object(), "wal.db");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::parse(R"([{"x":1},{"x":2}])"));
  EXPECT_EQ(oe::test::readFile(dir_ / "wal.db"), before);
  EXPECT_FALSE(query("INSERT INTO w VALUES (3)", Json::object(), "wal.db").ok());
  EXPECT_EQ(oe::test::readFile(dir_ / "wal.db"), before);
}

TEST_F(SqliteSourceTest, AttachIsRefused) {
  makeDb("other.db", "CREATE TABLE o(x);");
  const Outcome out = query("ATTACH DATABASE '" + abs("other.db") + "' AS o");
  EXPECT_EQ(out.status, OE_INVALID_ARGUMENT);
  EXPECT_NE(out.error.find("too many attached databases"), std::string::npos) << out.error;
}

TEST_F(SqliteSourceTest, SqlErrorsNameTheFileAndQuoteSqlite) {
  EXPECT_EQ(query("SELECT * FROM nope").error,
            "Dataset \"load\": the query on app.db failed: sqlite says \"no such table: nope\"");
  EXPECT_EQ(query("SELEKT 1").error,
            "Dataset \"load\": the query on app.db failed: sqlite says \"near \"SELEKT\": "
            "syntax error\"");
}

TEST_F(SqliteSourceTest, OneStatementOnly) {
  EXPECT_TRUE(query("SELECT 1 AS x; -- trailing comment\n").ok());
  EXPECT_EQ(query("SELECT 1; SELECT 2").error,
            "Dataset \"load\": source.query of app.db holds more than one SQL statement; give one "
            "query");
  EXPECT_EQ(query("-- nothing").error,
            "Dataset \"load\": source.query of app.db holds no SQL statement");
}

TEST_F(SqliteSourceTest, MissingFileGivesTheUpstreamMessageAndCreatesNothing) {
  const Outcome out = query("SELECT 1", Json::object(), "data/missing.db");
  EXPECT_EQ(out.status, OE_NOT_FOUND);
  EXPECT_EQ(out.error, "Dataset sqlite file not found: " + abs("data/missing.db") +
                           " (declared as \"data/missing.db\")");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "data/missing.db"));
}

TEST_F(SqliteSourceTest, AFileThatIsNotADatabaseIsReported) {
  dir_.write("notes.db", "this is not a database, just text that is long enough to matter\n");
  // SELECT 1 would not touch the file; reading the schema does.
  const Outcome out = query("SELECT name FROM sqlite_master", Json::object(), "notes.db");
  EXPECT_EQ(out.status, OE_INVALID_ARGUMENT);
  EXPECT_NE(out.error.find("file is not a database"), std::string::npos) << out.error;
  EXPECT_NE(out.error.find("notes.db"), std::string::npos) << out.error;
}

TEST_F(SqliteSourceTest, ACancelledCallStopsALongQuery) {
  const Json spec = node({{"type", "sqlite"},
                          {"uri", "app.db"},
                          {"query",
                           "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) "
                           "SELECT count(*) FROM c"}});
  const CreateResult created = create(spec);
  ASSERT_EQ(created.status, OE_OK);
  auto ctx = host_.makeContext("load");
  ctx->cancelled = true;  // an endless query: only the cancellation ends it
  const CallResult r = invoke(created.node, spec, ctx.get());
  EXPECT_EQ(r.status, OE_CANCELLED);
  EXPECT_EQ(r.error, "cancelled");
}

}  // namespace
}  // namespace oe::dataset::test

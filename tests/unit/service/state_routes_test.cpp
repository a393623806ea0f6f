// A run's state over HTTP, on SQLite and on PostgreSQL (the same StateStore `oe state` reads):
// the state as each run left it, one field, its history (appends as whole values), the diff of
// two runs, and the problems of a bad field or a missing `against`.
#include "oe/service/state_routes.hpp"

#include <gtest/gtest.h>

#include "support/pg_test_db.hpp"
#include "unit/service/service_fixture.hpp"

namespace oe::service::test {
namespace {

class StateRoutesTest : public ServiceTest {
 protected:
  // Two runs of one experience, bob's then world's; the routes' answers checked the same way on
  // either store.
  void checkTwoRuns(const std::string& first, const std::string& second) {
    Json one = json("GET", "/api/runs/" + first + "/state");
    EXPECT_EQ(one["state"]["greeting"], "hello bob") << one.dump();
    EXPECT_EQ(one["state"]["log"], Json::array({"bob"}));
    EXPECT_EQ(one["written"].size(), 2U);
    Json two = json("GET", "/api/runs/" + second.substr(0, 10) + "/state");
    EXPECT_EQ(two["state"]["greeting"], "hello world");
    EXPECT_EQ(two["state"]["log"], Json::array({"bob", "world"}));

    Json field = json("GET", "/api/runs/" + first + "/state/greeting");
    EXPECT_EQ(field["value"], "hello bob");
    EXPECT_EQ(field["written_by_run"], true);
    const auto unknown = call("GET", "/api/runs/" + first + "/state/nope");
    EXPECT_EQ(unknown.status, 404);
    EXPECT_NE(unknown.body.find("state.schema"), std::string::npos);

    Json history = json("GET", "/api/runs/" + second + "/state/log/history");
    ASSERT_EQ(history["rows"].size(), 2U) << history.dump();
    EXPECT_EQ(history["rows"][0]["run_id"], first);
    EXPECT_EQ(history["rows"][1]["run_id"], second);
    EXPECT_EQ(history["rows"][1]["value_new"], Json::array({"bob", "world"}));
    EXPECT_EQ(history["truncated"], false);
    Json newest = json("GET", "/api/runs/" + second + "/state/log/history?limit=1");
    ASSERT_EQ(newest["rows"].size(), 1U);
    EXPECT_EQ(newest["rows"][0]["run_id"], second);
    EXPECT_EQ(newest["truncated"], true);
    // The first run's history stops at its end.
    EXPECT_EQ(json("GET", "/api/runs/" + first + "/state/log/history")["rows"].size(), 1U);

    Json diff = json("GET", "/api/runs/" + second + "/state-diff?against=" + first);
    ASSERT_EQ(diff["fields"].size(), 2U) << diff.dump();
    EXPECT_EQ(diff["fields"][0]["field"], "greeting");
    EXPECT_EQ(diff["fields"][0]["value"], "hello world");
    EXPECT_EQ(diff["fields"][0]["against_value"], "hello bob");
    EXPECT_TRUE(
        json("GET", "/api/runs/" + first + "/state-diff?against=" + first)["fields"].empty());
    EXPECT_EQ(call("GET", "/api/runs/" + first + "/state-diff").status, 400);
  }
};

TEST_F(StateRoutesTest, OnSqlite) {
  writeToolExperience(root() / "greeter", "greeter");
  const std::string first = run(root() / "greeter", R"({"who":"bob"})");
  const std::string second = run(root() / "greeter", R"({"who":"world"})");
  ASSERT_FALSE(first.empty() || second.empty());
  checkTwoRuns(first, second);
}

TEST_F(StateRoutesTest, ARunOfAnExperienceWithNoStateYetReadsAsUnset) {
  writeToolExperience(root() / "greeter", "greeter");
  writeText(root() / "greeter" / ".openexpertise" / "runs" / "r1.jsonl",
            R"({"type":"run.started","run_id":"r1","ts":"2026-01-01T00:00:00.000Z","args":{}})"
            "\n");
  Json state = json("GET", "/api/runs/r1/state");
  EXPECT_TRUE(state["state"].empty());
  EXPECT_EQ(json("GET", "/api/runs/r1/state/greeting")["set"], false);
}

TEST_F(StateRoutesTest, OnPostgresql) {
  oe::test::PgTestDb db;
  writeToolExperience(root() / "greeter", "greeter");
  const std::string first = run(root() / "greeter", R"({"who":"bob"})", {"--store", db.url()});
  const std::string second = run(root() / "greeter", R"({"who":"world"})", {"--store", db.url()});
  ASSERT_FALSE(first.empty() || second.empty());
  ASSERT_FALSE(std::filesystem::exists(root() / "greeter" / ".openexpertise" / "state.sqlite"));
  buildRouter(db.url());
  checkTwoRuns(first, second);
}

}  // namespace
}  // namespace oe::service::test

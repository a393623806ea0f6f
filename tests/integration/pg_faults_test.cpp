// `oe run --store URL --workers` and `oe worker` with the path to PostgreSQL broken on purpose
// (tests/support/tcp_proxy.hpp): every statement class of a run (state write, collected mark,
// enqueue, claim, complete, cancel, collect, event insert) cut mid-statement, and with its reply
// lost; a commit whose reply is lost while the store stays away; a second coordinator that
// takes the scope while the first is cut off. Each run must end as an uninterrupted one: the
// same final state, in the run's summary and in the store, nothing twice, and no hang.
#include <signal.h>

#include <set>

#include "oe/pg/connection.hpp"
#include "oe_fixture.hpp"
#include "support/pg_test_db.hpp"
#include "support/tcp_proxy.hpp"

namespace oe::test {
namespace {

using std::chrono::seconds;

// One fan-out item: its mark appended to the state; `block` waits for <dir>/go (at most 20 s);
// `gate` names a file created when the item starts, then waits for <dir>/go too (an env var
// decides, so that only the run that sets it is held).
constexpr std::string_view kFaultStep = R"(import fs from 'node:fs';
export default async function (args) {
  const mark = String(args.$item);
  const held = args.block || (process.env.OE_FAULT_GATE && args.gate === mark);
  if (process.env.OE_FAULT_GATE && args.gate === mark) fs.writeFileSync(process.env.OE_FAULT_GATE, '');
  const start = Date.now();
  while (held && !fs.existsSync(`${args.dir}/go`) && Date.now() - start < 20000) {
    await new Promise((r) => setTimeout(r, 20));
  }
  return { state_delta: { items: [mark] } };
}
)";

constexpr std::string_view kFaultSeed = R"(export default async function (args) {
  return { state_delta: { list: Array.from({ length: args.n }, (_, i) => `i${i}`) } };
}
)";

struct FaultCase {
  const char* name;
  const char* needle;  // in the statement's SQL
  int skip;            // matching statements let through first
  bool with_slow;      // the experience has a node that times out (its attempt is cancelled)
};

// Every statement class a run with workers sends; each is cut, and loses its reply.
constexpr FaultCase kFaults[] = {
    {"StateWrite", "INSERT INTO oe_state_writes", 2, false},
    {"CollectedMark", "SET collected_at = now() WHERE id = ANY", 1, false},
    {"Enqueue", "INSERT INTO oe_attempts (run_id", 1, false},
    {"Claim", "SET status = 'leased'", 1, false},
    {"Complete", "WITH done AS (UPDATE oe_attempts SET status", 1, false},
    {"Cancel", "WHERE id = $1 AND status IN ('ready', 'leased')", 0, true},
    {"Collect", "AND collected_at IS NULL ORDER BY id", 3, false},
    {"EventInsert", "INSERT INTO oe_events", 1, false},
};

class PgFaults : public OeTest {
 protected:
  void SetUp() override {
    writeTool("step.mjs", kFaultStep);
    writeTool("seed.mjs", kFaultSeed);
  }

  // seed -> fan (a for_each over `n` items, array_append in item order) -> tail; with `slow`, a
  // node beside them that times out (its attempt is cancelled). `extra`: more keys of fan.
  void writeFanOut(int n, bool slow = false, const std::string& fan_extra = "",
                   const std::string& gate = "") {
    const std::string dir = dir_.path().string();
    std::string yaml =
        "name: faults\nversion: 0.1.0\nruntime: { concurrency: 4, deterministic: true }\n"
        "state:\n  schema:\n    list: { type: array }\n"
        "    items: { type: array, merge: array_append }\n"
        "graph:\n  nodes:\n"
        "    - { id: seed, kind: tool, impl: ./tools/seed.mjs, writes: [list], args: { n: " +
        std::to_string(n) +
        " } }\n"
        "    - { id: fan, kind: tool, impl: ./tools/step.mjs, reads: [list], writes: [items], "
        "for_each: { source: $.list, concurrency: 4 }, args: { dir: \"" +
        dir + "\", gate: \"" + gate + "\" }" + fan_extra +
        " }\n"
        "    - { id: tail, kind: tool, impl: ./tools/step.mjs, writes: [items], args: { dir: \"" +
        dir + "\", $item: tail } }\n";
    if (slow) {
      yaml += "    - { id: slow, kind: tool, impl: ./tools/step.mjs, timeout_ms: 1500, args: { "
              "dir: \"" +
              dir + "\", block: true, $item: slow } }\n";
    }
    yaml += "  edges:\n    - { from: seed, to: fan }\n    - { from: fan, to: tail }\n";
    writeExperience(yaml);
  }

  // The uninterrupted run, on SQLite in this process's folder, then forgotten.
  nlohmann::json reference() {
    auto r = oe({"run", dir_.path().string(), "--json", "--fresh", "--no-cache"},
                sqliteReferenceEnv());
    auto parsed = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << r.out << r.err;
    std::filesystem::remove_all(dir_.path() / ".openexpertise");
    return parsed;
  }

  std::unique_ptr<BackgroundProcess> startWorker(const std::string& url) {
    return std::make_unique<BackgroundProcess>(
        std::vector<std::string>{OE_EXE, "worker", "--store", url, "--id", "w", "--concurrency",
                                 "4", "--lease-ms", "3000"},
        std::map<std::string, std::string>{{"OE_PLUGIN_PATH", ""}}, dir_.path(),
        dir_.path() / "worker");
  }

  std::unique_ptr<BackgroundProcess> startRun(const std::string& url, bool workers,
                                              std::map<std::string, std::string> env = {},
                                              const std::string& name = "coordinator") {
    std::vector<std::string> argv = {OE_EXE, "run", dir_.path().string(), "--json", "--store",
                                     url, "--fresh"};
    if (workers) {
      argv.emplace_back("--workers");
    }
    env.emplace("OE_PLUGIN_PATH", "");
    env.emplace("OE_STORE", "");
    env.emplace("OE_WORKERS", "");
    return std::make_unique<BackgroundProcess>(argv, env, dir_.path(), dir_.path() / name);
  }

  // What the store holds for the scope, field by field (parsed).
  static nlohmann::json storedState(const std::string& url) {
    auto conn = pg::Connection::open(url);
    EXPECT_TRUE(conn);
    auto rows = (*conn)->exec("SELECT field, value FROM oe_state_snapshot WHERE scope = 'faults'");
    EXPECT_TRUE(rows) << rows.error().message;
    nlohmann::json out = nlohmann::json::object();
    for (int i = 0; rows && i < rows->size(); ++i) {
      out[std::string(rows->text(i, 0))] = nlohmann::json::parse(rows->text(i, 1));
    }
    return out;
  }

  // The store's copy of the run's log is the local file, line for line (a line sent again
  // after a lost reply is not there twice; two equal lines, such as two identical warnings in
  // one millisecond, are both there once); `oe runs` counts each node call once.
  void expectEventsOnce(const std::string& url, const nlohmann::json& run,
                        const nlohmann::json& expected) {
    const std::string run_id = run["run_id"];
    auto conn = pg::Connection::open(url);
    ASSERT_TRUE(conn);
    auto lines =
        (*conn)->exec("SELECT seq, line FROM oe_events WHERE run_id = $1 ORDER BY seq", {run_id});
    ASSERT_TRUE(lines) << lines.error().message;
    const auto local = events(run_id);
    ASSERT_EQ(static_cast<size_t>(lines->size()), local.size()) << "a line was stored twice";
    for (int i = 0; i < lines->size(); ++i) {
      ASSERT_EQ(nlohmann::json::parse(lines->text(i, 1)), local[static_cast<size_t>(i)])
          << "line " << i << " (seq " << lines->text(i, 0) << ")";
    }
    auto runs = oe({"runs", "--json", "--store", url});
    ASSERT_EQ(runs.exit_code, 0) << runs.err;
    const auto list = nlohmann::json::parse(runs.out);
    ASSERT_FALSE(list.empty());
    EXPECT_EQ(list[0]["nodes"]["ran"], expected["nodes"]["ran"]) << runs.out;
    EXPECT_EQ(list[0]["nodes"]["failed"], expected["nodes"]["failed"]) << runs.out;
  }

  static int64_t openAttempts(const std::string& url) {
    auto conn = pg::Connection::open(url);
    EXPECT_TRUE(conn);
    auto rows =
        (*conn)->exec("SELECT count(*) FROM oe_attempts WHERE status IN ('ready', 'leased')");
    EXPECT_TRUE(rows);
    return rows ? rows->int64(0, 0) : -1;
  }

  // A run on the proxy with one worker on it too, with `fault` armed for `action`.
  void runWithFault(const FaultCase& fault, TcpProxy::Action action) {
    writeFanOut(6, fault.with_slow);
    const auto expected = reference();
    ASSERT_FALSE(expected.is_discarded());
    PgTestDb db;
    auto proxy = TcpProxy::toPostgres(db.cluster().dir());
    const std::string url = proxy->pgUrl(db.name());
    auto worker = startWorker(url);
    proxy->on(fault.needle, action, 1, fault.skip);
    auto run = startRun(url, /*workers=*/true);
    const auto code = run->waitFor(seconds(180));
    dir_.write("go", "");  // frees what still blocks (the slow node's cancelled attempt)
    ASSERT_TRUE(code) << "the run hung\n" << run->err() << worker->err();
    worker->signal(SIGTERM);
    const auto worker_code = worker->waitFor(seconds(120));
    EXPECT_EQ(worker_code, 0) << worker->err();
    EXPECT_EQ(proxy->counters().fired, 1) << "the fault never happened: the test proves nothing";
    const auto result = nlohmann::json::parse(run->out(), nullptr, false);
    ASSERT_FALSE(result.is_discarded()) << run->out() << run->err();
    EXPECT_EQ(result["status"], expected["status"]) << run->err();
    EXPECT_EQ(result["final_state"], expected["final_state"]) << run->err();
    EXPECT_EQ(storedState(db.url()), expected["final_state"]) << "the store disagrees";
    expectEventsOnce(db.url(), result, expected);
    EXPECT_EQ(openAttempts(db.url()), 0);
  }
};

class PgFaultClasses
    : public PgFaults,
      public ::testing::WithParamInterface<std::tuple<FaultCase, TcpProxy::Action>> {};

TEST_P(PgFaultClasses, EndsAsAnUninterruptedRun) {
  runWithFault(std::get<0>(GetParam()), std::get<1>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(
    EveryStatement, PgFaultClasses,
    ::testing::Combine(::testing::ValuesIn(kFaults),
                       ::testing::Values(TcpProxy::Action::kCut, TcpProxy::Action::kLoseReply)),
    [](const ::testing::TestParamInfo<PgFaultClasses::ParamType>& param) {
      return std::string(std::get<0>(param.param).name) +
             (std::get<1>(param.param) == TcpProxy::Action::kCut ? "Cut" : "ReplyLost");
    });

// A 200-item fan-out whose state write commits and loses its reply, then the store stays away
// longer than a first connection is tried (OE_STORE_RETRY_MS): the run waits for it, sends the
// write again once it is back, and that write finds it had landed. With on_error: retry, a
// write given up would have run the item again and appended it twice.
TEST_F(PgFaults, ACommitWhoseReplyIsLostWhileTheStoreStaysAwayLandsOnce) {
  writeFanOut(200, false, ", on_error: { policy: retry, attempts: 3, base_ms: 1 }");
  const auto expected = reference();
  ASSERT_EQ(expected["status"], "success");
  PgTestDb db;
  auto proxy = TcpProxy::toPostgres(db.cluster().dir());
  proxy->on("INSERT INTO oe_state_writes", TcpProxy::Action::kLoseReplyAndRefuse, 1, 50);
  auto run = startRun(proxy->pgUrl(db.name()), /*workers=*/false, {{"OE_STORE_RETRY_MS", "300"}});
  ASSERT_TRUE(proxy->waitFired(1)) << run->err();
  // Away for many reconnect attempts: longer than the first-connection window, by far.
  ASSERT_TRUE(proxy->waitUntil([](const TcpProxy::Counters& c) { return c.refused >= 10; }))
      << run->err();
  EXPECT_FALSE(run->waitFor(std::chrono::milliseconds(0))) << "the run gave up\n" << run->err();
  proxy->refuse(false);
  const auto code = run->waitFor(seconds(180));
  ASSERT_TRUE(code) << "the run hung\n" << run->err();
  EXPECT_EQ(*code, 0) << run->err();
  const auto result = nlohmann::json::parse(run->out(), nullptr, false);
  ASSERT_FALSE(result.is_discarded()) << run->out() << run->err();
  EXPECT_EQ(result["final_state"], expected["final_state"]);
  EXPECT_EQ(storedState(db.url()), expected["final_state"]) << "the store disagrees";
  expectEventsOnce(db.url(), result, expected);
}

// Coordinator A is cut off from the database (its lock's session ends with it); B takes the
// scope and runs the experience to its end; then A's network comes back. A must write nothing
// more (its scope's epoch moved), stop and say why; the store holds B's run, each item once.
TEST_F(PgFaults, ACoordinatorWhoseScopeAnotherTookStopsAndWritesNothingMore) {
  writeFanOut(200, false, "", "i40");
  const auto expected = reference();
  ASSERT_EQ(expected["status"], "success");
  PgTestDb db;
  auto proxy = TcpProxy::toPostgres(db.cluster().dir());
  const auto gate = dir_.path() / "gate";
  auto a = startRun(proxy->pgUrl(db.name()), /*workers=*/false,
                    {{"OE_FAULT_GATE", gate.string()}}, "a");
  ASSERT_TRUE(waitForFile(gate)) << a->err();  // A is mid-fan-out, held at item i40
  proxy->refuse(true);
  proxy->cutAll();
  // B, straight to the server: the scope's lock went with A's session. From an empty state
  // (--fresh), as A started: without it B would add its items to the ones A had stored.
  auto b = oe({"run", dir_.path().string(), "--json", "--fresh", "--store", db.url()},
              {{"OE_STORE", ""}, {"OE_WORKERS", ""}});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const auto b_result = nlohmann::json::parse(b.out);
  dir_.write("go", "");  // A's held item finishes; its write is refused
  proxy->refuse(false);
  const auto code = a->waitFor(seconds(120));
  ASSERT_TRUE(code) << "the first coordinator never stopped\n" << a->err();
  EXPECT_NE(*code, 0);
  const auto a_result = nlohmann::json::parse(a->out(), nullptr, false);
  ASSERT_FALSE(a_result.is_discarded()) << a->out() << a->err();
  EXPECT_EQ(a_result["status"], "failed");
  EXPECT_NE(a_result.value("reason", a_result.dump()).find("another coordinator"),
            std::string::npos)
      << a_result.dump() << a->err();
  EXPECT_EQ(b_result["final_state"], expected["final_state"]);
  const auto stored = storedState(db.url());
  EXPECT_EQ(stored, b_result["final_state"]) << "the first coordinator wrote after it lost";
  std::set<std::string> once;
  for (const auto& item : stored["items"]) {
    EXPECT_TRUE(once.insert(item.get<std::string>()).second) << item << " twice";
  }
}

// The coordinator's view and the store must never disagree, and a run must not report a state
// the store does not hold: here the store's `list` is changed behind the run's back (as a write
// applied twice would change `items`); the run ends failed, names the field and reports what
// the store holds.
TEST_F(PgFaults, ARunWhoseStoreDisagreesWithItsStateFailsAndReportsTheStore) {
  writeFanOut(3, false, "", "i1");
  PgTestDb db;
  const auto gate = dir_.path() / "gate";
  auto a = startRun(db.url(), /*workers=*/false, {{"OE_FAULT_GATE", gate.string()}}, "a");
  ASSERT_TRUE(waitForFile(gate)) << a->err();  // seed has written `list`; fan is held at i1
  {
    auto conn = pg::Connection::open(db.url());
    ASSERT_TRUE(conn);
    auto changed = (*conn)->exec(
        "UPDATE oe_state_snapshot SET value = '[\"elsewhere\"]' WHERE scope = 'faults' AND "
        "field = 'list'");
    ASSERT_TRUE(changed) << changed.error().message;
    ASSERT_EQ(changed->affected(), 1);
  }
  dir_.write("go", "");
  const auto code = a->waitFor(seconds(120));
  ASSERT_TRUE(code) << a->err();
  EXPECT_EQ(*code, 1) << a->err();
  const auto result = nlohmann::json::parse(a->out(), nullptr, false);
  ASSERT_FALSE(result.is_discarded()) << a->out() << a->err();
  EXPECT_EQ(result["status"], "failed");
  EXPECT_NE(result.value("reason", "").find("differs from the state this run computed (fields: "
                                            "list)"),
            std::string::npos)
      << result.dump();
  EXPECT_EQ(result["final_state"], storedState(db.url()));
  EXPECT_EQ(result["final_state"]["list"], nlohmann::json::array({"elsewhere"}));
}

// The same cut-off coordinator, told to stop (SIGTERM) while it waits for the database: it
// stops now, not when the database comes back.
TEST_F(PgFaults, ACoordinatorWaitingForTheDatabaseStopsAtOnceOnSigterm) {
  writeFanOut(20, false, "", "i5");
  PgTestDb db;
  auto proxy = TcpProxy::toPostgres(db.cluster().dir());
  const auto gate = dir_.path() / "gate";
  auto a = startRun(proxy->pgUrl(db.name()), /*workers=*/false,
                    {{"OE_FAULT_GATE", gate.string()}}, "a");
  ASSERT_TRUE(waitForFile(gate)) << a->err();
  proxy->refuse(true);
  proxy->cutAll();
  dir_.write("go", "");  // the held item's write now waits for the database
  const int64_t refused = proxy->counters().refused;
  ASSERT_TRUE(proxy->waitUntil(
      [refused](const TcpProxy::Counters& c) { return c.refused >= refused + 3; }));
  a->signal(SIGTERM);
  const auto code = a->waitFor(seconds(60));
  ASSERT_TRUE(code) << "SIGTERM was not heard while the run waited for the database\n"
                    << a->err();
  EXPECT_EQ(*code, 128 + SIGTERM) << a->err();
}

}  // namespace
}  // namespace oe::test

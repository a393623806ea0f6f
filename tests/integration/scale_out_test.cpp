// `oe run --store URL --workers` with real `oe worker` processes against a real PostgreSQL server
// (docs/scale-out.md): the same final state as a plain SQLite run with one and three workers,
// queues, a worker killed mid-node whose attempt runs again elsewhere, retries, timeout_ms and
// fail_run. Progress is observed through files the tool writes, never through sleeps.
#include <signal.h>

#include <set>

#include "oe/pg/connection.hpp"
#include "oe_fixture.hpp"
#include "support/pg_test_db.hpp"

namespace oe::test {
namespace {

// One fan-out item: records that it ran, then, as its args ask, blocks until <dir>/go exists
// (announcing <dir>/started-<item>), fails its first attempt, or sleeps.
constexpr std::string_view kStep = R"(import fs from 'node:fs';
export default async function (args) {
  const mark = String(args.$item);
  fs.appendFileSync(`${args.dir}/ran.txt`, mark + '\n');
  if (args.block === mark) {
    fs.writeFileSync(`${args.dir}/started-${mark}`, '');
    while (!fs.existsSync(`${args.dir}/go`)) await new Promise((r) => setTimeout(r, 10));
  }
  if (args.fail_once === mark) {
    const flag = `${args.dir}/failed-${mark}`;
    if (!fs.existsSync(flag)) {
      fs.writeFileSync(flag, '');
      throw new Error(`item ${mark} fails its first attempt`);
    }
  }
  if (args.fail === mark) throw new Error(`item ${mark} always fails`);
  if (args.sleep === mark) await new Promise((r) => setTimeout(r, 60000));
  return { state_delta: { items: [mark] } };
}
)";

constexpr std::string_view kSeed = R"(export default async function (args) {
  return { state_delta: { list: Array.from({ length: args.n }, (_, i) => `i${i}`) } };
}
)";

class ScaleOut : public OeTest {
 protected:
  void SetUp() override {
    writeTool("step.mjs", kStep);
    writeTool("seed.mjs", kSeed);
  }

  // seed -> fan (a for_each over `n` items, array_append in item order) -> a plain node `tail`
  // on queue `tail_queue`. `fan_extra`: more keys of fan's node (on_error, timeout_ms, args).
  void writeFanOut(int n, const std::string& fan_args = "", const std::string& fan_extra = "",
                   const std::string& tail_queue = "default") {
    const std::string dir = dir_.path().string();
    writeExperience(
        "name: scale\nversion: 0.1.0\nruntime: { concurrency: 8, deterministic: true }\n"
        "state:\n  schema:\n    list: { type: array }\n"
        "    items: { type: array, merge: array_append }\n"
        "graph:\n  nodes:\n"
        "    - { id: seed, kind: tool, impl: ./tools/seed.mjs, writes: [list], "
        "args: { n: " +
        std::to_string(n) +
        " } }\n"
        "    - { id: fan, kind: tool, impl: ./tools/step.mjs, reads: [list], "
        "writes: [items], for_each: { source: $.list, concurrency: 8 }, args: { dir: \"" +
        dir + "\"" + fan_args + " }" + fan_extra +
        " }\n"
        "    - { id: tail, kind: tool, impl: ./tools/step.mjs, writes: [items], "
        "queue: " +
        tail_queue + ", args: { dir: \"" + dir +
        "\", $item: tail } }\n"
        "  edges:\n    - { from: seed, to: fan }\n    - { from: fan, to: tail }\n");
  }

  // An 8-item fan-out whose item i3 blocks until <dir>/go exists; returns the result of an
  // uninterrupted plain run (the reference) and leaves no trace of it for the test's own run.
  nlohmann::json blockingFanOut() {
    writeFanOut(8, ", block: i3");
    dir_.write("go", "");
    auto plain = runJson({"--fresh", "--no-cache"});
    for (const char* file : {"go", "started-i3", "ran.txt"}) {
      std::filesystem::remove(dir_.path() / file);
    }
    return plain;
  }

  // Attempts still ready or leased: what a finished run must not leave behind.
  int64_t openAttempts() {
    auto conn = pg::Connection::open(url_);
    EXPECT_TRUE(conn);
    auto rows =
        (*conn)->exec("SELECT count(*) FROM oe_attempts WHERE status IN ('ready', 'leased')");
    EXPECT_TRUE(rows);
    return rows ? rows->int64(0, 0) : -1;
  }

  std::unique_ptr<BackgroundProcess> startWorker(const std::string& id,
                                                 std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {OE_EXE, "worker", "--store",       url_,
                                     "--id", id,       "--concurrency", "4"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<BackgroundProcess>(
        argv, std::map<std::string, std::string>{{"OE_PLUGIN_PATH", ""}}, dir_.path(),
        dir_.path() / id);
  }
  // SIGTERM: a worker finishes what it holds and exits 0.
  static void stopWorker(BackgroundProcess& worker) {
    worker.signal(SIGTERM);
    EXPECT_EQ(worker.wait(), 0) << worker.err();
  }

  nlohmann::json runWithWorkers(int* exit_code = nullptr) {
    return runJson({"--store", url_, "--workers", "--fresh", "--no-cache"}, exit_code);
  }

  // attempt rows: node_id/call_key -> (status, lease_owner, fence)
  std::vector<std::vector<std::string>> attempts() {
    auto conn = pg::Connection::open(url_);
    EXPECT_TRUE(conn);
    auto rows = (*conn)->exec(
        "SELECT call_key, status, COALESCE(lease_owner, ''), fence::text, queue FROM oe_attempts "
        "ORDER BY id");
    EXPECT_TRUE(rows) << rows.error().message;
    std::vector<std::vector<std::string>> out;
    for (int i = 0; i < rows->size(); ++i) {
      out.push_back({std::string(rows->text(i, 0)), std::string(rows->text(i, 1)),
                     std::string(rows->text(i, 2)), std::string(rows->text(i, 3)),
                     std::string(rows->text(i, 4))});
    }
    return out;
  }

  PgTestDb db_;
  std::string url_ = db_.url();  // a test on a private server points it there
};

TEST_F(ScaleOut, OneAndThreeWorkersEndInTheSameStateAsAPlainRun) {
  writeFanOut(24);
  auto plain = runJson({"--fresh", "--no-cache"});
  ASSERT_EQ(plain["status"], "success") << last_stderr_;
  ASSERT_EQ(plain["final_state"]["items"].size(), 25u);

  {
    auto w1 = startWorker("w1");
    auto one = runWithWorkers();
    ASSERT_EQ(one["status"], "success") << last_stderr_ << w1->err();
    EXPECT_EQ(one["final_state"], plain["final_state"]);
    EXPECT_EQ(one["nodes"]["ran"], plain["nodes"]["ran"]);
    stopWorker(*w1);
  }
  auto rows = attempts();
  ASSERT_EQ(rows.size(), 26u);  // seed, 24 items, tail: each attempted once
  for (const auto& row : rows) {
    EXPECT_EQ(row[1], "done") << row[0];
    EXPECT_EQ(row[2], "w1") << row[0];
  }

  std::vector<std::unique_ptr<BackgroundProcess>> three;
  for (const char* id : {"a", "b", "c"}) {
    three.push_back(startWorker(id));
  }
  auto again = runWithWorkers();
  ASSERT_EQ(again["status"], "success") << last_stderr_;
  EXPECT_EQ(again["final_state"], plain["final_state"]);
  for (auto& worker : three) {
    stopWorker(*worker);
  }
  rows = attempts();
  ASSERT_EQ(rows.size(), 52u);
  const std::set<std::string> ids = {"a", "b", "c"};
  for (size_t i = 26; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][1], "done") << rows[i][0];
    EXPECT_EQ(ids.count(rows[i][2]), 1u) << rows[i][0] << " ran on " << rows[i][2];
  }
}

TEST_F(ScaleOut, ANodeOnAnotherQueueRunsOnlyOnAWorkerServingIt) {
  writeFanOut(6, "", "", "other");
  auto general = startWorker("general");
  auto special = startWorker("special", {"--queue", "other"});
  auto run = runWithWorkers();
  ASSERT_EQ(run["status"], "success") << last_stderr_;
  stopWorker(*general);
  stopWorker(*special);
  for (const auto& row : attempts()) {
    if (row[0] == "tail") {
      EXPECT_EQ(row[4], "other");
      EXPECT_EQ(row[2], "special");
    } else {
      EXPECT_EQ(row[4], "default");
      EXPECT_EQ(row[2], "general") << row[0];
    }
  }
}

// A coding CLI on a worker (the fake claude first on the worker's PATH, streaming): what the
// plugin emits there (node.activity per tool use, node.tokens) reaches the coordinator's own
// log, marked with the worker, and the store's copy of the log holds each line once.
TEST_F(ScaleOut, APluginsEventsOnAWorkerReachTheCoordinatorsLogOnce) {
  writeExperience(
      "name: cli-on-worker\nversion: 0.1.0\nstate:\n  schema:\n    summary: { type: string }\n"
      "graph:\n  nodes:\n"
      "    - { id: summarize, kind: cli-agent, provider: claude-code, prompt: \"stream summarize "
      "it\", stream: true, output_format: json, writes: [summary] }\n"
      "  edges: []\n");
  const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): read only
  // The coordinator checks the program is on PATH too (one image for both, as deployed).
  const std::map<std::string, std::string> env = {
      {"OE_PLUGIN_PATH", ""},
      {"PATH", std::string(OE_SOURCE_DIR) + "/plugins/cli-agent/tests/fixtures/bin:" +
                   (path != nullptr ? path : "/usr/bin:/bin")},
      {"FAKE_CLI_RECORD", (dir_.path() / "record.jsonl").string()}};
  BackgroundProcess worker(
      {OE_EXE, "worker", "--store", url_, "--id", "cli-worker", "--concurrency", "2"}, env,
      dir_.path(), dir_.path() / "cli-worker");
  auto r = oe({"run", dir_.path().string(), "--json", "--store", url_, "--workers"}, env);
  stopWorker(worker);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto run = nlohmann::json::parse(r.out);
  ASSERT_EQ(run["status"], "success") << r.err;
  EXPECT_EQ(run["final_state"]["summary"], "one file");
  const auto log = events(run["run_id"]);
  bool saw_tool = false;
  for (const auto& e : log) {
    if (e.value("type", "") == "node.activity" && e.value("node_id", "") == "summarize") {
      EXPECT_EQ(e.value("worker", ""), "cli-worker") << e.dump();
      saw_tool = saw_tool || e.value("activity", "") == "tool: Bash ls -la";
    }
  }
  EXPECT_TRUE(saw_tool) << "the worker's node.activity is in the coordinator's log";
  EXPECT_EQ(count(log, "node.tokens", "summarize"), 1U);
  // The coordinator's log is what the store keeps: no line twice.
  auto conn = pg::Connection::open(url_);
  ASSERT_TRUE(conn);
  auto stored = (*conn)->exec(
      "SELECT count(*) FILTER (WHERE line::jsonb->>'type' = 'node.tokens'), count(*) FROM "
      "oe_events WHERE run_id = $1",
      {run["run_id"].get<std::string>()});
  ASSERT_TRUE(stored) << stored.error().message;
  EXPECT_EQ(stored->int64(0, 0), 1);
  EXPECT_EQ(static_cast<size_t>(stored->int64(0, 1)), log.size());
}

TEST_F(ScaleOut, AKilledWorkersAttemptRunsAgainElsewhereAndLandsOnce) {
  const nlohmann::json plain = blockingFanOut();
  ASSERT_EQ(plain["status"], "success") << last_stderr_;

  // The coordinator in the background; worker `doomed` takes item i3 and blocks in it until
  // the test has killed it. Its lease is the default (30 s): no late heartbeat under load can
  // let it expire while the worker lives; once it is dead, the test moves the lease's end to
  // now (as the clock would, later), and the rescuer re-queues the attempt.
  BackgroundProcess coordinator({OE_EXE, "run", dir_.path().string(), "--json", "--store", url_,
                                 "--workers", "--fresh", "--no-cache"},
                                {{"OE_PLUGIN_PATH", ""}}, dir_.path(), dir_.path() / "coord");
  auto doomed = startWorker("doomed");
  ASSERT_TRUE(waitForFile(dir_.path() / "started-i3")) << doomed->err() << coordinator.err();
  doomed->signal(SIGKILL);
  EXPECT_EQ(doomed->wait(), 128 + SIGKILL);
  {
    auto conn = pg::Connection::open(url_);
    ASSERT_TRUE(conn);
    auto expired = (*conn)->exec(
        "UPDATE oe_attempts SET lease_expires_at = now() - interval '1 second' "
        "WHERE lease_owner = 'doomed' AND status = 'leased' RETURNING call_key");
    ASSERT_TRUE(expired) << expired.error().message;
    // Every lease the dead worker held (it may have claimed other items beside i3) ends.
    bool i3 = false;
    for (int i = 0; i < expired->size(); ++i) {
      i3 = i3 || std::string(expired->text(i, 0)) == "fan#3";
    }
    EXPECT_TRUE(i3) << "the dead worker did not hold i3's lease";
  }
  dir_.write("go", "");  // the next run of i3 goes through
  auto rescuer = startWorker("rescuer");
  ASSERT_EQ(coordinator.wait(), 0) << coordinator.err() << rescuer->err();
  stopWorker(*rescuer);

  auto result = nlohmann::json::parse(coordinator.out(), nullptr, false);
  ASSERT_FALSE(result.is_discarded()) << coordinator.out();
  EXPECT_EQ(result["final_state"], plain["final_state"]);  // i3 appended once, in its place
  bool seen = false;
  for (const auto& row : attempts()) {
    if (row[0] == "fan#3") {
      seen = true;
      EXPECT_EQ(row[1], "done");
      EXPECT_EQ(row[2], "rescuer");
      EXPECT_EQ(row[3], "2");  // claimed twice: by doomed (fence 1), then by rescuer
    }
  }
  EXPECT_TRUE(seen);
  std::ifstream ran(dir_.path() / "ran.txt");
  std::string line;
  int i3_runs = 0;
  while (std::getline(ran, line)) {
    i3_runs += line == "i3" ? 1 : 0;
  }
  EXPECT_EQ(i3_runs, 2);  // it ran twice, and its effect on the state is there once
}

TEST_F(ScaleOut, RetriesTimeoutsAndFailRunBehaveAsWithoutWorkers) {
  // The default lease: the worker hears of a cancellation at once (NOTIFY oe_cancels), not at
  // its next heartbeat, so no lease needs to be short, and none expires under load.
  auto worker = startWorker("w");
  // A retry: item i2 fails its first attempt, the second (another queue row) succeeds.
  writeFanOut(4, ", fail_once: i2", ", on_error: { policy: retry, attempts: 2, base_ms: 1 }");
  auto retried = runWithWorkers();
  ASSERT_EQ(retried["status"], "success") << last_stderr_;
  EXPECT_EQ(retried["final_state"]["items"].size(), 5u);
  int i2_rows = 0;
  for (const auto& row : attempts()) {
    i2_rows += row[0] == "fan#2" ? 1 : 0;
  }
  EXPECT_EQ(i2_rows, 2);

  // timeout_ms: the worker's attempt is cancelled; the node fails with the timeout message.
  // One item, the one that sleeps: no other call is subject to the short timeout, so a slow
  // start under load cannot fail a second one.
  writeFanOut(1, ", sleep: i0", ", timeout_ms: 300");
  int code = 0;
  auto timed = runWithWorkers(&code);
  EXPECT_EQ(timed["status"], "partial") << last_stderr_;
  ASSERT_EQ(timed["failures"].size(), 1u) << timed.dump();
  EXPECT_NE(timed["failures"][0]["error"].get<std::string>().find("timed out after 300 ms"),
            std::string::npos)
      << timed.dump();

  // fail_run: the run ends failed and what it had queued is cancelled, not left for workers.
  writeFanOut(6, ", fail: i0", ", on_error: { policy: fail_run }");
  auto failed = runWithWorkers(&code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(failed["status"], "failed") << last_stderr_;
  stopWorker(*worker);
  EXPECT_EQ(openAttempts(), 0);
}

TEST_F(ScaleOut, AKilledCoordinatorsRunIsFinishedByOeResume) {
  const nlohmann::json plain = blockingFanOut();
  ASSERT_EQ(plain["status"], "success") << last_stderr_;

  auto worker = startWorker("w");
  BackgroundProcess coordinator(
      {OE_EXE, "run", dir_.path().string(), "-q", "--store", url_, "--workers", "--fresh"},
      {{"OE_PLUGIN_PATH", ""}}, dir_.path(), dir_.path() / "coord");
  ASSERT_TRUE(waitForFile(dir_.path() / "started-i3")) << worker->err() << coordinator.err();
  coordinator.signal(SIGKILL);
  EXPECT_EQ(coordinator.wait(), 128 + SIGKILL);
  // The resume cancels what the killed run left in the queue (i3, blocked on the worker), and
  // queues i3 again; the test lets i3 through once the old attempt is seen cancelled.
  BackgroundProcess resume({OE_EXE, "resume", "--last", "--experience", dir_.path().string(),
                            "--json", "--store", url_, "--workers"},
                           {{"OE_PLUGIN_PATH", ""}}, dir_.path(), dir_.path() / "resume");
  auto conn = pg::Connection::open(url_);
  ASSERT_TRUE(conn);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int64_t cancelled = 0;
  while (cancelled == 0 && std::chrono::steady_clock::now() < deadline) {
    auto rows = (*conn)->exec(
        "SELECT count(*) FROM oe_attempts WHERE status = 'cancelled' AND call_key = 'fan#3'");
    ASSERT_TRUE(rows) << rows.error().message;
    cancelled = rows->int64(0, 0);
    const timespec pause{0, 10'000'000};
    nanosleep(&pause, nullptr);
  }
  EXPECT_EQ(cancelled, 1) << resume.err();
  dir_.write("go", "");
  ASSERT_EQ(resume.wait(), 0) << resume.err() << worker->err();
  stopWorker(*worker);
  auto result = nlohmann::json::parse(resume.out(), nullptr, false);
  ASSERT_FALSE(result.is_discarded()) << resume.out();
  EXPECT_EQ(result["final_state"], plain["final_state"]);  // nothing lost, nothing twice
  EXPECT_EQ(openAttempts(), 0);
}

TEST_F(ScaleOut, APostgresRestartMidRunLosesNothing) {
  const nlohmann::json plain = blockingFanOut();
  ASSERT_EQ(plain["status"], "success") << last_stderr_;

  auto cluster = PgCluster::privateIn(dir_.path() / "pg");
  PgTestDb db(*cluster);
  url_ = db.url();
  BackgroundProcess coordinator({OE_EXE, "run", dir_.path().string(), "--json", "--store", url_,
                                 "--workers", "--fresh", "--no-cache"},
                                {{"OE_PLUGIN_PATH", ""}}, dir_.path(), dir_.path() / "coord");
  auto worker = startWorker("w", {"--lease-ms", "3000"});
  ASSERT_TRUE(waitForFile(dir_.path() / "started-i3")) << worker->err() << coordinator.err();
  cluster->stopNow();  // as a crash would: every session is cut
  cluster->start();
  dir_.write("go", "");
  ASSERT_EQ(coordinator.wait(), 0) << coordinator.err() << worker->err();
  stopWorker(*worker);
  auto result = nlohmann::json::parse(coordinator.out(), nullptr, false);
  ASSERT_FALSE(result.is_discarded()) << coordinator.out();
  EXPECT_EQ(result["final_state"], plain["final_state"]);
}

TEST_F(ScaleOut, WorkersNeedAPostgresStore) {
  writeFanOut(1);
  auto r = oe({"run", dir_.path().string(), "--workers"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--store postgresql://"), std::string::npos) << r.err;
  auto w = oe({"worker", "--store", "state.sqlite"});
  EXPECT_EQ(w.exit_code, 2) << w.err;
  EXPECT_NE(w.err.find("is not a PostgreSQL URL"), std::string::npos) << w.err;
}

}  // namespace
}  // namespace oe::test

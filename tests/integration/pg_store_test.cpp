// `oe run --store URL` end to end (docs/storage.md): the real oe binary, the tool plugin and a
// real PostgreSQL server. The final state equals the SQLite run's; a second coordinator on the
// scope is refused; a run killed with SIGKILL is resumed from another folder (another machine,
// as far as local files go) without re-running a finished node; a server restart mid-run is
// ridden out.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "support/pg_test_db.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace oe::test {
namespace {

// Appends its mark to `out` (one line per execution), then, if this node is the gate and
// PGSTORE_GATE names a file, creates it and waits for PGSTORE_RELEASE (never, when unset):
// the run is held there, its earlier nodes done, until the test kills or releases it.
constexpr std::string_view kStepMjs = R"(import fs from 'node:fs';
export default async function (args) {
  fs.appendFileSync(args.out, args.mark + '\n');
  const gate = process.env.PGSTORE_GATE;
  if (args.gate && gate) {
    fs.writeFileSync(gate, 'reached');
    const release = process.env.PGSTORE_RELEASE;
    while (!release || !fs.existsSync(release)) {
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  return { state_delta: { items: [args.mark], last: args.mark, first: 'set' } };
}
)";

std::string experienceYaml(const std::filesystem::path& out) {
  std::ostringstream yaml;
  yaml << "name: pgstore-it\nversion: 0.1.0\nstate:\n  schema:\n"
       << "    items: { type: array, merge: array_append }\n"
       << "    last: { type: string }\n"
       << "    first: { type: string, merge: set_once }\n"
       << "graph:\n  nodes:\n";
  for (const char* id : {"a", "b", "gate", "c"}) {
    yaml << "    - { id: " << id << ", kind: tool, impl: ./tools/step.mjs, writes: [items, last, "
         << "first], args: { mark: " << id << ", out: \"" << out.string()
         << "\", gate: " << (std::string_view(id) == "gate" ? "true" : "false") << " } }\n";
  }
  yaml << "  edges:\n    - { from: a, to: b }\n    - { from: b, to: gate }\n"
       << "    - { from: gate, to: c }\n";
  return yaml.str();
}

// The scope lock of experience `pgstore-it` in this test's database as pg_locks shows it
// (classid: high half of the 64-bit key, objid: low half). pg_locks covers the whole server,
// where the tests running alongside hold the same scope in databases of their own.
constexpr std::string_view kScopeLockWhere =
    "locktype = 'advisory' AND objsubid = 1 AND granted AND "
    "database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND "
    "((classid::bigint << 32) | objid::bigint) = hashtextextended('oe-scope:pgstore-it', 0)";

// Waits (polling, at most a minute) until a session holds the scope's lock; false if none did.
bool waitForScopeLock(const std::string& url) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto conn = pg::Connection::open(url)) {
      auto held = (*conn)->exec("SELECT count(*) FROM pg_locks WHERE " +
                                std::string(kScopeLockWhere));
      if (held && held->int64(0, 0) > 0) {
        return true;
      }
    }
    const timespec pause{0, 20'000'000};
    nanosleep(&pause, nullptr);
  }
  return false;
}

class PgStoreCli : public ::testing::Test {
 protected:
  // An experience folder (with the shared execution counter file `runs_`).
  void writeExperience(const TempDir& dir) {
    dir.write("experience.yaml", experienceYaml(counter_ / "executions.txt"));
    dir.write("tools/step.mjs", kStepMjs);
  }
  ProcessResult oe(const TempDir& dir, std::vector<std::string> args,
                   std::map<std::string, std::string> env = {}) {
    args.insert(args.begin(), OE_EXE);
    env.emplace("OE_PLUGIN_PATH", "");
    env.emplace("OE_STORE", "");
    return runProcess(args, env, dir.path());
  }
  std::map<std::string, int> executions() {
    std::map<std::string, int> n;
    std::ifstream in(counter_ / "executions.txt");
    for (std::string line; std::getline(in, line);) {
      ++n[line];
    }
    return n;
  }
  nlohmann::json stateOf(const TempDir& dir, const std::string& store) {
    std::vector<std::string> args = {"state", "--json"};
    if (!store.empty()) {
      args.insert(args.end(), {"--store", store});
    }
    auto r = oe(dir, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
  }
  // The state an uninterrupted SQLite run ends with.
  nlohmann::json sqliteReference() {
    TempDir ref;
    writeExperience(ref);
    auto r = oe(ref, {"run", ".", "-q"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::filesystem::remove(counter_ / "executions.txt");
    return stateOf(ref, "");
  }

  // A run held at its gate whose scope-lock session the statement `cut` (on a connection of the
  // test's, one row back) ends: the run stops, saying `expected`, with what finished before the
  // gate in the store.
  void expectAStopWhenTheLockIsCut(const std::string& cut, const std::string& expected) {
    PgTestDb db;
    TempDir dir;
    writeExperience(dir);
    const auto gate = counter_ / "gate";
    BackgroundProcess run({OE_EXE, "run", ".", "-q", "--store", db.url()},
                          {{"OE_PLUGIN_PATH", ""}, {"PGSTORE_GATE", gate.string()}}, dir.path(),
                          dir / "run");
    ASSERT_TRUE(waitForFile(gate)) << run.err();
    auto other = pg::Connection::open(db.url());
    ASSERT_TRUE(other);
    auto done = (*other)->exec(cut);
    ASSERT_TRUE(done) << done.error().message;
    ASSERT_EQ(done->size(), 1);
    EXPECT_NE(run.wait(), 0);
    const std::string said = run.out() + run.err();
    EXPECT_NE(said.find(expected), std::string::npos) << said;
    EXPECT_EQ(executions(), (std::map<std::string, int>{{"a", 1}, {"b", 1}, {"gate", 1}}));
    EXPECT_EQ(stateOf(dir, db.url())["last"], "b");
  }

  TempDir counter_;
};

TEST_F(PgStoreCli, ARunOnPostgresEndsWithTheSqliteRunsStateAndItsRecords) {
  PgTestDb db;
  const auto reference = sqliteReference();
  ASSERT_EQ(reference["items"], nlohmann::json({"a", "b", "gate", "c"}));
  TempDir dir;
  writeExperience(dir);
  auto run = oe(dir, {"run", ".", "-q", "--store", db.url()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out.find("warning"), std::string::npos) << run.out;
  EXPECT_EQ(stateOf(dir, db.url()), reference);
  EXPECT_FALSE(std::filesystem::exists(dir / ".openexpertise" / "state.sqlite"));
  EXPECT_FALSE(std::filesystem::exists(dir / ".openexpertise" / "cache"));
  // OE_STORE selects it as --store does; the second run replays every node from oe_cache.
  auto again = oe(dir, {"run", ".", "--json"}, {{"OE_STORE", db.url()}});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  auto summary = nlohmann::json::parse(again.out);
  EXPECT_EQ(summary["nodes"]["cached"], 4) << again.out;
  EXPECT_EQ(executions(), (std::map<std::string, int>{{"a", 1}, {"b", 1}, {"gate", 1}, {"c", 1}}));
  auto runs = oe(dir, {"runs", "--json", "--store", db.url()});
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  auto list = nlohmann::json::parse(runs.out);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["status"], "success");
  EXPECT_EQ(list[0]["nodes"]["cached"], 4);
  EXPECT_EQ(list[1]["nodes"]["ran"], 4);
  // The first run's HTML report, from the store: its events, its state writes, the graph.
  const std::string first_id = list[1]["run_id"];
  auto report = oe(dir, {"inspect", first_id, "--html", "--store", db.url(), "-o", "report.html"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_EQ(report.err.find("warning"), std::string::npos) << report.err;
  std::ifstream page_file(dir / "report.html");
  const std::string page((std::istreambuf_iterator<char>(page_file)), {});
  EXPECT_NE(page.find(first_id), std::string::npos);
  EXPECT_NE(page.find("<svg"), std::string::npos) << "the graph is drawn";
  EXPECT_NE(page.find("<th>state last</th><td><pre>gate</pre>"), std::string::npos)
      << "gate's write, from the state history in PostgreSQL";
  // The scope's cache entries, listed and cleared in the database (the local folder has none).
  auto cached = oe(dir, {"cache", "ls", "--json", "--store", db.url()});
  ASSERT_EQ(cached.exit_code, 0) << cached.err;
  std::set<std::string> cached_nodes;
  for (const auto& entry : nlohmann::json::parse(cached.out)) {
    cached_nodes.insert(entry["node_id"].get<std::string>());
    EXPECT_EQ(entry["run_id"], first_id);
  }
  EXPECT_EQ(cached_nodes, (std::set<std::string>{"a", "b", "gate", "c"}));
  auto cleared = oe(dir, {"cache", "clear", "--yes"}, {{"OE_STORE", db.url()}});
  ASSERT_EQ(cleared.exit_code, 0) << cleared.err;
  EXPECT_NE(cleared.out.find("removed 4 entries"), std::string::npos) << cleared.out;
  auto none = oe(dir, {"cache", "ls", "--json", "--store", db.url()});
  EXPECT_EQ(nlohmann::json::parse(none.out), nlohmann::json::array()) << none.out;
  // What reads only the SQLite files says so rather than work on files that are not the store.
  auto evolve = oe(dir, {"evolve", "--last"}, {{"OE_STORE", db.url()}});
  EXPECT_EQ(evolve.exit_code, 2);
  EXPECT_NE(evolve.err.find("which evolve does not read yet"), std::string::npos) << evolve.err;
  // A path is not a store URL: said, not silently used.
  auto path = oe(dir, {"run", ".", "--store", "/tmp/x.sqlite"});
  EXPECT_EQ(path.exit_code, 2);
  EXPECT_NE(path.err.find("PostgreSQL URL"), std::string::npos) << path.err;
}

TEST_F(PgStoreCli, AKilledRunIsResumedFromAnotherFolderWithoutRerunningAFinishedNode) {
  PgTestDb db;
  const auto reference = sqliteReference();
  TempDir first;
  TempDir elsewhere;
  writeExperience(first);
  writeExperience(elsewhere);
  const auto gate = counter_ / "gate";
  BackgroundProcess held({OE_EXE, "run", ".", "-q", "--store", db.url()},
                         {{"OE_PLUGIN_PATH", ""}, {"PGSTORE_GATE", gate.string()}}, first.path(),
                         first / "held");
  ASSERT_TRUE(waitForFile(gate)) << held.err();
  // While it holds the scope, a second coordinator on it is refused, from any folder.
  auto second = oe(elsewhere, {"run", ".", "-q", "--store", db.url()});
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.err.find("is in use by run"), std::string::npos) << second.err;
  // Nor may its cache be cleared under it.
  auto clear = oe(elsewhere, {"cache", "clear", "--yes", "--store", db.url()});
  EXPECT_NE(clear.exit_code, 0);
  EXPECT_NE(clear.err.find("cannot clear the cache"), std::string::npos) << clear.err;
  // `oe runs` tells the run in progress (its coordinator holds the scope) from a dead one.
  auto during = oe(elsewhere, {"runs", "--json", "--store", db.url()});
  ASSERT_EQ(during.exit_code, 0) << during.err;
  const auto in_progress = nlohmann::json::parse(during.out);
  ASSERT_EQ(in_progress.size(), 1u) << during.out;
  EXPECT_EQ(in_progress[0]["status"], "running");
  held.signal(SIGKILL);
  EXPECT_EQ(held.wait(), 128 + SIGKILL);
  // No local file of the killed run here: the run, its chain and its args come from the store.
  auto resumed = oe(elsewhere, {"resume", "--last", "-q", "--store", db.url()});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(stateOf(elsewhere, db.url()), reference);
  // a and b had finished: not again; the gate was running at the kill: once more; c once.
  EXPECT_EQ(executions(), (std::map<std::string, int>{{"a", 1}, {"b", 1}, {"gate", 2}, {"c", 1}}));
  auto runs = oe(elsewhere, {"runs", "--json", "--store", db.url()});
  auto list = nlohmann::json::parse(runs.out);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["status"], "success");
  EXPECT_EQ(list[0]["resumed_from"], list[1]["run_id"]);
  EXPECT_EQ(list[1]["status"], "unfinished");
  // oe inspect reads both runs' events from the store, here where neither has a local log.
  const std::string killed_id = list[1]["run_id"];
  auto killed = oe(TempDir(), {"inspect", killed_id.substr(0, 8), "--json", "--store", db.url()});
  ASSERT_EQ(killed.exit_code, 0) << killed.err;
  auto killed_events = nlohmann::json::parse(killed.out);
  ASSERT_FALSE(killed_events.empty());
  EXPECT_EQ(killed_events.front()["type"], "run.started");
  EXPECT_NE(killed_events.back()["type"], "run.finished");
  auto last = oe(elsewhere, {"inspect", "--last", "--json", "--store", db.url()});
  ASSERT_EQ(last.exit_code, 0) << last.err;
  EXPECT_EQ(nlohmann::json::parse(last.out).back()["type"], "run.finished");
}

TEST_F(PgStoreCli, ARunRidesOutAServerRestartAndLosesNothing) {
  TempDir tmp;
  auto cluster = PgCluster::privateIn(tmp / "pg");
  PgTestDb db(*cluster);
  const auto reference = sqliteReference();
  TempDir dir;
  writeExperience(dir);
  const auto gate = counter_ / "gate";
  const auto release = counter_ / "release";
  BackgroundProcess run({OE_EXE, "run", ".", "-q", "--store", db.url()},
                        {{"OE_PLUGIN_PATH", ""},
                         {"PGSTORE_GATE", gate.string()},
                         {"PGSTORE_RELEASE", release.string()}},
                        dir.path(), dir / "run");
  ASSERT_TRUE(waitForFile(gate)) << run.err();
  // Every connection of the run dies; the next statements find the server back.
  cluster->stopNow();
  cluster->start();
  // The run takes the scope's lock again on a new session: a second coordinator is refused.
  ASSERT_TRUE(waitForScopeLock(db.url()));
  TempDir elsewhere;
  writeExperience(elsewhere);
  auto second = oe(elsewhere, {"run", ".", "-q", "--store", db.url()});
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.err.find("is in use by run"), std::string::npos) << second.err;
  std::ofstream(release) << "go";
  ASSERT_EQ(run.wait(), 0) << run.err();
  EXPECT_EQ(run.out().find("was not held from then on"), std::string::npos) << run.out();
  EXPECT_EQ(stateOf(dir, db.url()), reference);
  EXPECT_EQ(executions(), (std::map<std::string, int>{{"a", 1}, {"b", 1}, {"gate", 1}, {"c", 1}}));
  // Every event line reached oe_events (the writer reconnected too).
  auto conn = pg::Connection::open(db.url());
  ASSERT_TRUE(conn);
  auto lines = (*conn)->exec("SELECT count(*) FROM oe_events");
  ASSERT_TRUE(lines);
  size_t local = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir / ".openexpertise" / "runs")) {
    if (entry.path().extension() == ".jsonl") {
      std::ifstream in(entry.path());
      for (std::string line; std::getline(in, line);) {
        ++local;
      }
    }
  }
  EXPECT_EQ(static_cast<size_t>(lines->int64(0, 0)), local);
}

// The session holding the scope's lock dies and, before the run can take the lock again,
// another coordinator has it (here the test, in the statement that ends that session): the run
// stops rather than write the state alongside it.
TEST_F(PgStoreCli, ARunWhoseScopeWasTakenWhileItsLockWasLostStops) {
  expectAStopWhenTheLockIsCut(
      "SELECT pg_terminate_backend(pid, 30000), "
      "pg_advisory_lock(hashtextextended('oe-scope:pgstore-it', 0)) FROM pg_locks WHERE " +
          std::string(kScopeLockWhere),
      "another coordinator took the lock meanwhile");
}

// The same, when the other run came and went while the lock was free (here: its oe_runs row,
// written in the statement that ends the holder's session): the run takes the lock again, sees
// that run, and stops.
TEST_F(PgStoreCli, ARunThatFindsAnotherRanWhileItsLockWasLostStops) {
  expectAStopWhenTheLockIsCut(
      "WITH gone AS (SELECT pg_terminate_backend(pid, 30000) FROM pg_locks WHERE " +
          std::string(kScopeLockWhere) +
          ") INSERT INTO oe_runs (run_id, scope, chain_id, status, started_at, finished_at) "
          "SELECT 'intruder', 'pgstore-it', 'intruder', 'success', now(), now() FROM gone "
          "RETURNING 1",
      "run intruder started on the scope while the lock was free");
}

// `oe run --wait` on a scope another coordinator holds: it says whom it waits for, starts once
// that run has ended, and replays what that run cached.
TEST_F(PgStoreCli, ARunWithWaitStartsWhenTheCoordinatorHoldingTheScopeEnds) {
  PgTestDb db;
  TempDir first;
  TempDir elsewhere;
  writeExperience(first);
  writeExperience(elsewhere);
  const auto gate = counter_ / "gate";
  const auto release = counter_ / "release";
  BackgroundProcess held({OE_EXE, "run", ".", "-q", "--store", db.url()},
                         {{"OE_PLUGIN_PATH", ""},
                          {"PGSTORE_GATE", gate.string()},
                          {"PGSTORE_RELEASE", release.string()}},
                         first.path(), first / "held");
  ASSERT_TRUE(waitForFile(gate)) << held.err();
  BackgroundProcess waiting({OE_EXE, "run", ".", "--json", "--store", db.url(), "--wait"},
                            {{"OE_PLUGIN_PATH", ""}, {"OE_STORE", ""}}, elsewhere.path(),
                            elsewhere / "waiting");
  // It says whom it waits for (its stderr, read as it is written), and has not started.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  std::string said;
  while (said.find("waiting for run") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(elsewhere / "waiting.err");
    said.assign(std::istreambuf_iterator<char>(in), {});
    const timespec pause{0, 20'000'000};
    nanosleep(&pause, nullptr);
  }
  ASSERT_NE(said.find("waiting for run"), std::string::npos) << said;
  std::ofstream(release) << "go";
  ASSERT_EQ(held.wait(), 0) << held.err();
  ASSERT_EQ(waiting.wait(), 0) << waiting.err();
  const auto summary = nlohmann::json::parse(waiting.out());
  EXPECT_EQ(summary["status"], "success");
  EXPECT_EQ(summary["nodes"]["cached"], 4) << waiting.out();
  EXPECT_EQ(executions(), (std::map<std::string, int>{{"a", 1}, {"b", 1}, {"gate", 1}, {"c", 1}}));
}

// `oe gc` on the store: three runs, keep the newest. The dry run counts and deletes nothing;
// then the older runs' rows go (events, records, their history rows of fields the kept run
// wrote again, their local logs), the state stays as it was, and the kept run is untouched.
TEST_F(PgStoreCli, GcPrunesTheOlderRunsOfTheScopeAndLeavesTheState) {
  PgTestDb db;
  TempDir dir;
  writeExperience(dir);
  for (const auto& extra : {std::vector<std::string>{}, std::vector<std::string>{"--no-cache"},
                            std::vector<std::string>{"--no-cache"}}) {
    std::vector<std::string> args = {"run", ".", "-q", "--store", db.url()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = oe(dir, args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const auto state = stateOf(dir, db.url());
  auto listed = nlohmann::json::parse(oe(dir, {"runs", "--json", "--store", db.url()}).out);
  ASSERT_EQ(listed.size(), 3u);
  const std::string newest = listed[0]["run_id"];
  const std::string oldest = listed[2]["run_id"];
  ASSERT_TRUE(std::filesystem::exists(dir / ".openexpertise" / "runs" / (oldest + ".jsonl")));

  auto dry = oe(dir, {"gc", "--keep", "1", "--dry-run", "--json"}, {{"OE_STORE", db.url()}});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  const auto would = nlohmann::json::parse(dry.out);
  EXPECT_EQ(would["runs_removed"].size(), 2u) << dry.out;
  EXPECT_GT(would["events_removed"], 0) << dry.out;
  EXPECT_EQ(nlohmann::json::parse(oe(dir, {"runs", "--json", "--store", db.url()}).out).size(),
            3u);

  auto gc = oe(dir, {"gc", "--keep", "1", "--json", "--store", db.url()});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  const auto done = nlohmann::json::parse(gc.out);
  EXPECT_EQ(done["runs_removed"], would["runs_removed"]);
  EXPECT_EQ(done["events_removed"], would["events_removed"]);
  EXPECT_EQ(done["history_rows_removed"], would["history_rows_removed"]);
  EXPECT_GT(done["history_rows_removed"], 0) << gc.out;
  auto left = nlohmann::json::parse(oe(dir, {"runs", "--json", "--store", db.url()}).out);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0]["run_id"], newest);
  EXPECT_EQ(left[0]["nodes"]["ran"], 4);
  EXPECT_EQ(stateOf(dir, db.url()), state);
  EXPECT_FALSE(std::filesystem::exists(dir / ".openexpertise" / "runs" / (oldest + ".jsonl")));
  auto conn = pg::Connection::open(db.url());
  ASSERT_TRUE(conn);
  auto rows = (*conn)->exec(
      "SELECT (SELECT count(*) FROM oe_events WHERE run_id <> $1), (SELECT count(*) FROM "
      "oe_state_history WHERE field = 'last' AND run_id <> $1), (SELECT count(*) FROM "
      "oe_state_history WHERE field = 'last' AND run_id = $1)",
      {newest});
  ASSERT_TRUE(rows) << rows.error().message;
  EXPECT_EQ(rows->int64(0, 0), 0);
  EXPECT_EQ(rows->int64(0, 1), 0) << "the older runs' writes of `last` are explained by the kept";
  EXPECT_EQ(rows->int64(0, 2), 4);
  // The removed runs' write claims (oe_state_writes) go with them; the kept run's stay.
  auto claims = (*conn)->exec(
      "SELECT count(*) FILTER (WHERE run_id <> $1), count(*) FILTER (WHERE run_id = $1) FROM "
      "oe_state_writes",
      {newest});
  ASSERT_TRUE(claims) << claims.error().message;
  EXPECT_EQ(claims->int64(0, 0), 0) << "the removed runs' write claims were kept";
  EXPECT_GT(claims->int64(0, 1), 0);
}

// Two YAML files of one folder, with the same `name:`, in one database: each has its own scope
// (pgstore::storeScope), so its own state and runs. The cache is the database's, shared by key:
// b's nodes replay a's entries, and still append to b's own state only.
TEST_F(PgStoreCli, TwoFilesOfOneFolderKeepTheirStatesAndRunsApart) {
  PgTestDb db;
  TempDir dir;
  writeExperience(dir);
  std::filesystem::rename(dir / "experience.yaml", dir / "a.yaml");
  std::filesystem::copy_file(dir / "a.yaml", dir / "b.yaml");
  for (const char* file : {"a.yaml", "b.yaml"}) {
    auto r = oe(dir, {"run", file, "-q", "--store", db.url()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const nlohmann::json items = {"a", "b", "gate", "c"};
  for (const char* file : {"a.yaml", "b.yaml"}) {
    auto state = oe(dir, {"state", "--json", "--store", db.url(), "--experience", file});
    ASSERT_EQ(state.exit_code, 0) << state.err;
    EXPECT_EQ(nlohmann::json::parse(state.out)["items"], items) << file << ": " << state.out;
    auto runs = oe(dir, {"runs", "--json", "--store", db.url(), "--experience", file});
    ASSERT_EQ(runs.exit_code, 0) << runs.err;
    EXPECT_EQ(nlohmann::json::parse(runs.out).size(), 1u) << file << ": " << runs.out;
  }
  EXPECT_EQ(executions(), (std::map<std::string, int>{{"a", 1}, {"b", 1}, {"gate", 1}, {"c", 1}}));
  auto resumed =
      oe(dir, {"resume", "--last", "--json", "--store", db.url(), "--experience", "b.yaml"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  auto runs_a = oe(dir, {"runs", "--json", "--store", db.url(), "--experience", "a.yaml"});
  EXPECT_EQ(nlohmann::json::parse(runs_a.out).size(), 1u) << runs_a.out;
}

}  // namespace
}  // namespace oe::test

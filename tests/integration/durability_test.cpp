// Run history and retention against the real `oe`: `oe runs`, `oe cache ls|clear` and `oe gc`,
// including the promise that storage stays bounded for a graph run every minute.
#include <filesystem>
#include <set>

#include "oe_fixture.hpp"
#include "sqlite_probe.hpp"

namespace oe::test {
namespace {

// An executable node that writes a ~4 KiB string built from the run-level arg `tick` (D1: run
// args reach every node), so every tick is a new cache entry and a new history row.
constexpr std::string_view kPutSh = R"(#!/bin/sh
IFS= read -r input || true
field=${input#*\"field\":\"}; field=${field%%\"*}
tick=0
case $input in *'"tick":'*) tick=${input#*\"tick\":}; tick=${tick%%[,\}]*} ;; esac
printf '{"state_delta":{"%s":"%04096d"}}\n' "$field" "$tick"
)";

constexpr std::string_view kThreeNodes = R"(name: minutely
version: 0.1.0
state: { schema: { a: { type: string }, b: { type: string }, c: { type: string } } }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./tools/put.sh, args: { field: a }, writes: [a] }
    - { id: b, kind: tool, impl: ./tools/put.sh, args: { field: b }, writes: [b] }
    - { id: c, kind: tool, impl: ./tools/put.sh, args: { field: c }, writes: [c] }
  edges: [ { from: a, to: b }, { from: b, to: c } ]
)";

class Durability : public OeTest {
 protected:
  void SetUp() override {
    writeExecutable("tools/put.sh", kPutSh);
    writeExperience(kThreeNodes);
  }
  std::filesystem::path workspace() const { return dir_.path() / ".openexpertise"; }
  std::string dirArg() const { return dir_.path().string(); }
  std::string runTick(int tick) {
    int code = -1;
    auto out = runJson({"-q", "--args", "{\"tick\":" + std::to_string(tick) + "}"}, &code);
    EXPECT_EQ(code, 0) << last_stderr_;
    return out.value("run_id", "");
  }
  std::set<std::string> runFiles() const {
    std::set<std::string> ids;
    for (const auto& e : std::filesystem::directory_iterator(workspace() / "runs")) {
      if (e.path().extension() == ".jsonl") {
        ids.insert(e.path().stem().string());
      }
    }
    return ids;
  }
  static uint64_t sqliteBytes(const std::filesystem::path& db) {
    uint64_t total = 0;
    for (const char* suffix : {"", "-wal"}) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(db.string() + suffix, ec);
      total += ec ? 0 : size;
    }
    return total;
  }
  nlohmann::json json(const ProcessResult& r) {
    auto parsed = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << r.out << r.err;
    return parsed;
  }
  // A hand-written log, as a killed or an old run leaves it.
  void writeLog(const std::string& id, std::string_view content) {
    dir_.write(".openexpertise/runs/" + id + ".jsonl", content);
  }
  // One compact log line: {"type","run_id","node_id"?,"ts", ...extra}.
  static std::string line(std::string_view type, std::string_view run, std::string_view node,
                          std::string_view ts, const nlohmann::ordered_json& extra = {}) {
    nlohmann::ordered_json e = {{"type", type}, {"run_id", run}};
    if (!node.empty()) {
      e["node_id"] = node;
    }
    e["ts"] = ts;
    for (const auto& [k, v] : extra.items()) {
      e[k] = v;
    }
    return e.dump() + "\n";
  }
  static nlohmann::json counts(int ran, int cached, int failed, int skipped) {
    return {{"ran", ran}, {"cached", cached}, {"failed", failed}, {"skipped", skipped}};
  }
};

// D14: `state.store` names the state's SQLite file, relative to the experience directory. Runs,
// `oe state` and `oe reset-state` all use it, and nothing is written to the default place.
TEST_F(Durability, StateStoreNamesTheStateFileEveryCommandUses) {
  writeTool("inc.mjs",
            "export default (a) => ({ state_delta: { count: (a._state.count ?? 0) + 1 } });");
  writeExperience(R"(name: stored
version: 0.1.0
state:
  store: ./data/state.sqlite
  schema: { count: { type: number } }
graph:
  nodes: [ { id: inc, kind: tool, impl: ./tools/inc.mjs, reads: [count], writes: [count] } ]
  edges: []
)");
  int code = -1;
  runJson({"--no-cache"}, &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  auto second = runJson({"--no-cache"}, &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(second["final_state"]["count"], 2);  // the second run read what the first stored
  const auto store = dir_.path() / "data" / "state.sqlite";
  EXPECT_TRUE(std::filesystem::exists(store));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / ".openexpertise" / "state.sqlite"));

  auto shown = oe({"state", "count", "--experience", dir_.path().string()});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(shown.out, "2\n");

  auto reset = oe({"reset-state", "--yes", "--experience", dir_.path().string()});
  EXPECT_EQ(reset.exit_code, 0) << reset.err;
  EXPECT_FALSE(std::filesystem::exists(store));
  auto third = runJson({"--no-cache"}, &code);
  EXPECT_EQ(third["final_state"]["count"], 1);
}

TEST_F(Durability, RunsListsRunsNewestFirstWithTheirCounts) {
  const std::string first = runTick(1);
  const std::string second = runTick(1);  // same inputs: everything replays from the cache
  auto r = oe({"runs", "--experience", dirArg(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto runs = json(r);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0]["run_id"], second);
  EXPECT_EQ(runs[1]["run_id"], first);
  EXPECT_EQ(runs[1]["status"], "success");
  EXPECT_EQ(runs[1]["nodes"], counts(3, 0, 0, 0));
  EXPECT_EQ(runs[0]["nodes"], counts(0, 3, 0, 0));
  EXPECT_GE(runs[0]["duration_ms"].get<int64_t>(), 0);
  EXPECT_LE(runs[1]["started_at"].get<std::string>(), runs[0]["started_at"].get<std::string>());

  auto text = oe({"runs", "--experience", dirArg()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_LT(text.out.find(second), text.out.find(first)) << text.out;  // newest first
  EXPECT_NE(text.out.find("success"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("CACHED"), std::string::npos) << text.out;
}

TEST_F(Durability, RunsCountsAnUnfinishedRunFromItsEventsAndReportsATornLastLine) {
  // Killed mid-run: no run.finished, and half of a line at the end.
  const std::string t = "2026-05-26T10:00:00.";
  writeLog("killed", line("run.started", "killed", "", t + "000Z", {{"args", {}}}) +
                         line("node.ready", "killed", "a", t + "010Z") +
                         line("node.started", "killed", "a", t + "011Z") +
                         line("node.finished", "killed", "a", t + "100Z") +
                         line("node.ready", "killed", "b", t + "101Z") +
                         line("node.finished", "killed", "b", t + "102Z") +
                         line("node.started", "killed", "c", t + "103Z") +
                         line("node.failed", "killed", "c", t + "200Z", {{"error", "x"}}) +
                         line("node.skipped", "killed", "d", t + "250Z", {{"reason", "r"}}) +
                         line("node.started", "killed", "e", t + "300Z") +
                         "{\"type\":\"node.fini");
  auto r = oe({"runs", "--experience", dirArg(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("killed.jsonl:11: ignoring a torn last line"), std::string::npos) << r.err;
  auto runs = json(r);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["status"], "unfinished");
  EXPECT_EQ(runs[0]["finished_at"], nullptr);
  EXPECT_EQ(runs[0]["duration_ms"], 300);  // up to its last readable event
  // a ran; b is a cache hit (node.finished without node.started); c failed; d skipped.
  EXPECT_EQ(runs[0]["nodes"], counts(1, 1, 1, 1));
  auto text = oe({"runs", "--experience", dirArg()});
  EXPECT_NE(text.out.find("unfinished"), std::string::npos) << text.out;
}

TEST_F(Durability, RunsOfAnExperienceWithoutRunsSaysSo) {
  auto r = oe({"runs", "--experience", dirArg()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("no runs yet"), std::string::npos) << r.out;
  EXPECT_EQ(json(oe({"runs", "--experience", dirArg(), "--json"})), nlohmann::json::array());
}

TEST_F(Durability, CacheLsShowsTheEntriesAndClearNeedsYesAndRemovesTheFolder) {
  auto empty = oe({"cache", "ls", "--experience", dirArg()});
  EXPECT_EQ(empty.exit_code, 0);
  EXPECT_NE(empty.out.find("no cache entries"), std::string::npos) << empty.out;
  // ls writes nothing
  EXPECT_FALSE(std::filesystem::exists(workspace() / "cache" / "cache.sqlite"));

  const std::string run = runTick(7);
  auto listed = oe({"cache", "ls", "--experience", dirArg(), "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  auto entries = json(listed);
  ASSERT_EQ(entries.size(), 3u);
  std::set<std::string> nodes;
  for (const auto& e : entries) {
    nodes.insert(e["node_id"].get<std::string>());
    EXPECT_EQ(e["run_id"], run);
    EXPECT_EQ(e["key"].get<std::string>().size(), 64u);
    EXPECT_GT(e["size_bytes"].get<size_t>(), 4096u);
    EXPECT_FALSE(e["created_at"].get<std::string>().empty());
  }
  EXPECT_EQ(nodes, (std::set<std::string>{"a", "b", "c"}));

  auto text = oe({"cache", "ls", "--experience", dirArg()});
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find(entries[0]["key"].get<std::string>().substr(0, 12) + "  "),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("3 entries"), std::string::npos) << text.out;

  auto refused = oe({"cache", "clear", "--experience", dirArg()});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("requires --yes"), std::string::npos) << refused.err;
  EXPECT_TRUE(std::filesystem::exists(workspace() / "cache"));
  auto cleared = oe({"cache", "clear", "--yes", "--experience", dirArg()});
  EXPECT_EQ(cleared.exit_code, 0) << cleared.err;
  EXPECT_FALSE(std::filesystem::exists(workspace() / "cache"));
  // Cleared: the next run executes every node again.
  int code = -1;
  auto again = runJson({"-q", "--args", "{\"tick\":7}"}, &code);
  EXPECT_EQ(again["nodes"]["ran"], 3);
}

// Issue 3, item 6: a graph run every minute must not grow storage without bound.
TEST_F(Durability, GcKeepBoundsStorageOfAGraphRunEveryMinute) {
  std::vector<std::string> ids;
  for (int tick = 0; tick < 30; ++tick) {
    ids.push_back(runTick(tick));
  }
  const auto state_db = workspace() / "state.sqlite";
  const auto cache_db = workspace() / "cache" / "cache.sqlite";
  ASSERT_EQ(runFiles().size(), 30u);
  {
    SqliteProbe state(state_db);
    SqliteProbe cache(cache_db);
    ASSERT_EQ(state.count("state_history"), 90);
    ASSERT_EQ(cache.count("cache_entries"), 90);
  }

  auto dry = oe({"gc", "--experience", dirArg(), "--keep", "5", "--dry-run", "--json"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  auto would = json(dry);
  EXPECT_EQ(would["runs_removed"].size(), 25u);
  EXPECT_EQ(would["cache_entries_removed"], 75);
  EXPECT_EQ(would["history_rows_removed"], 75);
  EXPECT_GT(would["bytes_freed"].get<uint64_t>(), 75u * 4096);
  EXPECT_EQ(runFiles().size(), 30u);  // a dry run deletes nothing
  EXPECT_EQ(SqliteProbe(cache_db).count("cache_entries"), 90);

  const uint64_t state_before = sqliteBytes(state_db);
  const uint64_t cache_before = sqliteBytes(cache_db);
  auto r = oe({"gc", "--experience", dirArg(), "--keep", "5", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto report = json(r);
  EXPECT_EQ(report["runs_removed"].size(), 25u);
  EXPECT_EQ(report["runs_kept"], 5);
  EXPECT_EQ(report["cache_entries_removed"], 75);
  EXPECT_EQ(report["history_rows_removed"], 75);

  const std::set<std::string> newest(ids.end() - 5, ids.end());
  EXPECT_EQ(runFiles(), newest);
  // Each kept run keeps its definition pin; the pruned runs' pins are gone with their logs.
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(workspace() / "runs")) {
    ++files;
    EXPECT_EQ(newest.count(e.path().filename().string().substr(0, 36)), 1u) << e.path();
  }
  EXPECT_EQ(files, 10u);
  {
    SqliteProbe state(state_db);
    SqliteProbe cache(cache_db);
    EXPECT_EQ(state.count("state_history"), 15);  // what 5 runs of 3 nodes wrote
    EXPECT_EQ(cache.count("cache_entries"), 15);
    for (const auto& row : state.rows("SELECT DISTINCT run_id FROM state_history")) {
      EXPECT_EQ(newest.count(row[0]), 1u) << row[0];
    }
    for (const auto& row : cache.rows("SELECT DISTINCT run_id FROM cache_entries")) {
      EXPECT_EQ(newest.count(row[0]), 1u) << row[0];
    }
    EXPECT_EQ(state.count("state_snapshot"), 3);  // the state itself is untouched
  }
  const uint64_t state_after = sqliteBytes(state_db);
  const uint64_t cache_after = sqliteBytes(cache_db);
  EXPECT_LT(state_after, state_before / 2) << state_before << " -> " << state_after;
  EXPECT_LT(cache_after, cache_before / 2) << cache_before << " -> " << cache_after;
  EXPECT_GE(report["bytes_freed"].get<uint64_t>(),
            (state_before - state_after) + (cache_before - cache_after));

  // Another 30 minutes with a gc after each run: the files stay at the size of 5 runs.
  uint64_t high_water = 0;
  for (int tick = 30; tick < 60; ++tick) {
    runTick(tick);
    ASSERT_EQ(oe({"gc", "--experience", dirArg(), "--keep", "5"}).exit_code, 0);
    high_water = std::max(high_water, sqliteBytes(state_db) + sqliteBytes(cache_db));
  }
  EXPECT_EQ(runFiles().size(), 5u);
  EXPECT_LE(high_water, (state_after + cache_after) * 3 / 2)
      << "storage grew although gc ran after every run";
  // The state is still the latest run's, and the kept runs still replay from the cache.
  int code = -1;
  auto last = runJson({"-q", "--args", "{\"tick\":59}"}, &code);
  EXPECT_EQ(last["nodes"]["cached"], 3);
  EXPECT_EQ(last["final_state"]["a"].get<std::string>().size(), 4096u);
}

// Entries a kept run replayed (not wrote) survive gc: CacheStore::touch at the end of a run.
TEST_F(Durability, GcKeepsEntriesThatAKeptRunReplayed) {
  const std::string writer = runTick(1);
  for (int i = 0; i < 4; ++i) {
    runTick(1);  // replays the writer's entries
  }
  auto r = oe({"gc", "--experience", dirArg(), "--keep", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(runFiles().count(writer), 0u);
  EXPECT_EQ(json(r)["cache_entries_removed"], 0);
  EXPECT_EQ(SqliteProbe(workspace() / "cache" / "cache.sqlite").count("cache_entries"), 3);
  int code = -1;
  auto next = runJson({"-q", "--args", "{\"tick\":1}"}, &code);
  EXPECT_EQ(next["nodes"]["ran"], 0) << "gc dropped entries a kept run used: nodes ran again";
  EXPECT_EQ(next["nodes"]["cached"], 3);
}

TEST_F(Durability, GcOlderThanPrunesByStartTimeButNotARunThatMayStillBeRunning) {
  const std::string recent = runTick(1);
  const std::string long_ago = "2020-01-01T00:00:00.000Z";
  writeLog("old-finished",
           line("run.started", "old-finished", "", long_ago, {{"args", {}}}) +
               line("run.finished", "old-finished", "", "2020-01-01T00:00:01.000Z",
                    {{"status", "success"}, {"nodes", counts(0, 0, 0, 0)}}));
  // Started long ago, no run.finished, but its log changed just now: it may be running.
  writeLog("old-running", line("run.started", "old-running", "", long_ago, {{"args", {}}}));
  // The same, but its log has not changed for a day: killed long ago.
  writeLog("old-killed", line("run.started", "old-killed", "", long_ago, {{"args", {}}}));
  const auto killed_log = workspace() / "runs" / "old-killed.jsonl";
  std::filesystem::last_write_time(
      killed_log, std::filesystem::file_time_type::clock::now() - std::chrono::hours(24));

  auto r = oe({"gc", "--experience", dirArg(), "--older-than", "7d"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("removed 2 runs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("may be running"), std::string::npos) << r.out;
  EXPECT_EQ(runFiles(), (std::set<std::string>{recent, "old-running"}));
  EXPECT_EQ(SqliteProbe(workspace() / "cache" / "cache.sqlite").count("cache_entries"), 3);
}

TEST_F(Durability, GcNeedsAPolicyAndAValidDuration) {
  auto none = oe({"gc", "--experience", dirArg()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("--keep N"), std::string::npos) << none.err;
  auto bad = oe({"gc", "--experience", dirArg(), "--older-than", "7 days"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("\"7 days\" is not a duration; write a whole number and a unit: 7d, 12h, "
                         "30m or 45s"),
            std::string::npos)
      << bad.err;
  // Nothing to prune yet is fine.
  auto empty = oe({"gc", "--experience", dirArg(), "--keep", "3"});
  EXPECT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_NE(empty.out.find("removed 0 runs"), std::string::npos) << empty.out;
}

}  // namespace
}  // namespace oe::test

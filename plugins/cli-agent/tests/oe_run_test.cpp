// End to end: the real `oe` binary runs experiences with cli-agent nodes, the fake CLIs first on
// PATH, so the host's prompt rendering, events, state writes and timeout meet the plugin.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace oe::cliagent::test {
namespace {

using Json = nlohmann::ordered_json;  // as the other tests of this binary (unity build)

class OeRunTest : public ::testing::Test {
 protected:
  // The fake CLIs first, then oe's own PATH.
  static std::string pathWithFakes() {
    const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): read only
    return std::string(OE_CLI_AGENT_FIXTURE_BIN) + ":" + (path ? path : "/usr/bin:/bin");
  }
  // `search_path`: PATH for oe and the CLIs (default: the fakes, then oe's own PATH).
  oe::test::ProcessResult oeRun(std::optional<std::string> search_path = std::nullopt) {
    return oeRunIn(dir_.path(), {}, search_path.value_or(pathWithFakes()));
  }
  // `oe run <dir> --json <extra...>`; a fake CLI that runs appends to <dir>/record.jsonl.
  static oe::test::ProcessResult oeRunIn(const std::filesystem::path& dir,
                                         const std::vector<std::string>& extra,
                                         const std::string& search_path) {
    std::vector<std::string> argv{OE_CLI_AGENT_OE_EXE, "run", dir.string(), "--json"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return oe::test::runProcess(argv,
                                {{"OE_PLUGIN_PATH", ""},
                                 {"PATH", search_path},
                                 {"FAKE_CLI_RECORD", (dir / "record.jsonl").string()},
                                 {"FAKE_CLI_PEAK_DIR", dir.string()}},
                                dir);
  }
  std::vector<Json> lines(const std::filesystem::path& file) {
    std::vector<Json> out;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      out.push_back(Json::parse(line));
    }
    return out;
  }
  std::vector<Json> eventsOf(const Json& run, const std::string& type) {
    return eventsIn(dir_.path(), run, type);
  }
  std::vector<Json> eventsIn(const std::filesystem::path& dir, const Json& run,
                             const std::string& type) {
    std::vector<Json> out;
    const auto log =
        dir / ".openexpertise" / "runs" / (run["run_id"].get<std::string>() + ".jsonl");
    for (const Json& event : lines(log)) {
      if (event["type"] == type) {
        out.push_back(event);
      }
    }
    return out;
  }

  oe::test::TempDir dir_;
};

TEST_F(OeRunTest, ClaudeThenCodexPipeline) {
  dir_.write("experience.yaml", R"(name: cli-pipeline
version: 0.1.0
state:
  schema:
    summary: { type: string }
    critique: { type: string }
graph:
  nodes:
    - id: summarize
      kind: cli-agent
      provider: claude-code
      prompt: "stream summarize {{topic}}"  # the first word picks the fake's behaviour
      stream: true
      output_format: json
      writes: [summary]
      args: { topic: testing }
    - id: critique
      kind: cli-agent
      provider: codex
      prompt: "critique {{summary}}"
      reads: [summary]
      writes: [critique]
  edges:
    - { from: summarize, to: critique }
)");
  const auto result = oeRun();
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const Json run = Json::parse(result.out);
  EXPECT_EQ(run["status"], "success");
  EXPECT_EQ(run["final_state"]["summary"], "one file");
  EXPECT_EQ(run["final_state"]["critique"], "the answer");

  const auto runs = lines(dir_.path() / "record.jsonl");
  ASSERT_EQ(runs.size(), 2U);
  EXPECT_EQ(runs[0]["cli"], "claude");
  EXPECT_EQ(runs[0]["argv"][1], "stream summarize testing");
  EXPECT_EQ(runs[1]["cli"], "codex");
  EXPECT_EQ(runs[1]["argv"].back(), "critique one file") << "the host rendered the state";

  const auto tokens = eventsOf(run, "node.tokens");
  ASSERT_EQ(tokens.size(), 1U);
  EXPECT_EQ(tokens[0]["node_id"], "summarize");
  EXPECT_EQ(tokens[0]["input_tokens"], 120);
  EXPECT_EQ(tokens[0]["model"], "claude-fake-4");
  bool saw_tool = false;
  for (const Json& event : eventsOf(run, "node.activity")) {
    saw_tool = saw_tool || event["activity"] == "tool: Bash ls -la";
  }
  EXPECT_TRUE(saw_tool) << "stream-json tool uses are live node.activity events";
}

// The deadline leaves the fake CLI time to start its grandchild even on a loaded machine (a
// sanitizer build on 2 cores took over a second), so the kill is what is tested.
TEST_F(OeRunTest, TimeoutLeavesNoProcessBehind) {
  dir_.write("experience.yaml", R"(name: cli-timeout
version: 0.1.0
state:
  schema:
    out: { type: string }
graph:
  nodes:
    - id: stuck
      kind: cli-agent
      provider: claude-code
      prompt: "orphan"
      timeout_ms: 3000
      writes: [out]
  edges: []
)");
  const auto result = oeRun();
  EXPECT_NE(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE((result.out + result.err).find("timed out"), std::string::npos)
      << result.out << result.err;
  const pid_t grandchild = oe::test::pidIn(dir_.path() / "grandchild.pid");
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(oe::test::processGone(grandchild)) << "the TERM-ignoring grandchild was killed";
}

// runtime.limits.claude-code bounds the CLIs of a fan-out through the host's oe.limits slots:
// 8 items dispatched at once, never more than 2 claude processes alive at the same moment (the
// fake counts them under flock), and every item still runs.
TEST_F(OeRunTest, RuntimeLimitsCapTheClisRunningAtOnce) {
  dir_.write("experience.yaml", R"(name: cli-fan-out
version: 0.1.0
state:
  schema:
    items: { type: array }
graph:
  nodes:
    - id: seed
      kind: cli-agent
      provider: codex
      prompt: "items 12"
      output_format: json
      writes: [items]
    - id: each
      kind: cli-agent
      provider: claude-code
      prompt: "peak {{$item}}"
      for_each: { source: $.items, concurrency: 8 }
  edges:
    - { from: seed, to: each }
runtime:
  limits:
    claude-code: { max_in_flight: 2 }
)");
  const auto result = oeRun();
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const Json run = Json::parse(result.out);
  EXPECT_EQ(run["status"], "success");
  EXPECT_EQ(run["nodes"]["failed"], 0);

  size_t claude_runs = 0;
  for (const Json& line : lines(dir_.path() / "record.jsonl")) {
    claude_runs += line["cli"] == "claude" ? 1 : 0;
  }
  EXPECT_EQ(claude_runs, 12U) << "every item ran its CLI";
  std::ifstream peak_file(dir_.path() / "peak");
  int peak = 0;
  peak_file >> peak;
  EXPECT_GE(peak, 1);
  EXPECT_LE(peak, 2) << "runtime.limits.claude-code.max_in_flight is 2";
  EXPECT_EQ(std::ifstream(dir_.path() / "running").get(), '0') << "every fake CLI counted out";

  size_t waits = 0;
  for (const Json& event : eventsOf(run, "node.activity")) {
    waits += event["activity"] == "waiting for room under runtime.limits.claude-code" ? 1 : 0;
  }
  EXPECT_GT(waits, 0U) << "items waited for a slot: the limit, not the timing, kept the peak";
}

// Issue 12's preflight: a CLI missing from PATH fails the run before any node runs (the codex
// node first in the graph included), naming the file, line, node, field and program, both on a
// first run and on one that would reuse the spec snapshot of an earlier good run.
TEST_F(OeRunTest, AMissingCliFailsTheRunBeforeAnyNodeRuns) {
  dir_.write("experience.yaml", R"(name: cli-preflight
version: 0.1.0
state:
  schema:
    a: { type: string }
    b: { type: string }
graph:
  nodes:
    - id: first
      kind: cli-agent
      provider: codex
      prompt: "hello"
      writes: [a]
    - id: review
      kind: cli-agent
      provider: claude-code
      prompt: "hello"
      writes: [b]
  edges:
    - { from: first, to: review }
)");
  // A PATH with the fake codex only (and what python3 needs to start it).
  const auto only_codex = dir_.path() / "only-codex";
  std::filesystem::create_directories(only_codex);
  std::filesystem::create_symlink(std::filesystem::path(OE_CLI_AGENT_FIXTURE_BIN) / "codex",
                                  only_codex / "codex");
  const std::string lacking_claude = only_codex.string() + ":/usr/bin:/bin";
  const auto runs = dir_.path() / ".openexpertise" / "runs";
  auto expectRefused = [&](const char* when) {
    const auto result = oeRun(lacking_claude);
    EXPECT_EQ(result.exit_code, 1) << when << result.out << result.err;
    for (const char* part : {"experience.yaml:16:17: ", "error: node \"review\": provider:",
                             "runs the program `claude`, which is not on PATH",
                             "Install it, or put the directory that holds it on PATH"}) {
      EXPECT_NE(result.err.find(part), std::string::npos) << when << ": " << part << "\n"
                                                          << result.err;
    }
  };

  expectRefused("first run");
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "record.jsonl")) << "no CLI ran";
  EXPECT_FALSE(std::filesystem::exists(runs)) << "no run was started";

  const auto good = oeRun();  // writes the spec snapshot a later run would reuse
  ASSERT_EQ(good.exit_code, 0) << good.out << good.err;
  const size_t runs_before = std::distance(std::filesystem::directory_iterator(runs), {});
  const size_t clis_before = lines(dir_.path() / "record.jsonl").size();
  expectRefused("with a spec snapshot");
  EXPECT_EQ(lines(dir_.path() / "record.jsonl").size(), clis_before) << "no CLI ran";
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(runs), {}),
            static_cast<std::ptrdiff_t>(runs_before))
      << "no run was started";
}

// What a run's log says the nodes did, without what differs from one run to the next (times,
// the run id) or between a live run and its replay (the live run spawns a CLI, the replay says
// it replays one): node.activity, node.tokens, state.write and node.finished in order, per node
// (nodes that run at once interleave their events differently from one run to the next).
std::map<std::string, std::vector<std::string>> nodeStory(const std::vector<Json>& events) {
  std::map<std::string, std::vector<std::string>> out;
  for (const Json& event : events) {
    const std::string type = event.value("type", "");
    const std::string node = event.value("node_id", "");
    if (type == "node.activity") {
      std::string activity = event.value("activity", "");
      if (activity.starts_with("spawning ") || activity.starts_with("replaying ")) {
        activity = "<start>";
      }
      out[node].push_back("activity " + activity);
    } else if (type == "node.tokens") {
      Json fields = event;
      for (const char* key : {"ts", "run_id", "type", "node_id"}) {
        fields.erase(key);
      }
      out[node].push_back("tokens " + fields.dump());
    } else if (type == "node.finished" || type == "node.failed" || type == "state.write") {
      Json fields = event;
      for (const char* key : {"ts", "run_id", "duration_ms", "type", "node_id"}) {
        fields.erase(key);
      }
      out[node].push_back(type + " " + fields.dump());
    }
  }
  return out;
}

constexpr const char* kRecordedPipeline = R"(name: cli-recorded
version: 0.1.0
state:
  schema:
    summary: { type: string }
    critique: { type: string }
    gist: { type: string }
graph:
  nodes:
    - id: summarize
      kind: cli-agent
      provider: claude-code
      prompt: "stream summarize {{topic}}"  # the first word picks the fake's behaviour
      stream: true
      output_format: json
      writes: [summary]
      args: { topic: testing }
    - id: critique
      kind: cli-agent
      provider: codex
      prompt: "critique {{summary}}"
      reads: [summary]
      writes: [critique]
    - id: gist
      kind: cli-agent
      provider: codex
      prompt: "stream the gist"
      stream: true
      env: { FAKE_VAR: "1" }
      reads: [summary]
      writes: [gist]
  edges:
    - { from: summarize, to: critique }
    - { from: summarize, to: gist }
)";

// --llm-record covers the CLIs: a run through the fake claude and codex recorded, then replayed
// in a fresh copy of the experience with no CLI on PATH at all, ends in the same state with the
// same node events (activities from the recorded streams, node.tokens, state writes), and
// starts no CLI.
TEST_F(OeRunTest, ARecordedRunReplaysWithoutTheClis) {
  const std::string yaml = kRecordedPipeline;
  dir_.write("experience.yaml", yaml);
  const auto recording = dir_.path() / "cli-runs.jsonl";
  const auto recorded = oeRunIn(dir_.path(), {"--llm-record", recording.string()}, pathWithFakes());
  ASSERT_EQ(recorded.exit_code, 0) << recorded.out << recorded.err;
  const Json live = Json::parse(recorded.out);
  EXPECT_EQ(live["final_state"]["summary"], "one file");
  EXPECT_EQ(live["final_state"]["critique"], "the answer");
  EXPECT_EQ(live["final_state"]["gist"], R"({"summary": "one file"})") << "codex's last message";
  EXPECT_EQ(lines(dir_.path() / "record.jsonl").size(), 3U) << "three CLIs ran";
  const auto entries = lines(recording);
  ASSERT_EQ(entries.size(), 3U);
  for (const Json& entry : entries) {
    EXPECT_EQ(entry["type"], "cli");
    EXPECT_EQ(entry["request"]["workdir"], ".") << "relative to the experience";
    EXPECT_EQ(entry["response"]["exit_code"], 0);
  }

  oe::test::TempDir copy;
  copy.write("experience.yaml", yaml);
  const auto replayed =
      oeRunIn(copy.path(), {"--llm-replay", recording.string()}, "/nonexistent-bin");
  ASSERT_EQ(replayed.exit_code, 0) << replayed.out << replayed.err;
  const Json again = Json::parse(replayed.out);
  EXPECT_EQ(again["status"], "success");
  EXPECT_EQ(again["final_state"], live["final_state"]);
  EXPECT_EQ(again["usage"], live["usage"]) << "tokens and cost count the same";
  EXPECT_FALSE(std::filesystem::exists(copy.path() / "record.jsonl")) << "no CLI ran";

  const auto story = [&](const std::filesystem::path& dir, const Json& run) {
    const auto log =
        dir / ".openexpertise" / "runs" / (run["run_id"].get<std::string>() + ".jsonl");
    return nodeStory(lines(log));
  };
  auto live_story = story(dir_.path(), live);
  EXPECT_EQ(story(copy.path(), again), live_story);
  const auto has = [&](const std::string& node, const std::string& line) {
    const auto& lines = live_story[node];
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  };
  EXPECT_TRUE(has("summarize", "activity tool: Bash ls -la")) << "claude's stream, replayed";
  EXPECT_TRUE(has("gist", "activity tool: shell bash -lc ls")) << "codex's --json, replayed";
  EXPECT_EQ(live_story.size(), 3U);
  size_t replaying = 0;
  for (const Json& event : eventsIn(copy.path(), again, "node.activity")) {
    replaying += event["activity"].get<std::string>().starts_with("replaying ") ? 1 : 0;
  }
  EXPECT_EQ(replaying, 3U);
}

// A replay meets a node whose command changed since the recording: it fails naming the node,
// the provider and the file and saying to re-record, and starts no CLI even with them on PATH.
TEST_F(OeRunTest, AReplayWithoutTheNodesRunFailsAndSaysToReRecord) {
  const std::string yaml = R"(name: cli-missing
version: 0.1.0
state:
  schema:
    out: { type: string }
graph:
  nodes:
    - id: review
      kind: cli-agent
      provider: claude-code
      prompt: "look at {{what}}"
      args: { what: PROMPT_ARG }
      writes: [out]
  edges: []
)";
  auto with = [&](const std::string& what) {
    std::string text = yaml;
    text.replace(text.find("PROMPT_ARG"), std::string("PROMPT_ARG").size(), what);
    return text;
  };
  dir_.write("experience.yaml", with("a.txt"));
  const auto recording = dir_.path() / "rec.jsonl";
  const auto recorded = oeRunIn(dir_.path(), {"--llm-record", recording.string()}, pathWithFakes());
  ASSERT_EQ(recorded.exit_code, 0) << recorded.out << recorded.err;

  oe::test::TempDir copy;
  copy.write("experience.yaml", with("b.txt"));
  const auto replayed = oeRunIn(copy.path(), {"--llm-replay", recording.string()}, pathWithFakes());
  EXPECT_EQ(replayed.exit_code, 1) << replayed.out << replayed.err;
  const Json run = Json::parse(replayed.out);
  ASSERT_EQ(run["failures"].size(), 1U) << replayed.out;
  const std::string error = run["failures"][0]["error"].get<std::string>();
  for (const std::string& part : std::vector<std::string>{
           "node \"review\": no recorded claude-code run for this command", recording.string(),
           "re-record with `oe run <experience> --llm-record " + recording.string()}) {
    EXPECT_NE(error.find(part), std::string::npos) << part << "\n" << error;
  }
  EXPECT_FALSE(std::filesystem::exists(copy.path() / "record.jsonl"))
      << "a replay starts no CLI, even one on PATH";
}

// The tokens a CLI reports count against runtime.budget, live and on replay alike: the first
// claude run spends 127 tokens of 100, so the second may not start, and the run stops with
// budget_exhausted both times.
TEST_F(OeRunTest, CliTokensCountAgainstTheBudgetOnReplayToo) {
  const std::string yaml = R"(name: cli-budget
version: 0.1.0
state:
  schema:
    security_findings: { type: array }
    b: { type: string }
graph:
  nodes:
    - id: first
      kind: cli-agent
      provider: claude-code
      prompt: "envelope one"
      output_format: json
      writes: [security_findings]
    - id: second
      kind: cli-agent
      provider: claude-code
      prompt: "hello"
      writes: [b]
  edges:
    - { from: first, to: second }
runtime:
  budget: { max_tokens: 100 }
)";
  dir_.write("experience.yaml", yaml);
  const auto recording = dir_.path() / "rec.jsonl";
  const auto check = [](const oe::test::ProcessResult& result, const char* when) {
    EXPECT_EQ(result.exit_code, 1) << when << result.out << result.err;
    const Json run = Json::parse(result.out);
    EXPECT_EQ(run["reason"], "budget_exhausted") << when;
    EXPECT_EQ(run["usage"]["input_tokens"], 120) << when;
    EXPECT_EQ(run["usage"]["output_tokens"], 7) << when;
    // Stopped by the budget: cancelled, not failed.
    EXPECT_TRUE(run["failures"].empty()) << when;
    ASSERT_EQ(run["cancelled"].size(), 1U) << when;
    EXPECT_EQ(run["cancelled"][0]["node_id"], "second") << when;
    EXPECT_NE(run["cancelled"][0]["error"].get<std::string>().find(
                  "run budget exhausted: runtime.budget.max_tokens is 100 and 127 are spent"),
              std::string::npos)
        << when << run["cancelled"][0]["error"];
  };
  check(oeRunIn(dir_.path(), {"--llm-record", recording.string()}, pathWithFakes()), "live");
  EXPECT_EQ(lines(dir_.path() / "record.jsonl").size(), 1U) << "the second CLI never started";

  oe::test::TempDir copy;
  copy.write("experience.yaml", yaml);
  check(oeRunIn(copy.path(), {"--llm-replay", recording.string()}, "/nonexistent-bin"), "replay");
}

}  // namespace
}  // namespace oe::cliagent::test

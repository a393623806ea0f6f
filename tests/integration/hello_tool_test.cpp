// The README's promise: hello-tool runs, prints its greeting, persists it, and caches it; and
// the README's command lines do what they say.
#include <algorithm>

#include "oe_fixture.hpp"

namespace oe::test {
namespace {

// What marks a README line that cannot run in the test (see TheReadmesUsingItLinesRunAsShown).
constexpr std::string_view kNotRunnableHere[] = {
    "<", "path/to/", "postgresql://", "gh:", " mcp ", " doctor", " demo "};

class HelloTool : public OeTest {
 protected:
  void SetUp() override {
    // The example's files only: a user who ran the README's first command has a
    // .openexpertise/ (state and cache) in the example, which must not leak into the test.
    const auto example = std::filesystem::path(OE_SOURCE_DIR) / "examples" / "hello-tool";
    for (const auto& entry : std::filesystem::directory_iterator(example)) {
      if (entry.path().filename() != ".openexpertise") {
        std::filesystem::copy(entry.path(), dir_.path() / entry.path().filename(),
                              std::filesystem::copy_options::recursive);
      }
    }
  }
};

TEST_F(HelloTool, RunPrintsGreetingAndWritesEventsAndState) {
  auto r = oe({"run", dir_.path().string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("greeting: \"hello, World\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": success"), std::string::npos) << r.out;

  auto state = oe({"state", "greeting", "--experience", dir_.path().string()});
  EXPECT_EQ(state.exit_code, 0);
  EXPECT_EQ(state.out, "\"hello, World\"\n");

  // The log names the run; its first line is run.started and it has the state write.
  const auto runs = dir_.path() / ".openexpertise" / "runs";
  ASSERT_TRUE(std::filesystem::exists(runs));
  std::string run_id;
  for (const auto& e : std::filesystem::directory_iterator(runs)) {
    if (e.path().extension() == ".jsonl") {
      run_id = e.path().stem().string();
    }
  }
  auto evs = events(run_id);
  ASSERT_GE(evs.size(), 5u);
  EXPECT_EQ(evs.front()["type"], "run.started");
  EXPECT_EQ(evs.back()["type"], "run.finished");
  EXPECT_EQ(evs.back()["status"], "success");
  bool wrote = false;
  for (const auto& e : evs) {
    wrote = wrote || (e["type"] == "state.write" && e["field"] == "greeting");
  }
  EXPECT_TRUE(wrote);
}

TEST_F(HelloTool, SecondRunReplaysFromCacheAndNoCacheRunsAgain) {
  auto first = runJson();
  EXPECT_EQ(first["nodes"]["ran"], 1);
  auto second = runJson();
  EXPECT_EQ(second["nodes"]["ran"], 0);
  EXPECT_EQ(second["nodes"]["cached"], 1);
  EXPECT_EQ(second["final_state"]["greeting"], "hello, World");
  auto evs = events(second["run_id"]);
  EXPECT_EQ(count(evs, "node.started"), 0u);  // a cache hit has no node.started (reference §3.7)
  EXPECT_EQ(count(evs, "node.finished"), 1u);
  auto third = runJson({"--no-cache"});
  EXPECT_EQ(third["nodes"]["ran"], 1);
}

// The README's `--args` line: the run's args reach the tool, as the node sets no `name` of its
// own (which would win, D1), and that run is not served the entry of a run without them.
TEST_F(HelloTool, RunArgsReachTheToolAndAreNotServedAnotherRunsCacheEntry) {
  EXPECT_EQ(runJson()["final_state"]["greeting"], "hello, World");
  auto you = runJson({"--args", R"({"name":"you"})", "--concurrency", "4"});
  EXPECT_EQ(you["status"], "success") << you.dump(2);
  EXPECT_EQ(you["final_state"]["greeting"], "hello, you");
  EXPECT_EQ(you["nodes"]["ran"], 1);
  EXPECT_EQ(you["nodes"]["cached"], 0);
  auto plain = runJson();
  EXPECT_EQ(plain["final_state"]["greeting"], "hello, World");
  EXPECT_EQ(plain["nodes"]["cached"], 1);
}

// The README's "Using it" block, pasted as shown in a folder holding examples/hello-tool, in its
// order: every line that can run here exits 0. Left out: lines with a placeholder (`<run-id>`,
// path/to/...) and those that need PostgreSQL, the network, a pushed git repository, an MCP
// client, this machine's coding CLIs (`oe doctor`) or a longer recorded run (`oe demo`).
TEST_F(HelloTool, TheReadmesUsingItLinesRunAsShown) {
  std::ifstream readme(std::filesystem::path(OE_SOURCE_DIR) / "README.md");
  std::vector<std::string> lines;
  bool section = false;
  bool block = false;
  for (std::string line; std::getline(readme, line);) {
    if (line == "## Using it") {
      section = true;
    } else if (section && line.starts_with("```")) {
      if (block) {
        break;  // the section's first block only
      }
      block = true;
    } else if (block && line.starts_with("$oe ")) {
      lines.push_back(line);
    }
  }
  ASSERT_GE(lines.size(), 20u) << "the README's \"Using it\" block moved?";
  const auto sandbox = dir_ / "readme";
  std::filesystem::create_directories(sandbox / "examples");
  std::filesystem::copy(std::filesystem::path(OE_SOURCE_DIR) / "examples" / "hello-tool",
                        sandbox / "examples" / "hello-tool",
                        std::filesystem::copy_options::recursive);
  std::filesystem::remove_all(sandbox / "examples" / "hello-tool" / ".openexpertise");
  size_t ran = 0;
  for (const std::string& line : lines) {
    const bool skipped = std::any_of(
        std::begin(kNotRunnableHere), std::end(kNotRunnableHere),
        [&line](std::string_view marker) { return line.find(marker) != std::string::npos; });
    if (skipped) {
      continue;
    }
    auto r = runProcess({"/bin/sh", "-c", "oe=\"$0\"; " + line, OE_EXE}, {{"OE_PLUGIN_PATH", ""}},
                        sandbox);
    EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.err;
    ++ran;
  }
  EXPECT_GE(ran, 15u);
}

TEST_F(HelloTool, ResetStateNeedsYesAndRemovesWalFiles) {
  ASSERT_EQ(oe({"run", dir_.path().string(), "-q"}).exit_code, 0);
  auto refused = oe({"reset-state", "--experience", dir_.path().string()});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("requires --yes"), std::string::npos);
  auto reset = oe({"reset-state", "--yes", "--experience", dir_.path().string()});
  EXPECT_EQ(reset.exit_code, 0) << reset.err;
  const auto ws = dir_.path() / ".openexpertise";
  EXPECT_FALSE(std::filesystem::exists(ws / "state.sqlite"));
  EXPECT_FALSE(std::filesystem::exists(ws / "state.sqlite-wal"));
  EXPECT_FALSE(std::filesystem::exists(ws / "state.sqlite-shm"));
  auto again = oe({"reset-state", "--yes", "--experience", dir_.path().string()});
  EXPECT_NE(again.out.find("no state to reset"), std::string::npos);
  auto none = oe({"state", "--experience", dir_.path().string()});
  EXPECT_NE(none.out.find("does not exist yet"), std::string::npos);
}

TEST_F(HelloTool, InspectPrintsTheTimeline) {
  auto run = runJson();
  auto r = oe({"inspect", run["run_id"], "--experience", dir_.path().string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("success"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("greet"), std::string::npos) << r.out;
  auto missing = oe({"inspect", "no-such-run", "--experience", dir_.path().string()});
  EXPECT_EQ(missing.exit_code, 2);  // no such run is a bad invocation (issue 10)
}

TEST_F(HelloTool, BadInvocationsExitTwo) {
  EXPECT_EQ(oe({"run", dir_.path().string(), "--args", "{not json"}).exit_code, 2);
  EXPECT_EQ(oe({"run", dir_.path().string(), "--concurrency", "abc"}).exit_code, 2);
  EXPECT_EQ(oe({"run", dir_.path().string(), "--concurrency", "0"}).exit_code, 2);
  EXPECT_EQ(oe({"no-such-command"}).exit_code, 2);
  // A path that holds no experience (the README's "a folder that is not an experience"), said.
  auto missing = oe({"run", (dir_ / "nowhere").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nowhere/experience.yaml does not exist"), std::string::npos)
      << missing.err;
  std::filesystem::create_directories(dir_ / "empty");
  auto empty = oe({"run", (dir_ / "empty").string()});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("is not an experience: the folder has no experience.yaml"),
            std::string::npos)
      << empty.err;
  auto file = oe({"run", (dir_ / "README.md").string()});
  EXPECT_EQ(file.exit_code, 2);
  EXPECT_NE(file.err.find("is not an experience"), std::string::npos) << file.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "empty" / ".openexpertise")) << "nothing recorded";
}

}  // namespace
}  // namespace oe::test

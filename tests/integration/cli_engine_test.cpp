// The CLI side of issue 10 that needs the run engine's side too: a signal ends a run
// `interrupted` (exit 128 + signal), `oe resume` continues the chain of the run it resumes,
// `--fresh` starts from an empty state, `--wait` queues behind a run that holds the state.
#include <signal.h>
#include <sys/wait.h>

#include "live_oe.hpp"
#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using nlohmann::json;

// `hang` never settles when the run's args say so, else it appends "x" to `items`.
constexpr std::string_view kChainYaml = R"(name: cli
version: 0.1.0
state:
  schema:
    items: {type: array, merge: array_append}
graph:
  nodes:
    - {id: work, kind: tool, impl: ./tools/work.mjs, writes: [items]}
  edges: []
)";
constexpr std::string_view kChainWorkJs = R"(export default async function (args) {
  if (args.hang) { setInterval(() => {}, 60000); await new Promise(() => {}); }
  return { state_delta: { items: ['x'] } };
}
)";

class CliEngineTest : public OeTest {
 protected:
  void SetUp() override {
    writeExperience(kChainYaml);
    writeTool("work.mjs", kChainWorkJs);
  }
  // A run that hangs in `work`, started and seen running.
  std::unique_ptr<LiveOe> hangingRun(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"run", dir_.path().string(), "--args", R"({"hang":true})"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto run = std::make_unique<LiveOe>(
        args, std::map<std::string, std::string>{{"OE_STILL_RUNNING_INTERVAL_MS", "20"}},
        dir_.path());
    EXPECT_TRUE(run->waitForStderr("still running: work")) << run->err();
    return run;
  }
};

TEST_F(CliEngineTest, SigintEndsTheRunInterruptedWithExit130AndAResumeLine) {
  auto run = hangingRun();
  run->signal(SIGINT);
  const int status = run->wait();
  ASSERT_TRUE(WIFEXITED(status)) << "killed by the signal instead of handling it";
  EXPECT_EQ(WEXITSTATUS(status), 130) << run->out() << run->err();
  EXPECT_NE(run->out().find(": interrupted in "), std::string::npos) << run->out();
  EXPECT_NE(run->out().find("run `oe resume "), std::string::npos) << run->out();

  auto runs = oe({"runs", "--json", "--experience", dir_.path().string()});
  json list = json::parse(runs.out);
  ASSERT_EQ(list.size(), 1U) << runs.out;
  EXPECT_EQ(list[0]["status"], "interrupted");
}

TEST_F(CliEngineTest, SigtermEndsTheRunInterruptedWithExit143) {
  auto run = hangingRun();
  run->signal(SIGTERM);
  const int status = run->wait();
  ASSERT_TRUE(WIFEXITED(status)) << "killed by the signal instead of handling it";
  EXPECT_EQ(WEXITSTATUS(status), 143) << run->out() << run->err();
  EXPECT_NE(run->out().find(": interrupted in "), std::string::npos) << run->out();
}

TEST_F(CliEngineTest, ResumeContinuesTheChainOfTheRunItResumes) {
  json first = runJson({"-q"});
  const std::string first_id = first["run_id"];
  EXPECT_EQ(events(first_id).front()["chain_id"], first_id);

  auto resumed = oe({"resume", first_id, "--json", "-q"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto second_id = json::parse(resumed.out)["run_id"].get<std::string>();
  EXPECT_EQ(events(second_id).front()["chain_id"], first_id);

  auto again = oe({"resume", second_id, "--json", "-q"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const json third = json::parse(again.out);
  EXPECT_EQ(third["chain_id"], first_id);
  EXPECT_EQ(events(third["run_id"].get<std::string>()).front()["chain_id"], first_id);
  // A resume never applies a write twice: the chain appended "x" once.
  EXPECT_EQ(third["final_state"]["items"], json::array({"x"}));
}

TEST_F(CliEngineTest, ALogWithoutAChainIdStartsItsOwnChain) {
  const std::string old_id = "0ld00000-0000-4000-8000-000000000000";
  dir_.write(".openexpertise/runs/" + old_id + ".jsonl", json{{"type", "run.started"},
                                                              {"run_id", old_id},
                                                              {"ts", "2026-01-01T00:00:00.000Z"},
                                                              {"args", json::object()}}
                                                                 .dump() +
                                                             "\n");
  auto resumed = oe({"resume", old_id, "--json", "-q"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto id = json::parse(resumed.out)["run_id"].get<std::string>();
  EXPECT_EQ(events(id).front()["chain_id"], old_id);
}

TEST_F(CliEngineTest, ASecondRunAppendsAgainAndFreshStartsEmpty) {
  EXPECT_EQ(runJson({"-q"})["final_state"]["items"], json::array({"x"}));
  EXPECT_EQ(runJson({"-q"})["final_state"]["items"], json::array({"x", "x"}));
  json fresh = runJson({"-q", "--fresh"});
  EXPECT_EQ(fresh["final_state"]["items"], json::array({"x"}));
  EXPECT_EQ(fresh["nodes"]["cached"], 1);  // the cache still serves
}

TEST_F(CliEngineTest, WaitQueuesBehindARunThatHoldsTheState) {
  auto holder = hangingRun();
  // Without --wait the second run refuses, and says how to queue.
  auto refused = oe({"run", dir_.path().string(), "-q"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("--wait"), std::string::npos) << refused.err;

  LiveOe waiting({"run", dir_.path().string(), "--json", "-q", "--wait"}, {}, dir_.path());
  // The engine says on stderr that it waits (and for which run), so the test knows when.
  ASSERT_TRUE(waiting.waitForStderr("waiting for")) << waiting.err();
  holder->signal(SIGTERM);
  holder->wait();
  const int status = waiting.wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << waiting.err();
  json out = json::parse(waiting.out());
  EXPECT_EQ(out["status"], "success");
}

}  // namespace
}  // namespace oe::test

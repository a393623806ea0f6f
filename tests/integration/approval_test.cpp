// Durable human approvals (docs/policy.md, "Approvals") through the real `oe`: a run parks
// (status waiting, exit 75, nothing held), `oe approve` an hour later (simulated clock,
// OE_APPROVALS_NOW) continues it to the final state a run approved at once reaches; a rejection
// follows on_error; each on_timeout decides a passed deadline; a run killed -9 while parking is
// approved and continued; of two approvers at once one wins and the other is told. A pipeline
// stage and a loop body ask per item and per iteration, and a chain of such decisions, a crash
// among them, reaches the state of a run that never asked, running nothing twice.
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <iterator>
#include <string>

#include "integration/live_oe.hpp"
#include "integration/oe_fixture.hpp"
#include "support/pg_test_db.hpp"

namespace oe::test {
namespace {

using nlohmann::json;

constexpr int kExitWaiting = 75;
constexpr const char* kT0 = "2026-03-01T09:00:00.000Z";
constexpr const char* kT0PlusHour = "2026-03-01T10:00:00.000Z";
constexpr const char* kT0Plus3Hours = "2026-03-01T12:00:00.000Z";

constexpr std::string_view kSeedSh = R"SH(#!/bin/sh
cat > /dev/null
printf '{"state_delta":{"draft":"v1","items":[1,2,3]}}\n'
)SH";
constexpr std::string_view kSideSh = R"SH(#!/bin/sh
cat > /dev/null
printf '{"state_delta":{"side":"done"}}\n'
)SH";
constexpr std::string_view kShipSh = R"SH(#!/bin/sh
cat > /dev/null
printf '{"state_delta":{"shipped":true}}\n'
)SH";
constexpr std::string_view kEachSh = R"SH(#!/bin/sh
item=$(cat | sed -n 's/.*"\$item":\([0-9]*\).*/\1/p')
printf '{"state_delta":{"results":["r%s"]}}\n' "$item"
)SH";

// A pipeline's two stages and a loop's body; each appends what it did to calls.txt beside
// tools/ once it is done (so a count of lines is a count of calls that completed).
constexpr std::string_view kApprovalCheckSh = R"SH(#!/bin/sh
item=$(cat | sed -n 's/.*"\$item":\([0-9]*\).*/\1/p')
echo "check $item" >> "$(dirname "$0")/../calls.txt"
printf '{"state_delta":{"results":["c%s"]},"edge_output":{"n":%s}}\n' "$item" "$item"
)SH";
constexpr std::string_view kApprovalTallySh = R"SH(#!/bin/sh
n=$(cat | sed -n 's/.*"n":\([0-9]*\).*/\1/p')
echo "tally $n" >> "$(dirname "$0")/../calls.txt"
printf '{"state_delta":{"results":["t%s"]}}\n' "$n"
)SH";
// Iteration N waits for a file `go` when a file `blockN` exists (after saying so in `blocked`).
constexpr std::string_view kApprovalStepSh = R"SH(#!/bin/sh
iter=$(cat | sed -n 's/.*"\$iter":\([0-9]*\).*/\1/p')
dir="$(dirname "$0")/.."
echo "$iter" >> "$dir/started.txt"
if [ -f "$dir/block$iter" ]; then
  touch "$dir/blocked"
  while [ ! -f "$dir/go" ]; do sleep 0.02; done
fi
echo "$iter" >> "$dir/calls.txt"
printf '{"state_delta":{"results":["s%s"]}}\n' "$iter"
)SH";

// seed -> pipeline p over $.items: stages check (asks per item when `ask`) then tally.
std::string approvalStagedExperience(bool ask) {
  return std::string(
             "name: staged\nversion: 1.0.0\nstate:\n  schema:\n"
             "    draft: { type: string }\n    items: { type: array }\n"
             "    results: { type: array, merge: array_append }\ngraph:\n  nodes:\n"
             "    - { id: seed, kind: tool, impl: ./tools/seed.sh, writes: [draft, items] }\n"
             "    - { id: check, kind: tool, impl: ./tools/check.sh, writes: [results]") +
         (ask ? ",\n        approval: { prompt: Check this item, show: [$.draft] } }\n" : " }\n") +
         "    - { id: tally, kind: tool, impl: ./tools/tally.sh, writes: [results] }\n"
         "  edges: []\n  pipelines:\n    - { id: p, items: $.items, stages: [check, tally] }\n";
}

// Loop l runs step 3 times (asking before each when `approval` is not empty: its mapping);
// ship waits for the loop.
std::string approvalLoopExperience(const std::string& approval) {
  return "name: looped\nversion: 1.0.0\nstate:\n  schema:\n"
         "    results: { type: array, merge: array_append }\n    shipped: { type: boolean }\n"
         "graph:\n  nodes:\n"
         "    - { id: step, kind: tool, impl: ./tools/step.sh, writes: [results]" +
         (approval.empty() ? std::string(" }\n") : ", approval: " + approval + " }\n") +
         "    - { id: ship, kind: tool, impl: ./tools/ship.sh, writes: [shipped] }\n"
         "  edges:\n    - { from: step, to: ship }\n"
         "  loops:\n    - { id: l, body: step, max_iters: 3 }\n";
}

// seed -> review (the gate) -> ship (when approved) -> each (for_each over items); seed -> side,
// which runs while the gate waits. `gate_extra` goes into the gate's mapping.
std::string gatedExperience(
    const std::string& gate_extra = "timeout: 2h\n      on_timeout: reject\n") {
  return "name: gated\nversion: 1.0.0\nruntime: { concurrency: 2 }\nstate:\n  schema:\n"
         "    draft: { type: string }\n    items: { type: array }\n"
         "    decision: { type: object }\n    side: { type: string }\n"
         "    shipped: { type: boolean }\n    results: { type: array, merge: array_append }\n"
         "graph:\n  nodes:\n"
         "    - { id: seed, kind: tool, impl: ./tools/seed.sh, writes: [draft, items] }\n"
         "    - { id: side, kind: tool, impl: ./tools/side.sh, writes: [side] }\n"
         "    - id: review\n      kind: approval\n      prompt: Ship the draft\n"
         "      show: [$.draft]\n      writes: [decision]\n      " +
         gate_extra +
         "    - { id: ship, kind: tool, impl: ./tools/ship.sh, writes: [shipped] }\n"
         "    - { id: each, kind: tool, impl: ./tools/each.sh, writes: [results],\n"
         "        for_each: { source: $.items } }\n"
         "  edges:\n    - { from: seed, to: review }\n    - { from: seed, to: side }\n"
         "    - { from: review, to: ship, when: \"$.decision.approved == true\" }\n"
         "    - { from: ship, to: each }\n";
}

class ApprovalTest : public OeTest {
 protected:
  // An experience folder under the test's dir.
  std::filesystem::path setUp(const std::string& name, const std::string& yaml) {
    const std::filesystem::path sub = dir_.path() / name;
    std::filesystem::create_directories(sub / "tools");
    std::ofstream(sub / "experience.yaml") << yaml;
    for (auto [file, text] :
         {std::pair{"seed.sh", kSeedSh}, std::pair{"side.sh", kSideSh},
          std::pair{"ship.sh", kShipSh}, std::pair{"each.sh", kEachSh},
          std::pair{"check.sh", kApprovalCheckSh}, std::pair{"tally.sh", kApprovalTallySh},
          std::pair{"step.sh", kApprovalStepSh}}) {
      const auto path = sub / "tools" / file;
      std::ofstream(path) << text;
      std::filesystem::permissions(path, std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add);
    }
    return sub;
  }
  // `oe <args>` at the simulated time `now`, always on SQLite (approvals live there for now).
  ProcessResult at(const char* now, std::vector<std::string> args) {
    auto env = sqliteReferenceEnv();
    env.erase("OE_PLUGIN_PATH");
    env["OE_APPROVALS_NOW"] = now;
    return oe(std::move(args), env);
  }
  static json parsed(const ProcessResult& r) {
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "stdout: " << r.out << "\nstderr: " << r.err;
    return j;
  }
  std::vector<json> logOf(const std::filesystem::path& exp, const std::string& run_id) {
    std::ifstream in(exp / ".openexpertise" / "runs" / (run_id + ".jsonl"));
    std::vector<json> out;
    std::string line;
    while (std::getline(in, line)) {
      out.push_back(json::parse(line));
    }
    return out;
  }
  static std::string fileText(const std::filesystem::path& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // `oe <args>` at `now` that parks on exactly `key`: its summary.
  json parksOn(const char* now, std::vector<std::string> args, const std::string& key) {
    const auto r = at(now, std::move(args));
    EXPECT_EQ(r.exit_code, kExitWaiting) << r.out << r.err;
    json summary = parsed(r);
    EXPECT_EQ(summary.value("status", ""), "waiting") << r.out;
    EXPECT_EQ(summary["waiting"], json::array({key})) << r.out;
    return summary;
  }
  // Runs until parked: the summary, after checking exit code 75 and status waiting.
  json parkedRun(const std::filesystem::path& exp) {
    const auto r = at(kT0, {"run", exp.string(), "--json"});
    EXPECT_EQ(r.exit_code, kExitWaiting) << r.err;
    json summary = parsed(r);
    EXPECT_EQ(summary.value("status", ""), "waiting") << r.out;
    EXPECT_EQ(summary["waiting"], json::array({"review"}));
    return summary;
  }
};

TEST_F(ApprovalTest, ParksExitsAndAnApprovalAnHourLaterReachesTheStateOfOneGivenAtOnce) {
  const auto later = setUp("later", gatedExperience());
  const json parked = parkedRun(later);
  const std::string run_id = parked["run_id"];
  // Everything that did not wait ran and is committed: seed, and side beside the gate.
  EXPECT_EQ(parked["final_state"]["draft"], "v1");
  EXPECT_EQ(parked["final_state"]["side"], "done");
  EXPECT_FALSE(parked["final_state"].contains("shipped"));
  const auto log = logOf(later, run_id);
  ASSERT_EQ(count(log, "approval.waiting", "review"), 1u);
  for (const auto& e : log) {
    if (e.value("type", "") == "approval.waiting") {
      EXPECT_EQ(e["prompt"], "Ship the draft");
      EXPECT_EQ(e["show"], json({{"$.draft", "v1"}}));
      EXPECT_EQ(e["deadline"], "2026-03-01T11:00:00.000Z");
    }
  }
  EXPECT_EQ(log.back().value("status", ""), "waiting");

  // The parked run is listed with its question and what it shows.
  const auto waiting = at(kT0PlusHour, {"runs", "--waiting", "--experience", later.string()});
  ASSERT_EQ(waiting.exit_code, 0) << waiting.err;
  EXPECT_NE(waiting.out.find(run_id), std::string::npos) << waiting.out;
  EXPECT_NE(waiting.out.find("node \"review\": Ship the draft"), std::string::npos) << waiting.out;
  EXPECT_NE(waiting.out.find("$.draft = \"v1\""), std::string::npos) << waiting.out;

  // An hour later (within the 2h deadline): approved, and the run continues in this process.
  const auto approved = at(kT0PlusHour, {"approve", run_id, "review", "--comment", "ship it",
                                         "--as", "ana", "--json", "--experience", later.string()});
  ASSERT_EQ(approved.exit_code, 0) << approved.err;
  const json continued = parsed(approved);
  EXPECT_EQ(continued.value("status", ""), "success") << approved.out;
  EXPECT_EQ(continued["chain_id"], run_id);
  const json decision = continued["final_state"]["decision"];
  EXPECT_EQ(decision["decision"], "approved");
  EXPECT_EQ(decision["by"], "ana");
  EXPECT_EQ(decision["comment"], "ship it");
  EXPECT_EQ(decision["at"], kT0PlusHour);
  const auto next_log = logOf(later, continued["run_id"]);
  EXPECT_EQ(count(next_log, "approval.decided", "review"), 1u);
  EXPECT_EQ(count(next_log, "node.started", "side"), 0u);  // replayed, not run again
  const auto none = at(kT0PlusHour, {"runs", "--waiting", "--experience", later.string()});
  EXPECT_NE(none.out.find("no run waits for an approval"), std::string::npos) << none.out;

  // The same experience approved at once: the same final state, the decision's time aside.
  const auto at_once = setUp("at_once", gatedExperience());
  const std::string other_id = parkedRun(at_once)["run_id"];
  const auto direct = at(kT0, {"approve", other_id, "review", "--comment", "ship it", "--as", "ana",
                               "--json", "--experience", at_once.string()});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  json reference = parsed(direct)["final_state"];
  json final_state = continued["final_state"];
  EXPECT_EQ(reference["decision"]["at"], kT0);
  reference["decision"].erase("at");
  final_state["decision"].erase("at");
  EXPECT_EQ(final_state, reference);
  EXPECT_EQ(final_state["results"], json::array({"r1", "r2", "r3"}));
  EXPECT_EQ(final_state["shipped"], true);
}

// --only / --from: a gate outside the selection is not executed, so nobody is asked.
TEST_F(ApprovalTest, ANodeOutsideOnlyIsNotAsked) {
  const auto exp = setUp("only", gatedExperience());
  const auto r = at(kT0, {"run", exp.string(), "--json", "--only", "side"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(parsed(r).value("status", ""), "success") << r.out;
  EXPECT_FALSE(std::filesystem::exists(exp / ".openexpertise" / "approvals.sqlite"));
}

TEST_F(ApprovalTest, ARejectionFollowsOnError) {
  // The gate with on_error skip (the default): it fails, what follows it is skipped.
  const auto skip = setUp("skip", gatedExperience());
  const std::string run_id = parkedRun(skip)["run_id"];
  const auto rejected = at(kT0PlusHour, {"reject", run_id, "review", "--comment", "not yet", "--as",
                                         "bob", "--json", "--experience", skip.string()});
  EXPECT_EQ(rejected.exit_code, 1) << rejected.err;
  const json summary = parsed(rejected);
  EXPECT_EQ(summary.value("status", ""), "partial");
  ASSERT_EQ(summary["failures"].size(), 1u);
  EXPECT_EQ(summary["failures"][0]["error"],
            "node \"review\": rejected by bob at 2026-03-01T10:00:00.000Z: not yet");
  EXPECT_FALSE(summary["final_state"].contains("shipped"));
  EXPECT_EQ(summary["final_state"]["side"], "done");
  const auto log = logOf(skip, summary["run_id"]);
  EXPECT_EQ(count(log, "node.skipped", "ship"), 1u);
  for (const auto& e : log) {
    if (e.value("type", "") == "approval.decided") {
      EXPECT_EQ(e["by"], "bob");
      EXPECT_EQ(e["comment"], "not yet");
      EXPECT_EQ(e["decision"], "rejected");
    }
  }

  // `approval:` on a tool node under on_error fail_run: the rejection fails the run.
  const auto fail_run =
      setUp("fail_run",
            "name: g\nversion: 1.0.0\nstate:\n  schema:\n    draft: { type: string }\n"
            "    items: { type: array }\n    shipped: { type: boolean }\ngraph:\n  nodes:\n"
            "    - { id: seed, kind: tool, impl: ./tools/seed.sh, writes: [draft, items] }\n"
            "    - { id: review, kind: tool, impl: ./tools/ship.sh, writes: [shipped],\n"
            "        on_error: { policy: fail_run }, approval: { prompt: Deploy } }\n"
            "  edges:\n    - { from: seed, to: review }\n");
  const auto parked = at(kT0, {"run", fail_run.string(), "--json"});
  ASSERT_EQ(parked.exit_code, kExitWaiting) << parked.err;
  const auto stopped = at(kT0, {"reject", parsed(parked)["run_id"], "review", "--json",
                                "--experience", fail_run.string()});
  EXPECT_EQ(stopped.exit_code, 1) << stopped.err;
  const json failed = parsed(stopped);
  EXPECT_EQ(failed.value("status", ""), "failed");
  EXPECT_NE(failed.value("reason", "").find("rejected by"), std::string::npos) << stopped.out;
  EXPECT_FALSE(failed["final_state"].contains("shipped"));
}

TEST_F(ApprovalTest, APassedDeadlineDecidesByOnTimeoutWhenOeLooksAtTheRun) {
  struct Case {
    const char* on_timeout;
    const char* status;
    bool shipped;
  };
  for (const Case& c : {Case{"approve", "success", true}, Case{"reject", "partial", false},
                        Case{"fail", "failed", false}}) {
    SCOPED_TRACE(c.on_timeout);
    const auto exp = setUp(
        c.on_timeout,
        gatedExperience(std::string("timeout: 2h\n      on_timeout: ") + c.on_timeout + "\n"));
    const std::string run_id = parkedRun(exp)["run_id"];
    // Within the deadline `oe runs` decides nothing; past it, it decides by on_timeout.
    const auto before =
        at(kT0PlusHour, {"runs", "--waiting", "--json", "--experience", exp.string()});
    ASSERT_EQ(before.exit_code, 0) << before.err;
    EXPECT_TRUE(parsed(before)[0]["approvals"][0]["decision"].is_null()) << before.out;
    const auto past =
        at(kT0Plus3Hours, {"runs", "--waiting", "--json", "--experience", exp.string()});
    ASSERT_EQ(past.exit_code, 0) << past.err;
    const json decision = parsed(past)[0]["approvals"][0]["decision"];
    EXPECT_EQ(decision["by"], "timeout") << past.out;
    EXPECT_EQ(decision["timed_out"], true);
    EXPECT_EQ(decision["at"], "2026-03-01T11:00:00.000Z");  // the deadline, not when looked
    // A person too late is told.
    const auto late = at(kT0Plus3Hours, {"approve", run_id, "review", "--no-continue",
                                         "--experience", exp.string()});
    EXPECT_EQ(late.exit_code, 1);
    EXPECT_NE(late.err.find("was already"), std::string::npos) << late.err;
    // `oe resume` continues with the deadline's decision.
    const auto resumed =
        at(kT0Plus3Hours, {"resume", run_id, "--json", "--experience", exp.string()});
    const json summary = parsed(resumed);
    EXPECT_EQ(summary.value("status", ""), c.status) << resumed.out << resumed.err;
    EXPECT_EQ(summary["final_state"].value("shipped", false), c.shipped);
  }
  // A plain `oe runs` past the deadline decides it too: read back at T0, before the deadline,
  // where nothing would decide it, the decision is there.
  {
    const auto exp =
        setUp("plain_runs", gatedExperience("timeout: 30m\n      on_timeout: approve\n"));
    parkedRun(exp);
    ASSERT_EQ(at(kT0PlusHour, {"runs", "--experience", exp.string()}).exit_code, 0);
    const auto looked = at(kT0, {"runs", "--waiting", "--json", "--experience", exp.string()});
    const json decision = parsed(looked)[0]["approvals"][0]["decision"];
    EXPECT_EQ(decision.value("by", ""), "timeout") << looked.out;
    EXPECT_EQ(decision.value("decision", ""), "approved") << looked.out;
  }
  // `oe resume` alone (nobody ran `oe runs`) settles the deadline too.
  const auto exp =
      setUp("resume_only", gatedExperience("timeout: 30m\n      on_timeout: approve\n"));
  const std::string run_id = parkedRun(exp)["run_id"];
  const auto resumed = at(kT0PlusHour, {"resume", run_id, "--json", "--experience", exp.string()});
  EXPECT_EQ(parsed(resumed).value("status", ""), "success") << resumed.err;
}

TEST_F(ApprovalTest, ARunKilledWhileParkingIsApprovedAndContinued) {
  const auto exp = setUp("killed", gatedExperience());
  // `side` runs beside the gate: it says when the question is recorded (the run is parking,
  // waiting for `side` to end), then blocks until the test lets it go.
  const std::string dir = exp.string();
  const auto side = exp / "tools" / "side.sh";
  std::ofstream(side) << "#!/bin/sh\ncat > /dev/null\n"
                         "while ! grep -qs approval.waiting " +
                             dir +
                             "/.openexpertise/runs/*.jsonl; do sleep 0.02; done\n"
                             "touch " +
                             dir +
                             "/parking\n"
                             "while [ ! -f " +
                             dir +
                             "/go ]; do sleep 0.02; done\n"
                             "printf '{\"state_delta\":{\"side\":\"done\"}}\\n'\n";
  auto env = sqliteReferenceEnv();
  env.erase("OE_PLUGIN_PATH");
  env["OE_APPROVALS_NOW"] = kT0;
  env["OE_TRUST_FILE"] = trustFile().string();
  LiveOe run({"run", dir, "--json"}, env, dir_.path());
  ASSERT_TRUE(waitForFile(exp / "parking"));
  run.signal(SIGKILL);
  const int status = run.wait();
  ASSERT_TRUE(WIFSIGNALED(status));
  std::ofstream(exp / "go") << "";
  const auto runs = at(kT0, {"runs", "--json", "--experience", dir});
  const json listed = parsed(runs);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["status"], "unfinished");
  const std::string run_id = listed[0]["run_id"];
  // The question was recorded before the kill: it can be decided, and the run continued.
  const auto approved =
      at(kT0PlusHour, {"approve", run_id, "review", "--as", "ana", "--json", "--experience", dir});
  ASSERT_EQ(approved.exit_code, 0) << approved.err;
  const json summary = parsed(approved);
  EXPECT_EQ(summary.value("status", ""), "success");
  EXPECT_EQ(summary["final_state"]["side"], "done");
  EXPECT_EQ(summary["final_state"]["shipped"], true);
  EXPECT_EQ(summary["final_state"]["results"], json::array({"r1", "r2", "r3"}));
  EXPECT_EQ(summary["final_state"]["decision"]["by"], "ana");
}

TEST_F(ApprovalTest, OfTwoApproversAtOnceOneWinsAndTheOtherIsTold) {
  const auto exp = setUp("two", gatedExperience());
  const std::string run_id = parkedRun(exp)["run_id"];
  auto env = sqliteReferenceEnv();
  env.erase("OE_PLUGIN_PATH");
  env["OE_APPROVALS_NOW"] = kT0PlusHour;
  env["OE_TRUST_FILE"] = trustFile().string();
  LiveOe ana(
      {"approve", run_id, "review", "--as", "ana", "--no-continue", "--experience", exp.string()},
      env, dir_.path());
  LiveOe bob(
      {"reject", run_id, "review", "--as", "bob", "--no-continue", "--experience", exp.string()},
      env, dir_.path());
  const int ana_status = ana.wait();
  const int bob_status = bob.wait();
  ASSERT_TRUE(WIFEXITED(ana_status) && WIFEXITED(bob_status));
  const int ana_code = WEXITSTATUS(ana_status);
  const int bob_code = WEXITSTATUS(bob_status);
  ASSERT_EQ(ana_code + bob_code, 1) << "ana: " << ana.err() << "\nbob: " << bob.err();
  const bool ana_won = ana_code == 0;
  const std::string& loser_err = ana_won ? bob.err() : ana.err();
  EXPECT_NE(loser_err.find(std::string("was already ") +
                           (ana_won ? "approved by ana" : "rejected by bob")),
            std::string::npos)
      << loser_err;
  EXPECT_NE(loser_err.find("was not recorded"), std::string::npos) << loser_err;
  // `oe resume` continues with the decision that won.
  const auto resumed = at(kT0PlusHour, {"resume", run_id, "--json", "--experience", exp.string()});
  EXPECT_EQ(parsed(resumed).value("status", ""), ana_won ? "success" : "partial") << resumed.err;
}

// A nested experience that asks: its question is the top run's ("nest/review"), the top run
// parks with it, and `oe approve TOP nest/review` continues both.
TEST_F(ApprovalTest, ANestedExperienceParksItsParent) {
  for (const bool approve : {true, false}) {
    SCOPED_TRACE(approve ? "approve" : "reject");
    const auto outer = setUp(approve ? "outer_ok" : "outer_no",
                             "name: outer\nversion: 1.0.0\nstate:\n  schema:\n"
                             "    draft: { type: string }\n    items: { type: array }\n"
                             "    shipped: { type: boolean }\ngraph:\n  nodes:\n"
                             "    - { id: seed, kind: tool, impl: ./tools/seed.sh, writes: [draft, "
                             "items] }\n"
                             "    - { id: nest, kind: experience, impl: ./inner, outputs: { "
                             "shipped: $.shipped }, writes: [shipped] }\n"
                             "  edges:\n    - { from: seed, to: nest }\n");
    const auto inner = setUp((approve ? "outer_ok" : "outer_no") + std::string("/inner"),
                             "name: inner\nversion: 1.0.0\nstate:\n  schema:\n"
                             "    decision: { type: object }\n    shipped: { type: boolean }\n"
                             "graph:\n  nodes:\n"
                             "    - { id: review, kind: approval, prompt: Inner ship, writes: "
                             "[decision] }\n"
                             "    - { id: ship, kind: tool, impl: ./tools/ship.sh, writes: "
                             "[shipped] }\n"
                             "  edges:\n    - { from: review, to: ship }\n");
    const auto parked = at(kT0, {"run", outer.string(), "--json"});
    ASSERT_EQ(parked.exit_code, kExitWaiting) << parked.err;
    const json summary = parsed(parked);
    EXPECT_EQ(summary["waiting"], json::array({"nest/review"}));
    EXPECT_TRUE(summary["failures"].empty()) << parked.out;
    const std::string run_id = summary["run_id"];
    const auto waiting = at(kT0, {"runs", "--waiting", "--experience", outer.string()});
    EXPECT_NE(waiting.out.find("node \"nest/review\": Inner ship"), std::string::npos)
        << waiting.out;
    const auto decided = at(kT0PlusHour, {approve ? "approve" : "reject", run_id, "nest/review",
                                          "--as", "ana", "--json", "--experience", outer.string()});
    const json after = parsed(decided);
    if (approve) {
      EXPECT_EQ(decided.exit_code, 0) << decided.err;
      EXPECT_EQ(after.value("status", ""), "success");
      EXPECT_EQ(after["final_state"]["shipped"], true);
    } else {
      // The nested run ends partial (its gate failed, ship skipped); what the experience kind
      // makes of that is docs/kinds-experience.md's. Nothing shipped, nothing waits any more.
      EXPECT_NE(after.value("status", ""), "waiting") << decided.out;
      EXPECT_FALSE(after["final_state"].contains("shipped")) << decided.out;
    }
    EXPECT_FALSE(std::filesystem::exists(inner / ".openexpertise" / "approvals.sqlite"));
  }
}

// A pipeline stage asks before each item's call: the run parks at item 0, each approval
// continues it to the next item's question, and the last one to the state of a run that never
// asked; every call ran once.
TEST_F(ApprovalTest, APipelineStageAsksPerItemAndEachApprovalContinuesToTheNext) {
  const auto exp = setUp("staged", approvalStagedExperience(true));
  const std::string dir = exp.string();
  const json first = parksOn(kT0, {"run", dir, "--json"}, "check@p#0");
  const std::string run_id = first["run_id"];
  EXPECT_FALSE(first["final_state"].contains("results")) << first.dump();
  const auto first_log = logOf(exp, run_id);
  ASSERT_EQ(count(first_log, "approval.waiting", "check"), 1u);
  for (const auto& e : first_log) {
    if (e.value("type", "") == "approval.waiting") {
      EXPECT_EQ(e["key"], "check@p#0");
      EXPECT_EQ(e["prompt"], "Check this item");
      EXPECT_EQ(e["show"], json({{"$.draft", "v1"}, {"$item", 1}, {"$index", 0}}));
    }
  }
  // A bare node id is not a question of this run: the per-item keys are listed.
  const auto bare = at(kT0, {"approve", run_id, "check", "--no-continue", "--experience", dir});
  EXPECT_EQ(bare.exit_code, 2) << bare.err;
  EXPECT_NE(bare.err.find("\"check@p#0\""), std::string::npos) << bare.err;

  const json second = parksOn(
      kT0PlusHour, {"approve", run_id, "check@p#0", "--as", "ana", "--json", "--experience", dir},
      "check@p#1");
  EXPECT_EQ(second["final_state"]["results"], json::array({"c1", "t1"}));
  const auto waiting = at(kT0PlusHour, {"runs", "--waiting", "--experience", dir});
  EXPECT_NE(waiting.out.find("node \"check@p#1\": Check this item"), std::string::npos)
      << waiting.out;
  EXPECT_NE(waiting.out.find("$item = 2"), std::string::npos) << waiting.out;
  parksOn(kT0PlusHour,
          {"approve", run_id, "check@p#1", "--as", "ana", "--json", "--experience", dir},
          "check@p#2");
  const auto last = at(
      kT0PlusHour, {"approve", run_id, "check@p#2", "--as", "ana", "--json", "--experience", dir});
  ASSERT_EQ(last.exit_code, 0) << last.err;
  const json done = parsed(last);
  EXPECT_EQ(done.value("status", ""), "success") << last.out;
  const auto done_log = logOf(exp, done["run_id"]);
  EXPECT_EQ(count(done_log, "approval.decided", "check"), 3u);  // each read back, none asked
  EXPECT_EQ(count(done_log, "approval.waiting", "check"), 0u);
  EXPECT_EQ(count(done_log, "node.started", "seed"), 0u);

  // The same pipeline without the question, in one run: the same state, the same calls.
  const auto reference = setUp("staged_reference", approvalStagedExperience(false));
  const auto direct = at(kT0, {"run", reference.string(), "--json"});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  EXPECT_EQ(done["final_state"], parsed(direct)["final_state"]);
  EXPECT_EQ(done["final_state"]["results"], json::array({"c1", "t1", "c2", "t2", "c3", "t3"}));
  const std::string calls = "check 1\ntally 1\ncheck 2\ntally 2\ncheck 3\ntally 3\n";
  EXPECT_EQ(fileText(exp / "calls.txt"), calls);  // nothing that landed ran again
  EXPECT_EQ(fileText(reference / "calls.txt"), calls);
}

// A rejected item fails that item's stage (its chain ends, on_error skip) and the pipeline goes
// on with the next item.
TEST_F(ApprovalTest, ARejectedPipelineItemEndsThatItemsChainOnly) {
  const auto exp = setUp("staged_reject", approvalStagedExperience(true));
  const std::string dir = exp.string();
  const std::string run_id = parksOn(kT0, {"run", dir, "--json"}, "check@p#0")["run_id"];
  parksOn(kT0, {"approve", run_id, "check@p#0", "--json", "--experience", dir}, "check@p#1");
  parksOn(kT0,
          {"reject", run_id, "check@p#1", "--as", "bob", "--comment", "not this one", "--json",
           "--experience", dir},
          "check@p#2");
  const auto last = at(kT0, {"approve", run_id, "check@p#2", "--json", "--experience", dir});
  EXPECT_EQ(last.exit_code, 1) << last.err;
  const json done = parsed(last);
  EXPECT_EQ(done.value("status", ""), "partial") << last.out;
  ASSERT_EQ(done["failures"].size(), 1u) << last.out;
  EXPECT_EQ(done["failures"][0]["error"],
            "node \"check\" (check@p#1): rejected by bob at 2026-03-01T09:00:00.000Z: not this "
            "one");
  EXPECT_EQ(done["final_state"]["results"], json::array({"c1", "t1", "c3", "t3"}));
  EXPECT_EQ(fileText(exp / "calls.txt"), "check 1\ntally 1\ncheck 3\ntally 3\n");
}

// A gate (kind approval) as a pipeline's first stage: one question per item, its decision the
// item's edge to the next stage; a rejected item never reaches it.
TEST_F(ApprovalTest, AGateStageAsksPerItem) {
  const auto exp =
      setUp("gate_stage",
            "name: gate_stage\nversion: 1.0.0\nstate:\n  schema:\n    draft: { type: string }\n"
            "    items: { type: array }\n    decision: { type: object }\n"
            "    results: { type: array, merge: array_append }\ngraph:\n  nodes:\n"
            "    - { id: seed, kind: tool, impl: ./tools/seed.sh, writes: [draft, items] }\n"
            "    - { id: ok, kind: approval, prompt: Ship this item, writes: [decision] }\n"
            "    - { id: check, kind: tool, impl: ./tools/check.sh, writes: [results] }\n"
            "  edges: []\n  pipelines:\n    - { id: p, items: $.items, stages: [ok, check] }\n");
  const std::string dir = exp.string();
  const std::string run_id = parksOn(kT0, {"run", dir, "--json"}, "ok@p#0")["run_id"];
  const json second = parksOn(
      kT0, {"approve", run_id, "ok@p#0", "--as", "ana", "--json", "--experience", dir}, "ok@p#1");
  EXPECT_EQ(second["final_state"]["decision"]["by"], "ana");
  parksOn(kT0, {"reject", run_id, "ok@p#1", "--json", "--experience", dir}, "ok@p#2");
  const auto last =
      at(kT0PlusHour, {"approve", run_id, "ok@p#2", "--as", "eve", "--json", "--experience", dir});
  EXPECT_EQ(last.exit_code, 1) << last.err;
  const json done = parsed(last);
  EXPECT_EQ(done.value("status", ""), "partial") << last.out;
  EXPECT_EQ(done["final_state"]["results"], json::array({"c1", "c3"}));
  EXPECT_EQ(done["final_state"]["decision"]["by"], "eve");
  EXPECT_EQ(done["final_state"]["decision"]["at"], kT0PlusHour);
  EXPECT_EQ(fileText(exp / "calls.txt"), "check 1\ncheck 3\n");
}

// A loop body asks before each iteration. A rejected iteration is a failed iteration: the loop
// stops there, what waits for the loop is skipped (on_error skip), and the run ends partial.
TEST_F(ApprovalTest, ARejectedLoopIterationStopsTheLoop) {
  const auto exp = setUp("loop_reject", approvalLoopExperience("{ prompt: Next round }"));
  const std::string dir = exp.string();
  const std::string run_id = parksOn(kT0, {"run", dir, "--json"}, "step@l#0")["run_id"];
  const json second =
      parksOn(kT0, {"approve", run_id, "step@l#0", "--json", "--experience", dir}, "step@l#1");
  EXPECT_EQ(second["final_state"]["results"], json::array({"s0"}));
  const auto rejected = at(kT0PlusHour, {"reject", run_id, "step@l#1", "--as", "bob", "--comment",
                                         "enough", "--json", "--experience", dir});
  EXPECT_EQ(rejected.exit_code, 1) << rejected.err;
  const json done = parsed(rejected);
  EXPECT_EQ(done.value("status", ""), "partial") << rejected.out;
  ASSERT_EQ(done["failures"].size(), 1u) << rejected.out;
  EXPECT_EQ(done["failures"][0]["error"],
            "node \"step\" (step@l#1): rejected by bob at 2026-03-01T10:00:00.000Z: enough");
  EXPECT_EQ(done["final_state"]["results"], json::array({"s0"}));
  EXPECT_FALSE(done["final_state"].contains("shipped"));
  const auto log = logOf(exp, done["run_id"]);
  EXPECT_EQ(count(log, "node.skipped", "ship"), 1u);
  EXPECT_EQ(count(log, "approval.waiting", "step"), 0u);  // iteration 2 is never asked
  EXPECT_EQ(fileText(exp / "calls.txt"), "0\n");
}

// A deadline per iteration: each question's on_timeout decides it when oe next looks at the run.
TEST_F(ApprovalTest, ALoopIterationsDeadlineDecidesByOnTimeout) {
  const auto exp =
      setUp("loop_timeout", approvalLoopExperience("{ timeout: 30m, on_timeout: approve }"));
  const std::string dir = exp.string();
  const std::string run_id = parksOn(kT0, {"run", dir, "--json"}, "step@l#0")["run_id"];
  // An hour later iteration 0's deadline has passed: approved, it runs; iteration 1 asks then.
  parksOn(kT0PlusHour, {"resume", run_id, "--json", "--experience", dir}, "step@l#1");
  const auto listed = at(kT0PlusHour, {"runs", "--waiting", "--json", "--experience", dir});
  const json approvals = parsed(listed)[0]["approvals"];
  ASSERT_EQ(approvals.size(), 2u) << listed.out;
  EXPECT_EQ(approvals[0]["decision"]["by"], "timeout");
  EXPECT_EQ(approvals[0]["decision"]["at"], "2026-03-01T09:30:00.000Z");
  EXPECT_EQ(approvals[1]["deadline"], "2026-03-01T10:30:00.000Z") << listed.out;
  parksOn(kT0Plus3Hours, {"resume", run_id, "--json", "--experience", dir}, "step@l#2");
  const auto done =
      at("2026-03-01T15:00:00.000Z", {"resume", run_id, "--json", "--experience", dir});
  ASSERT_EQ(done.exit_code, 0) << done.err;
  const json summary = parsed(done);
  EXPECT_EQ(summary.value("status", ""), "success") << done.out;
  EXPECT_EQ(summary["final_state"]["results"], json::array({"s0", "s1", "s2"}));
  EXPECT_EQ(summary["final_state"]["shipped"], true);
  EXPECT_EQ(fileText(exp / "calls.txt"), "0\n1\n2\n");
}

// kill -9 inside a loop whose body asks: the approved iteration that was running when killed
// runs again on resume (it never landed), the ones that landed do not, its decision is read
// back (not asked again), and the chain ends where a run that never asked ends.
TEST_F(ApprovalTest, AKilledLoopWithApprovalsResumesToTheUninterruptedState) {
  const auto exp = setUp("loop_killed", approvalLoopExperience("{ prompt: Next round }"));
  const std::string dir = exp.string();
  const std::string run_id = parksOn(kT0, {"run", dir, "--json"}, "step@l#0")["run_id"];
  const std::string second = parksOn(
      kT0, {"approve", run_id, "step@l#0", "--json", "--experience", dir}, "step@l#1")["run_id"];
  std::ofstream(exp / "block1") << "";
  ASSERT_EQ(
      at(kT0, {"approve", run_id, "step@l#1", "--no-continue", "--experience", dir}).exit_code, 0);
  auto env = sqliteReferenceEnv();
  env.erase("OE_PLUGIN_PATH");
  env["OE_APPROVALS_NOW"] = kT0;
  env["OE_TRUST_FILE"] = trustFile().string();
  LiveOe resumed({"resume", second, "--json", "--experience", dir}, env, dir_.path());
  ASSERT_TRUE(waitForFile(exp / "blocked"));
  resumed.signal(SIGKILL);
  const int status = resumed.wait();
  ASSERT_TRUE(WIFSIGNALED(status));
  std::filesystem::remove(exp / "block1");
  std::string killed;
  for (const auto& run : parsed(at(kT0, {"runs", "--json", "--experience", dir}))) {
    if (run.value("status", "") == "unfinished") {
      killed = run.value("run_id", "");
    }
  }
  ASSERT_FALSE(killed.empty());
  const json third = parksOn(kT0, {"resume", killed, "--json", "--experience", dir}, "step@l#2");
  const auto third_log = logOf(exp, third["run_id"]);
  EXPECT_EQ(count(third_log, "approval.decided", "step"), 2u);
  EXPECT_EQ(count(third_log, "approval.waiting", "step"), 1u);  // only iteration 2's
  const auto last = at(kT0, {"approve", run_id, "step@l#2", "--json", "--experience", dir});
  ASSERT_EQ(last.exit_code, 0) << last.err;
  const json done = parsed(last);
  EXPECT_EQ(done.value("status", ""), "success") << last.out;
  EXPECT_EQ(done["chain_id"], run_id);

  const auto reference = setUp("loop_reference", approvalLoopExperience(""));
  const auto direct = at(kT0, {"run", reference.string(), "--json"});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  EXPECT_EQ(done["final_state"], parsed(direct)["final_state"]);
  EXPECT_EQ(done["final_state"]["results"], json::array({"s0", "s1", "s2"}));
  // Each iteration completed once; iteration 1 started twice (the killed attempt never landed).
  EXPECT_EQ(fileText(exp / "calls.txt"), "0\n1\n2\n");
  EXPECT_EQ(fileText(exp / "started.txt"), "0\n1\n1\n2\n");
}

// A nested experience as a pipeline stage: its question is asked per item, under the item's
// key ("nest@p#0/review"), and the pipeline stops at the item whose nested run parked.
TEST_F(ApprovalTest, ANestedExperienceAsAPipelineStageParksPerItem) {
  const auto outer =
      setUp("outer_staged",
            "name: outer\nversion: 1.0.0\nstate:\n  schema:\n"
            "    draft: { type: string }\n    items: { type: array }\n"
            "    shipped: { type: boolean }\ngraph:\n  nodes:\n"
            "    - { id: seed, kind: tool, impl: ./tools/seed.sh, writes: [draft, items] }\n"
            "    - { id: nest, kind: experience, impl: ./inner, outputs: { shipped: $.shipped },"
            " writes: [shipped] }\n"
            "  edges: []\n  pipelines:\n    - { id: p, items: $.items, stages: [nest] }\n");
  setUp("outer_staged/inner",
        "name: inner\nversion: 1.0.0\nstate:\n  schema:\n"
        "    decision: { type: object }\n    shipped: { type: boolean }\ngraph:\n  nodes:\n"
        "    - { id: review, kind: approval, prompt: Inner ship, writes: [decision] }\n"
        "    - { id: ship, kind: tool, impl: ./tools/ship.sh, writes: [shipped] }\n"
        "  edges:\n    - { from: review, to: ship }\n");
  const std::string dir = outer.string();
  const json first = parksOn(kT0, {"run", dir, "--json"}, "nest@p#0/review");
  EXPECT_TRUE(first["failures"].empty()) << first.dump();
  const std::string run_id = first["run_id"];
  parksOn(kT0, {"approve", run_id, "nest@p#0/review", "--json", "--experience", dir},
          "nest@p#1/review");
  parksOn(kT0, {"approve", run_id, "nest@p#1/review", "--json", "--experience", dir},
          "nest@p#2/review");
  const auto last = at(kT0, {"approve", run_id, "nest@p#2/review", "--json", "--experience", dir});
  ASSERT_EQ(last.exit_code, 0) << last.err;
  const json done = parsed(last);
  EXPECT_EQ(done.value("status", ""), "success") << last.out;
  EXPECT_EQ(done["final_state"]["shipped"], true);
}

// On PostgreSQL with `oe worker`s: the run parks in the store, and a second checkout of the
// experience (another machine: no run logs, no approvals.sqlite) lists it and approves it, and
// its continuation reaches the final state through the workers.
TEST_F(ApprovalTest, OnPostgreSQLWithWorkersADecisionComesFromAnyMachine) {
  PgTestDb db;
  const std::string url = db.url();
  const auto machine_a = setUp("machine_a", gatedExperience());
  const auto machine_b = setUp("machine_b", gatedExperience());
  BackgroundProcess worker({OE_EXE, "worker", "--store", url, "--id", "w1", "--concurrency", "2"},
                           {{"OE_PLUGIN_PATH", ""}, {"OE_TRUST_FILE", trustFile().string()}},
                           dir_.path(), dir_.path() / "w1");
  const auto parked = at(kT0, {"run", machine_a.string(), "--json", "--store", url, "--workers"});
  ASSERT_EQ(parked.exit_code, kExitWaiting) << parked.err;
  const json summary = parsed(parked);
  EXPECT_EQ(summary.value("status", ""), "waiting");
  const std::string run_id = summary["run_id"];
  EXPECT_FALSE(std::filesystem::exists(machine_a / ".openexpertise" / "approvals.sqlite"));

  const auto waiting = at(kT0PlusHour, {"runs", "--waiting", "--json", "--store", url,
                                        "--experience", machine_b.string()});
  ASSERT_EQ(waiting.exit_code, 0) << waiting.err;
  const json listed = parsed(waiting);
  ASSERT_EQ(listed.size(), 1u) << waiting.out;
  EXPECT_EQ(listed[0]["run_id"], run_id);
  EXPECT_EQ(listed[0]["approvals"][0]["node_id"], "review");
  EXPECT_EQ(listed[0]["approvals"][0]["show"], json({{"$.draft", "v1"}}));

  auto env = sqliteReferenceEnv();
  env.erase("OE_PLUGIN_PATH");
  env.erase("OE_STORE");
  env["OE_WORKERS"] = "1";  // the continuation's attempts go to the worker too
  env["OE_APPROVALS_NOW"] = kT0PlusHour;
  const auto approved = oe({"approve", run_id, "review", "--as", "ana", "--json", "--store", url,
                            "--experience", machine_b.string()},
                           env);
  ASSERT_EQ(approved.exit_code, 0) << approved.err;
  const json continued = parsed(approved);
  EXPECT_EQ(continued.value("status", ""), "success") << approved.err;
  EXPECT_EQ(continued["final_state"]["shipped"], true);
  EXPECT_EQ(continued["final_state"]["side"], "done");
  EXPECT_EQ(continued["final_state"]["results"], json::array({"r1", "r2", "r3"}));
  EXPECT_EQ(continued["final_state"]["decision"]["by"], "ana");
  // The other approver, on machine A, is told.
  const auto late = at(kT0PlusHour, {"reject", run_id, "review", "--no-continue", "--store", url,
                                     "--experience", machine_a.string()});
  EXPECT_EQ(late.exit_code, 1);
  EXPECT_NE(late.err.find("was already approved by ana"), std::string::npos) << late.err;
  worker.signal(SIGTERM);
  EXPECT_EQ(worker.wait(), 0) << worker.err();
}

}  // namespace
}  // namespace oe::test

// Issue 10, items 1, 4 and 7: a run interrupted (SIGKILL, SIGINT, SIGTERM) in the middle of a
// for_each and then resumed ends with exactly the state of one uninterrupted run, for
// array_append, last_wins and set_once fields; interrupted is not failed; a second run of the
// same store is refused (or waits) instead of losing updates; --fresh starts from empty state.
//
// The fan-out's item 20 blocks on a gate file the test creates; the tool announces that it is
// blocked by creating `reached`, so the test interrupts the run at a known point with no sleeps.
#include <signal.h>

#include <algorithm>
#include <set>

#include "oe_fixture.hpp"
#include "sqlite_probe.hpp"

namespace oe::test {
namespace {

constexpr int kItems = 40;
constexpr int kGateAt = 20;

// Seeds the item list [0, 40) and the set_once field `first`.
constexpr std::string_view kSeedSh = R"SH(#!/bin/sh
cat > /dev/null
printf '{"state_delta":{"items":['
i=0
while [ $i -lt 40 ]; do
  [ $i -gt 0 ] && printf ','
  printf '%s' $i
  i=$((i + 1))
done
printf '],"first":"seed"}}\n'
)SH";

// One fan-out item: appends "r<index>" to `results` and sets `last`; item 20 waits for the gate.
constexpr std::string_view kItemSh = R"SH(#!/bin/sh
IFS= read -r input || true
i=${input#*\"\$index\":}; i=${i%%[,\}]*}
dir=${input#*\"dir\":\"}; dir=${dir%%\"*}
if [ "$i" = 20 ] && [ ! -e "$dir/gate" ]; then
  : > "$dir/reached"
  while [ ! -e "$dir/gate" ]; do sleep 0.02; done
fi
printf '{"state_delta":{"results":["r%s"],"last":"r%s"}}\n' "$i" "$i"
)SH";

// Counts what the fan-out appended: a downstream node that must see the right input.
constexpr std::string_view kCountMjs = R"(export default async function (args) {
  return { state_delta: { total: (args._state.results ?? []).length } };
}
)";

class ResumeState : public OeTest {
 protected:
  void writeFanOut(const TempDir& dir, bool deterministic) {
    dir.write("experience.yaml",
              std::string("name: fanout\nversion: 0.1.0\nruntime: { concurrency: 2, "
                          "deterministic: ") +
                  (deterministic ? "true" : "false") +
                  " }\n"
                  "state:\n  schema:\n"
                  "    items: { type: array }\n"
                  "    results: { type: array, merge: array_append }\n"
                  "    last: { type: string }\n"
                  "    first: { type: string, merge: set_once }\n"
                  "    total: { type: number }\n"
                  "graph:\n  nodes:\n"
                  "    - { id: seed, kind: tool, impl: ./tools/seed.sh, writes: [items, first] }\n"
                  "    - { id: each, kind: tool, impl: ./tools/item.sh, writes: [results, last],\n"
                  "        for_each: { source: $.items, concurrency: 4 },\n"
                  "        args: { dir: \"" +
                  dir.path().string() +
                  "\" } }\n"
                  "    - { id: after, kind: tool, impl: ./tools/count.mjs, reads: [results], "
                  "writes: [total] }\n"
                  "  edges:\n    - { from: seed, to: each }\n    - { from: each, to: after }\n");
    for (auto [name, text] : {std::pair{"tools/seed.sh", kSeedSh}, std::pair{"tools/item.sh", kItemSh}}) {
      auto path = dir.write(name, text);
      std::filesystem::permissions(path, std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add);
    }
    dir.write("tools/count.mjs", kCountMjs);
  }

  // `oe <args>` started in the background in `dir`, its output in dir/<name>.out/.err.
  static BackgroundProcess oeInBackground(const TempDir& dir, std::vector<std::string> args,
                                          const std::string& name) {
    args.insert(args.begin(), OE_EXE);
    return BackgroundProcess(args, {{"OE_PLUGIN_PATH", ""}}, dir.path(), dir / name);
  }

  // `oe <args>` in `dir`, stdout parsed as JSON.
  nlohmann::json oeJson(const TempDir& dir, std::vector<std::string> args, int* exit_code,
                        const std::map<std::string, std::string>& env = {{"OE_PLUGIN_PATH", ""}}) {
    args.insert(args.begin(), OE_EXE);
    auto r = runProcess(args, env, dir.path());
    *exit_code = r.exit_code;
    auto parsed = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << "stdout: " << r.out << "\nstderr: " << r.err;
    expectOnTheBackend(dir.path(), parsed, env);
    return parsed;
  }

  // The final state of one uninterrupted run of the same experience, in its own folder, on SQLite.
  nlohmann::json uninterrupted(bool deterministic) {
    TempDir clean;
    writeFanOut(clean, deterministic);
    clean.write("gate", "");
    int code = -1;
    auto summary =
        oeJson(clean, {"run", clean.path().string(), "--json"}, &code, sqliteReferenceEnv());
    EXPECT_EQ(code, 0) << summary.dump(2);
    EXPECT_EQ(summary["final_state"]["results"].size(), static_cast<size_t>(kItems));
    return summary["final_state"];
  }

  // The run ids of the folder's logs.
  static std::vector<std::string> runIds(const TempDir& dir) {
    std::vector<std::string> ids;
    for (const auto& entry :
         std::filesystem::directory_iterator(dir.path() / ".openexpertise" / "runs")) {
      if (entry.path().extension() == ".jsonl") {
        ids.push_back(entry.path().stem().string());
      }
    }
    return ids;
  }

  // Starts a run, waits until item 20 blocks, delivers `signal_number`, and returns the
  // interrupted run's id and exit code.
  std::pair<std::string, int> interruptAtGate(const TempDir& dir, int signal_number) {
    BackgroundProcess run = oeInBackground(dir, {"run", dir.path().string(), "-q"}, "interrupted");
    EXPECT_TRUE(waitForFile(dir / "reached")) << run.err();
    run.signal(signal_number);
    const int code = run.wait();
    auto ids = runIds(dir);
    EXPECT_EQ(ids.size(), 1u);
    last_err_ = run.err();
    last_out_ = run.out();
    return {ids.empty() ? std::string() : ids[0], code};
  }

  // Resumes `run_id` with the gate open and returns its summary.
  nlohmann::json resume(const TempDir& dir, const std::string& run_id) {
    dir.write("gate", "");
    int code = -1;
    auto summary = oeJson(dir, {"resume", run_id, "--experience", dir.path().string(), "--json"},
                          &code);
    EXPECT_EQ(code, 0) << summary.dump(2);
    EXPECT_EQ(summary["status"], "success");
    return summary;
  }

  static std::vector<nlohmann::json> events(const TempDir& dir, const std::string& run_id) {
    std::ifstream in(dir / ".openexpertise" / "runs" / (run_id + ".jsonl"));
    std::vector<nlohmann::json> out;
    std::string line;
    while (std::getline(in, line)) {
      out.push_back(nlohmann::json::parse(line));
    }
    return out;
  }

  static std::multiset<std::string> asSet(const nlohmann::json& list) {
    std::multiset<std::string> out;
    for (const auto& v : list) {
      out.insert(v.get<std::string>());
    }
    return out;
  }

  std::string last_err_;
  std::string last_out_;
};

TEST_F(ResumeState, SigkillMidFanOutThenResumeEqualsOneUninterruptedRun) {
  const auto expected = uninterrupted(/*deterministic=*/true);
  TempDir dir;
  writeFanOut(dir, /*deterministic=*/true);
  auto [run_id, code] = interruptAtGate(dir, SIGKILL);
  EXPECT_EQ(code, 128 + SIGKILL);
  auto summary = resume(dir, run_id);
  // Item order too: under runtime.deterministic the appends land in item order (D16).
  EXPECT_EQ(summary["final_state"], expected) << summary.dump(2);
  EXPECT_GT(summary["nodes"]["cached"].get<int>(), 0) << "nothing was replayed: the kill landed "
                                                         "before any item finished";
}

TEST_F(ResumeState, SigkillWithoutDeterministicOrderStillAppendsEachItemOnce) {
  const auto expected = uninterrupted(/*deterministic=*/false);
  TempDir dir;
  writeFanOut(dir, /*deterministic=*/false);
  auto [run_id, code] = interruptAtGate(dir, SIGKILL);
  ASSERT_EQ(code, 128 + SIGKILL);
  auto summary = resume(dir, run_id);
  const auto& state = summary["final_state"];
  EXPECT_EQ(asSet(state["results"]), asSet(expected["results"])) << state.dump();
  EXPECT_EQ(state["total"], kItems);
  EXPECT_EQ(state["first"], "seed");
  EXPECT_EQ(state["items"], expected["items"]);
}

// Ctrl-C (SIGINT, exit 130) and SIGTERM (exit 143) both end the run `interrupted`, print the
// `oe resume` line, and the resume ends as one uninterrupted run.
class Interrupt : public ResumeState, public ::testing::WithParamInterface<int> {};

TEST_P(Interrupt, IsInterruptedWithExit128PlusTheSignalAndResumes) {
  const int signal_number = GetParam();
  const auto expected = uninterrupted(/*deterministic=*/true);
  TempDir dir;
  writeFanOut(dir, /*deterministic=*/true);
  auto [run_id, code] = interruptAtGate(dir, signal_number);
  EXPECT_EQ(code, 128 + signal_number) << last_err_;
  const auto log = events(dir, run_id);
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back()["type"], "run.finished");
  EXPECT_EQ(log.back()["status"], "interrupted");
  EXPECT_NE(last_out_.find("oe resume " + run_id), std::string::npos) << last_out_;
  // The items the signal stopped are cancelled, not failed, everywhere, counted per call: the
  // log's events, run.finished, the summary's count and lines, `oe runs`.
  size_t cancelled = 0;
  for (const auto& event : log) {
    if (event["type"] == "node.failed") {
      EXPECT_EQ(event.value("cancelled", false), true) << event.dump();
      ++cancelled;
    }
  }
  EXPECT_GE(cancelled, 1u);
  EXPECT_EQ(log.back()["nodes"]["failed"], 0);
  EXPECT_EQ(log.back()["nodes"]["cancelled"], cancelled);
  EXPECT_NE(last_out_.find(" 0 failed, " + std::to_string(cancelled) + " cancelled, "),
            std::string::npos)
      << last_out_;
  EXPECT_EQ(last_out_.find("failed: each"), std::string::npos) << last_out_;
  EXPECT_NE(last_out_.find("cancelled: each"), std::string::npos) << last_out_;
  int runs_code = -1;
  const auto runs =
      oeJson(dir, {"runs", "--experience", dir.path().string(), "--json"}, &runs_code);
  ASSERT_EQ(runs_code, 0);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["nodes"]["failed"], 0);
  EXPECT_EQ(runs[0]["nodes"]["cancelled"], cancelled);
  auto summary = resume(dir, run_id);
  EXPECT_EQ(summary["final_state"], expected) << summary.dump(2);
}

INSTANTIATE_TEST_SUITE_P(Signals, Interrupt, ::testing::Values(SIGINT, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return std::string(param_info.param == SIGINT ? "Sigint" : "Sigterm");
                         });

TEST_F(ResumeState, ResumeOfAResumeContinuesTheSameChain) {
  const auto expected = uninterrupted(/*deterministic=*/true);
  TempDir dir;
  writeFanOut(dir, /*deterministic=*/true);
  auto [first_id, code] = interruptAtGate(dir, SIGINT);
  ASSERT_EQ(code, 130) << last_err_;
  // The resume is interrupted at the same gate, then resumed in its turn.
  std::filesystem::remove(dir / "reached");
  BackgroundProcess again =
      oeInBackground(dir, {"resume", first_id, "--experience", dir.path().string(), "-q"}, "again");
  ASSERT_TRUE(waitForFile(dir / "reached")) << again.err();
  again.signal(SIGINT);
  ASSERT_EQ(again.wait(), 130) << again.err();
  std::string second_id;
  for (const auto& id : runIds(dir)) {
    if (id != first_id) {
      second_id = id;
    }
  }
  ASSERT_FALSE(second_id.empty());
  const auto started = events(dir, second_id).front();
  EXPECT_EQ(started["chain_id"], first_id);
  auto summary = resume(dir, second_id);
  EXPECT_EQ(summary["final_state"], expected) << summary.dump(2);
}

TEST_F(ResumeState, ASecondPlainRunAppendsAgainAndFreshStartsEmpty) {
  TempDir dir;
  writeFanOut(dir, /*deterministic=*/true);
  dir.write("gate", "");
  int code = -1;
  auto first = oeJson(dir, {"run", dir.path().string(), "--json"}, &code);
  ASSERT_EQ(code, 0);
  auto second = oeJson(dir, {"run", dir.path().string(), "--json"}, &code);
  ASSERT_EQ(code, 0);
  // Upstream's behaviour for a new run: the stored state is its starting point.
  EXPECT_EQ(second["final_state"]["results"].size(), 2u * kItems);
  EXPECT_EQ(second["final_state"]["total"], 2 * kItems);
  auto fresh = oeJson(dir, {"run", dir.path().string(), "--json", "--fresh"}, &code);
  ASSERT_EQ(code, 0) << fresh.dump(2);
  EXPECT_EQ(fresh["final_state"], first["final_state"]);
  EXPECT_EQ(fresh["nodes"]["ran"], 0) << "the cache still serves a fresh run";
}

TEST_F(ResumeState, ASecondRunOfTheSameStoreIsRefusedNamingTheRunInProgress) {
  TempDir dir;
  writeFanOut(dir, /*deterministic=*/true);
  BackgroundProcess first = oeInBackground(dir, {"run", dir.path().string(), "-q"}, "first");
  ASSERT_TRUE(waitForFile(dir / "reached")) << first.err();
  const auto ids = runIds(dir);
  ASSERT_EQ(ids.size(), 1u);
  auto refused = runProcess({OE_EXE, "run", dir.path().string()}, {{"OE_PLUGIN_PATH", ""}},
                            dir.path());
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.err.find(ids[0]), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--wait"), std::string::npos) << refused.err;
  EXPECT_EQ(runIds(dir).size(), 1u) << "a refused run wrote a log";

  // With --wait the second run starts once the first is done, from the state it left: no
  // update is lost (both runs' appends are there).
  BackgroundProcess waiting =
      oeInBackground(dir, {"run", dir.path().string(), "-q", "--wait"}, "second");
  dir.write("gate", "");
  EXPECT_EQ(first.wait(), 0) << first.err();
  EXPECT_EQ(waiting.wait(), 0) << waiting.err();
  int code = -1;
  auto state = oeJson(dir, {"state", "--experience", dir.path().string(), "--json"}, &code);
  ASSERT_EQ(code, 0);
  EXPECT_EQ(state["results"].size(), 2u * kItems) << state.dump();
  EXPECT_EQ(state["total"], 2 * kItems);
}

TEST_F(ResumeState, GcKeepsTheMarksOfTheChainsOfKeptRunsOnly) {
  TempDir dir;
  writeFanOut(dir, /*deterministic=*/true);
  dir.write("gate", "");
  int code = -1;
  auto first = oeJson(dir, {"run", dir.path().string(), "--json"}, &code);
  ASSERT_EQ(code, 0);
  auto second = oeJson(dir, {"run", dir.path().string(), "--json"}, &code);
  ASSERT_EQ(code, 0);
  auto marks_of = [&dir](const std::string& chain) {
    SqliteProbe db(dir / ".openexpertise" / "state.sqlite");
    return db.rows("SELECT COUNT(*) FROM oe_landed_batches b, json_each(b.marks) JOIN "
                   "oe_chains c ON c.id = b.chain WHERE c.chain_id = '" + chain + "'")[0][0];
  };
  // seed, the 40 items and `after` (its last_wins write too): one mark each, per chain.
  EXPECT_EQ(marks_of(first["chain_id"]), "42");
  EXPECT_EQ(marks_of(second["chain_id"]), "42");
  auto gc = runProcess({OE_EXE, "gc", "--keep", "1", "--experience", dir.path().string()},
                       {{"OE_PLUGIN_PATH", ""}}, dir.path());
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(marks_of(first["chain_id"]), "0");
  EXPECT_EQ(marks_of(second["chain_id"]), "42");
}

// The trial's second case: review-branch stopped by its budget, then resumed with a larger one,
// ended with a duplicated finding and verified it twice. Offline, from its shipped recording.
TEST_F(ResumeState, ReviewBranchStoppedByItsBudgetResumesToTheStateOfOneRun) {
  auto copy_example = [](const TempDir& to) {
    const auto source = std::filesystem::path(OE_SOURCE_DIR) / "examples" / "review-branch";
    for (const auto& entry : std::filesystem::directory_iterator(source)) {
      if (entry.path().filename() != ".openexpertise") {
        std::filesystem::copy(entry.path(), to.path() / entry.path().filename(),
                              std::filesystem::copy_options::recursive);
      }
    }
  };
  // `reference`: on SQLite whatever the backend under test (its result is the one to equal).
  auto run = [](const TempDir& in, std::vector<std::string> args, int* code,
                bool reference = false) {
    args.insert(args.begin(), OE_EXE);
    args.insert(args.end(), {"--json", "--llm-replay", (in / "llm-recording.jsonl").string()});
    auto env = reference ? sqliteReferenceEnv() : std::map<std::string, std::string>{};
    env.insert({{"OE_PLUGIN_PATH", ""}, {"OPENAI_API_KEY", ""}, {"ANTHROPIC_API_KEY", ""},
                {"OPENAI_BASE_URL", ""}});
    auto r = runProcess(args, env, in.path());
    *code = r.exit_code;
    auto parsed = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_TRUE(parsed.is_object()) << "exit " << r.exit_code << "\nstdout: " << r.out
                                    << "\nstderr: " << r.err;
    return parsed.is_object() ? parsed : nlohmann::json::object();
  };
  TempDir clean;
  copy_example(clean);
  int code = -1;
  const auto expected = run(clean, {"run", clean.path().string()}, &code, /*reference=*/true);
  ASSERT_EQ(code, 0) << expected.dump(2);

  TempDir dir;
  copy_example(dir);
  // 1,500 tokens cover the three reviews and two of the three verifications (measured from
  // the recording); which verification is refused depends on timing, and under
  // runtime.deterministic the ones after it in item order are not applied.
  const auto stopped = run(dir, {"run", dir.path().string(), "--max-tokens", "1500"}, &code);
  ASSERT_EQ(code, 1) << stopped.dump(2);
  ASSERT_EQ(stopped.value("reason", ""), "budget_exhausted") << stopped.dump(2);
  // A clean stop (docs/llm.md: status failed, reason budget_exhausted): the calls the budget
  // refused, and those parked behind them in item order, are cancelled, not failed.
  EXPECT_EQ(stopped["status"], "failed");
  EXPECT_EQ(stopped["nodes"]["failed"], 0) << stopped.dump(2);
  EXPECT_TRUE(stopped["failures"].empty()) << stopped.dump(2);
  EXPECT_GE(stopped["nodes"]["cancelled"].get<int>(), 1) << stopped.dump(2);
  EXPECT_EQ(stopped["cancelled"].size(), stopped["nodes"]["cancelled"].get<size_t>());
  ASSERT_EQ(stopped["final_state"].value("findings", nlohmann::json::array()).size(), 3u)
      << stopped.dump(2);
  ASSERT_LT(stopped["final_state"].value("verified_findings", nlohmann::json::array()).size(), 3u)
      << stopped.dump(2);
  const auto resumed = run(dir,
                           {"resume", stopped["run_id"].get<std::string>(), "--experience",
                            dir.path().string(), "--max-tokens", "8000"},
                           &code);
  ASSERT_EQ(code, 0) << resumed.dump(2);
  EXPECT_EQ(resumed["final_state"], expected["final_state"]) << resumed.dump(2);
  // Nothing paid twice: the two runs made the clean run's calls between them (whichever
  // verification the budget refused, the ones parked behind it were kept in the cache).
  const auto calls = [](const nlohmann::json& summary) {
    return summary.value("usage", nlohmann::json::object()).value("llm_calls", 0);
  };
  EXPECT_EQ(calls(stopped) + calls(resumed), calls(expected))
      << stopped.dump(2) << "\n" << resumed.dump(2);
}

}  // namespace
}  // namespace oe::test

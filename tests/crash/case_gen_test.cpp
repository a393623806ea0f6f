// The crash harness's generator: a seed always gives the same experience, every construct the
// harness promises shows up, `oe validate --strict` accepts what it writes, and two
// uninterrupted runs of one case end in the same state (what makes one run an oracle).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "crash/case_gen.hpp"
#include "crash/compare.hpp"
#include "crash/fake_agent.hpp"
#include "crash/faults.hpp"
#include "crash/proc.hpp"
#include "support/temp_dir.hpp"

namespace oe::crash {
namespace {

std::map<std::string, std::string> filesUnder(const std::filesystem::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) {
      out[std::filesystem::relative(entry.path(), dir).string()] = readText(entry.path());
    }
  }
  return out;
}

TEST(CrashCaseGen, ASeedAlwaysGivesTheSameExperienceAndFiles) {
  for (uint64_t seed : {1ULL, 7ULL, 123456789ULL}) {
    const Case a = generateCase(seed);
    const Case b = generateCase(seed);
    EXPECT_EQ(experienceYaml(a), experienceYaml(b)) << seed;
    test::TempDir one;
    test::TempDir two;
    writeCase(a, one.path(), OE_CRASH_TOOL);
    writeCase(b, two.path(), OE_CRASH_TOOL);
    EXPECT_EQ(filesUnder(one.path()), filesUnder(two.path())) << seed;
  }
  EXPECT_NE(experienceYaml(generateCase(1)), experienceYaml(generateCase(2)));
}

TEST(CrashCaseGen, EveryConstructAppearsAcrossTheFirstSeeds) {
  std::map<std::string, int> seen;
  size_t smallest = 1000;
  size_t largest = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const Case c = generateCase(seed);
    smallest = std::min(smallest, c.nodes.size());
    largest = std::max(largest, c.nodes.size());
    ++seen[c.deterministic ? "deterministic" : "unordered"];
    seen["first run --no-cache"] += c.first_run_no_cache ? 1 : 0;
    seen["late writes"] += c.late_writes ? 1 : 0;
    for (const auto& n : c.nodes) {
      if (n.for_each && !c.deterministic && !n.no_edge_output) {
        ++seen["fan-in edges"];
        EXPECT_TRUE(c.fan_in_edges) << "seed " << seed << ": " << n.id;
      }
    }
    for (const auto& e : c.edges) {
      const Node* from = c.node(e.from);
      if (from != nullptr && from->flavour == Flavour::kExperience) {
        ++seen["edge from a nested experience"];
        EXPECT_TRUE(c.nested_successors) << "seed " << seed << ": " << e.from << " -> " << e.to;
      }
    }
    seen["pipeline"] += c.pipelines.empty() ? 0 : 1;
    for (const auto& loop : c.loops) {
      ++seen[loop.until ? "loop until" : "loop max_iters only"];
    }
    for (const auto& e : c.edges) {
      seen["when"] += e.when ? 1 : 0;
    }
    std::map<std::string, int> writers;
    for (const auto& n : c.nodes) {
      ++seen[n.flavour == Flavour::kMjs     ? "mjs"
             : n.flavour == Flavour::kExe   ? "exe"
             : n.flavour == Flavour::kAgent ? "agent"
                                            : "experience"];
      if (n.child) {
        ++seen[n.child->shared ? "nested shared" : "nested isolated"];
      }
      if (n.for_each) {
        ++seen[n.for_each_concurrency ? "for_each with concurrency" : "for_each"];
      }
      seen["fail first"] += n.fail_first ? 1 : 0;
      seen["sleeps"] += n.sleep_ms > 0 ? 1 : 0;
      for (const auto& w : n.writes) {
        ++writers[w.field];
        ++seen["write " + w.mode.substr(0, w.mode.find(':'))];
      }
    }
    for (const auto& f : c.fields) {
      if (f.merge == Merge::kLastWins && writers[f.name] >= 2) {
        ++seen["last_wins chain"];
      }
      if (f.merge == Merge::kSetOnce) {
        ++seen["set_once"];
      }
    }
  }
  for (const char* construct :
       {"deterministic", "unordered", "first run --no-cache", "late writes",
        "edge from a nested experience", "fan-in edges", "pipeline", "loop until",
        "loop max_iters only", "when", "mjs", "exe", "agent", "experience", "nested shared",
        "nested isolated", "for_each", "for_each with concurrency", "fail first", "sleeps",
        "write item", "write value", "write number", "write list", "write count", "write const",
        "write blob", "last_wins chain", "set_once"}) {
    EXPECT_GT(seen[construct], 0) << construct;
  }
  EXPECT_EQ(smallest, 3u);
  EXPECT_GE(largest, 30u);
  EXPECT_LE(largest, 40u);
}

// Every fault class of a store is drawn across the CI range: connection cuts, worker kills and
// stops and server restarts on PostgreSQL only.
TEST(CrashFaults, EachStoreDrawsEveryFaultClassItHasAndNoOther) {
  for (Store store : {Store::kSqlite, Store::kPostgres}) {
    FaultOptions options;
    options.store = store;
    options.disk_full = true;
    options.finishes = 10;
    std::set<FaultKind> drawn;
    for (uint64_t seed = 1; seed <= 200; ++seed) {
      for (const Step& step : planFaults(seed, options)) {
        for (const FaultEvent& event : step.events) {
          drawn.insert(event.kind);
        }
      }
    }
    const std::set<FaultKind> expected =
        store == Store::kSqlite
            ? std::set<FaultKind>{FaultKind::kSigkill, FaultKind::kSigint, FaultKind::kDiskFull}
            : std::set<FaultKind>{FaultKind::kSigkill,      FaultKind::kSigint,
                                  FaultKind::kWorkerKill,   FaultKind::kWorkerStop,
                                  FaultKind::kServerRestart, FaultKind::kConnectionCut};
    EXPECT_EQ(drawn, expected);
  }
}

// Without late writes, every node that writes a field is an ancestor of every node that reads
// it (a `when` condition and a for_each source count as reads), and no stage or loop body writes
// a field anything reads.
TEST(CrashCaseGen, WithoutLateWritesEveryWriteOfAFieldPrecedesEveryReadOfIt) {
  int checked = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const Case c = generateCase(seed);
    if (c.late_writes) {
      continue;
    }
    ++checked;
    std::map<std::string, std::set<std::string>> preds;
    for (const auto& e : c.edges) {
      preds[e.to].insert(e.from);
    }
    auto ancestors = [&](const std::string& id) {
      std::set<std::string> out;
      std::vector<std::string> stack = {id};
      while (!stack.empty()) {
        const std::string at = stack.back();
        stack.pop_back();
        for (const auto& p : preds[at]) {
          if (out.insert(p).second) {
            stack.push_back(p);
          }
        }
      }
      return out;
    };
    std::map<std::string, std::vector<const Node*>> readers;
    std::map<std::string, std::vector<const Node*>> writers;
    for (const auto& n : c.nodes) {
      std::vector<std::string> reads = n.reads;
      if (n.for_each) {
        reads.push_back(*n.for_each);
      }
      if (n.child) {
        reads.insert(reads.end(), n.child->reads.begin(), n.child->reads.end());
      }
      for (const auto& e : c.edges) {
        if (e.to == n.id && e.when) {
          const size_t at = e.when->find("$.") + 2;
          reads.push_back(e.when->substr(at, e.when->find_first_of(" )", at) - at));
        }
      }
      for (const auto& f : reads) {
        readers[f].push_back(&n);
      }
      for (const auto& w : n.writes) {
        writers[w.field].push_back(&n);
      }
    }
    for (const auto& [field, rs] : readers) {
      for (const Node* r : rs) {
        const auto anc = ancestors(r->id);
        for (const Node* w : writers[field]) {
          if (r->role != Role::kMain) {
            EXPECT_EQ(w->role, Role::kMain) << "seed " << seed << ": " << w->id << " writes "
                                            << field << ", which stage/body " << r->id << " reads";
          } else {
            EXPECT_TRUE(w->role == Role::kMain ? anc.count(w->id) != 0 : false)
                << "seed " << seed << ": " << w->id << " writes " << field << ", which "
                << r->id << " reads, and is not its ancestor";
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(CrashCaseGen, OeValidateStrictAcceptsEveryGeneratedExperience) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    test::TempDir dir;
    writeCase(generateCase(seed), dir.path(), OE_CRASH_TOOL);
    auto r = runFor({OE_EXE, "validate", dir.path().string(), "--strict"},
                    {{"OE_PLUGIN_PATH", ""}}, dir.path(), dir.path() / "validate", Ms(60000));
    ASSERT_TRUE(r.exit_code.has_value()) << seed;
    EXPECT_EQ(*r.exit_code, 0) << "seed " << seed << "\n" << r.out << r.err << "\n"
                               << readText(dir.path() / "experience.yaml");
    EXPECT_EQ(r.err.find("warning"), std::string::npos) << "seed " << seed << "\n" << r.err;
  }
}

// The premise of the oracle: the final state is a function of the definition. Two clean runs
// of a case in two folders agree (exactly under runtime.deterministic, as multisets otherwise),
// and each call executed exactly once.
TEST(CrashCaseGen, TwoUninterruptedRunsOfACaseEndInTheSameState) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const Case c = generateCase(seed);
    std::vector<nlohmann::json> states;
    std::vector<std::map<std::string, int>> executions;
    for (int copy = 0; copy < 2; ++copy) {
      test::TempDir dir;
      writeCase(c, dir.path(), OE_CRASH_TOOL);
      auto llm = startAgentServer();
      const std::map<std::string, std::string> env = {
          {"OE_PLUGIN_PATH", ""},    {"OE_STORE", ""},          {"OE_WORKERS", ""},
          {"OPENAI_API_KEY", ""},    {"ANTHROPIC_API_KEY", ""},  {"OE_CRASH_LOG_DIR", ""},
          {"OPENAI_BASE_URL", llm->baseUrl() + "/v1"}};
      auto run = runFor({OE_EXE, "run", ".", "--json", "-q"}, env, dir.path(),
                        dir.path() / "run", Ms(120000));
      ASSERT_TRUE(run.exit_code.has_value()) << seed;
      auto summary = nlohmann::json::parse(run.out, nullptr, false);
      ASSERT_TRUE(summary.is_object()) << seed << ": " << run.out << run.err;
      ASSERT_EQ(summary["status"], "success") << "seed " << seed << ": " << summary.dump(2);
      states.push_back(summary["final_state"]);
      llm->stop();
      executions.push_back(readExecutions(dir.path(), agentCalls(*llm)));
    }
    EXPECT_EQ(compareStates(c, states[0], states[1]), std::vector<std::string>{})
        << "seed " << seed;
    EXPECT_EQ(executions[0], executions[1]) << "seed " << seed;
    for (const auto& [ident, n] : executions[0]) {
      EXPECT_EQ(n, 1) << "seed " << seed << ": " << ident;
    }
  }
}

}  // namespace
}  // namespace oe::crash

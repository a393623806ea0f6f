// Plugins under isolation: process (docs/trust.md, "Process isolation"): the real `oe` runs the
// fixture plugins in helper processes (`oe plugin-host`). A plugin that segfaults, aborts,
// overflows its stack or calls exit() in invoke fails that node attempt, named ("plugin `<id>`
// crashed in invoke (SIGSEGV)"), while oe and the rest of the run go on; on_error: retry starts
// a new helper; and the well-behaved plugin answers as it does in-process.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "abi/oe_binary.hpp"
#include "abi/process.hpp"

namespace oe::abi_test {
namespace {

// `first` and `third` (well-behaved) around `second`, whose plugin crashes when asked; `third`
// does not depend on `second` (unless `chain`), so it runs whatever becomes of it. Each writes
// the request it was given to `echo`.
void writeIsolationExperience(const std::filesystem::path& dir, const std::string& on_error = "",
                              bool chain = false) {
  writeEchoExperience(dir, "isolation",
                      echoNode("first", "abi-good", "from first") +
                          echoNode("second", "abi-crashes", "from second") + on_error +
                          (on_error.empty() ? "" : "\n") +
                          echoNode("third", "abi-good", "from third"),
                      std::string("    - { from: first, to: second }\n") +
                          (chain ? "    - { from: second, to: third }\n"
                                 : "    - { from: first, to: third }\n"));
}

// A fault in a sanitizer build's helper is the sanitizer's to report: it exits (ASan 1, TSan 66)
// instead of dying by the signal, and the message names that. A test expecting a fault's signal
// accepts it.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerTakesFaults = true;
#else
constexpr bool kSanitizerTakesFaults = false;
#endif

// "plugin `dev.oe.fixture.crashes` crashed in invoke (<cause>)", or its start when a sanitizer
// may have taken the fault over.
std::string crashedMessage(std::string_view cause) {
  const std::string start = "plugin `dev.oe.fixture.crashes` crashed in invoke (";
  if (kSanitizerTakesFaults && cause == "SIGSEGV") {
    return start;
  }
  return start + std::string(cause) + ")";
}

// What each node of the run ended as: "finished" or "failed: <error>".
std::map<std::string, std::string> nodeOutcomes(const std::vector<nlohmann::json>& events) {
  std::map<std::string, std::string> ends;
  for (const nlohmann::json& event : events) {
    const std::string type = event.value("type", "");
    if (type == "node.finished") {
      ends[event.value("node_id", "")] = "finished";
    } else if (type == "node.failed") {
      ends[event.value("node_id", "")] = "failed: " + event.dump();
    }
  }
  return ends;
}

struct IsolatedCrashCase {
  const char* how;    // $OE_FIXTURE_CRASH
  const char* cause;  // how the helper ended, as the error names it
};

void PrintTo(const IsolatedCrashCase& c, std::ostream* os) { *os << c.how; }

class IsolatedCrash : public OeBinary, public ::testing::WithParamInterface<IsolatedCrashCase> {};

TEST_P(IsolatedCrash, FailsOneNodeAndTheRunGoesOn) {
  const IsolatedCrashCase& c = GetParam();
  trust({"good", "crashes"});
  TempDir experience;
  writeIsolationExperience(experience.path());
  const ProcessResult run = oe({"run", experience.path().string()}, {"good", "crashes"},
                               {{"OE_FIXTURE_CRASH", c.how}, {"OE_PLUGIN_ISOLATION", "process"}});
  // oe itself ends normally: the run is partial (one node failed), not killed.
  ASSERT_TRUE(run.exited) << run.describe();
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  const std::string message = crashedMessage(c.cause);
  EXPECT_NE(run.err.find(message), std::string::npos) << run.describe();

  const std::vector<nlohmann::json> events = onlyRunEvents(experience.path());
  const auto ends = nodeOutcomes(events);
  EXPECT_EQ(ends.count("first") == 1 ? ends.at("first") : "", "finished");
  EXPECT_EQ(ends.count("third") == 1 ? ends.at("third") : "", "finished");
  ASSERT_EQ(ends.count("second"), 1U) << run.describe();
  EXPECT_NE(ends.at("second").find(message), std::string::npos) << ends.at("second");
  for (const nlohmann::json& event : events) {
    // No in-process crash report: oe did not crash.
    EXPECT_NE(event.value("type", ""), "plugin.crashed") << event.dump();
  }
  const ProcessResult state =
      oe({"state", "--json", "--experience", experience.path().string()}, {"good", "crashes"});
  ASSERT_EQ(state.exit_code, 0) << state.describe();
  EXPECT_EQ(state.out.find("from second"), std::string::npos) << state.out;
}

INSTANTIATE_TEST_SUITE_P(Causes, IsolatedCrash,
                         ::testing::Values(IsolatedCrashCase{"segv", "SIGSEGV"},
                                           IsolatedCrashCase{"abort", "SIGABRT"},
                                           IsolatedCrashCase{"stack", "SIGSEGV"},
                                           IsolatedCrashCase{"exit", "exited with code 3"}),
                         [](const ::testing::TestParamInfo<IsolatedCrashCase>& param_info) {
                           return std::string(param_info.param.how);
                         });

// on_error: retry meets a new helper: the attempt that crashed is failed, the next one runs in a
// fresh process (the fixture crashes only on the call that creates the mark file).
TEST_F(OeBinary, IsolatedCrashIsRetriedInANewHelper) {
  trust({"good", "crashes"});
  TempDir experience;
  writeIsolationExperience(experience.path(),
                           "      on_error: { policy: retry, attempts: 2, base_ms: 0 }",
                           /*chain=*/true);
  const std::filesystem::path mark = experience.path() / "crashed-once";
  const ProcessResult run =
      oe({"--plugin-isolation", "process", "run", experience.path().string()}, {"good", "crashes"},
         {{"OE_FIXTURE_CRASH", "segv"}, {"OE_FIXTURE_CRASH_ONCE", mark.string()}});
  ASSERT_TRUE(run.exited && run.exit_code == 0) << run.describe();
  EXPECT_TRUE(std::filesystem::exists(mark));
  EXPECT_NE(run.err.find(crashedMessage("SIGSEGV")), std::string::npos) << run.describe();
  const std::vector<nlohmann::json> events = onlyRunEvents(experience.path());
  const auto ends = nodeOutcomes(events);
  EXPECT_EQ(ends.count("second") == 1 ? ends.at("second") : "", "finished");
  EXPECT_EQ(ends.count("third") == 1 ? ends.at("third") : "", "finished");
  // The crashed attempt is in the log, with the error that names it.
  int retries = 0;
  for (const nlohmann::json& event : events) {
    if (event.value("type", "") == "node.retry" && event.value("node_id", "") == "second") {
      ++retries;
      EXPECT_EQ(event.value("attempt", 0), 1) << event.dump();
      EXPECT_NE(event.value("error", "").find(crashedMessage("SIGSEGV")), std::string::npos)
          << event.dump();
    }
  }
  EXPECT_EQ(retries, 1) << run.describe();
}

// on_error: fail_run stops the run at the crash, as at any failure; once the plugin behaves,
// `oe resume` runs the crashed node and what follows it, replaying `first` from the cache.
TEST_F(OeBinary, RunStoppedByAnIsolatedCrashResumes) {
  trust({"good", "crashes"});
  TempDir experience;
  writeIsolationExperience(experience.path(), "      on_error: { policy: fail_run }",
                           /*chain=*/true);
  const ProcessResult run = oe({"run", experience.path().string()}, {"good", "crashes"},
                               {{"OE_FIXTURE_CRASH", "segv"}, {"OE_PLUGIN_ISOLATION", "process"}});
  ASSERT_TRUE(run.exited) << run.describe();
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  const std::vector<nlohmann::json> events = onlyRunEvents(experience.path());
  ASSERT_FALSE(events.empty());
  const std::string run_id = events.front().value("run_id", "");
  const auto ends = nodeOutcomes(events);
  EXPECT_EQ(ends.count("third"), 0U) << run.describe();

  const ProcessResult resumed = oe({"resume", run_id, "--experience", experience.path().string()},
                                   {"good", "crashes"}, {{"OE_PLUGIN_ISOLATION", "process"}});
  ASSERT_TRUE(resumed.exited && resumed.exit_code == 0) << resumed.describe();
  EXPECT_NE(resumed.err.find("cached  first"), std::string::npos) << resumed.describe();
  EXPECT_NE(resumed.err.find("ok      second"), std::string::npos) << resumed.describe();
  const ProcessResult state =
      oe({"state", "--json", "--experience", experience.path().string()}, {"good", "crashes"});
  ASSERT_EQ(state.exit_code, 0) << state.describe();
  EXPECT_NE(state.out.find("from third"), std::string::npos) << state.out;
}

// The same run gives the same state in both modes (the echoed request included: what crosses
// the socket is the request as the run built it).
TEST_F(OeBinary, IsolatedPluginAnswersAsInProcess) {
  trust({"good", "crashes"});
  std::map<std::string, nlohmann::json> states;
  for (const char* mode : {"in-process", "process"}) {
    TempDir experience;
    writeIsolationExperience(experience.path(), "", /*chain=*/true);
    const ProcessResult run = oe({"run", experience.path().string()}, {"good", "crashes"},
                                 {{"OE_PLUGIN_ISOLATION", mode}});
    ASSERT_TRUE(run.exited && run.exit_code == 0) << mode << ": " << run.describe();
    const ProcessResult state =
        oe({"state", "--json", "--experience", experience.path().string()}, {"good", "crashes"});
    ASSERT_EQ(state.exit_code, 0) << state.describe();
    nlohmann::json value = nlohmann::json::parse(state.out);
    ASSERT_TRUE(value.contains("echo")) << state.out;
    EXPECT_NE(state.out.find("from third"), std::string::npos) << state.out;
    value["echo"].erase("context");  // names each run's folder and id
    states[mode] = value;
  }
  EXPECT_EQ(states["process"], states["in-process"]);
}

// The trust record can ask for isolation (oe trust --isolation process): that library runs in a
// helper without the variable; the variable, when set, decides for every plugin.
TEST_F(OeBinary, TrustRecordAsksForIsolation) {
  trust({"good"});
  const ProcessResult trusted =
      oe({"trust", "--isolation", "process", fixtureDir("crashes").string()}, {});
  ASSERT_EQ(trusted.exit_code, 0) << trusted.describe();
  const ProcessResult listed = oe({"trust", "--list", "--json"}, {});
  ASSERT_EQ(listed.exit_code, 0) << listed.describe();
  int isolated_records = 0;
  for (const nlohmann::json& record : nlohmann::json::parse(listed.out)) {
    if (record.value("isolation", "") == "process") {
      ++isolated_records;
      EXPECT_EQ(record.value("plugin", ""), "dev.oe.fixture.crashes") << listed.out;
    }
  }
  EXPECT_EQ(isolated_records, 1) << listed.out;

  TempDir experience;
  writeIsolationExperience(experience.path());
  const ProcessResult run =
      oe({"run", experience.path().string()}, {"good", "crashes"}, {{"OE_FIXTURE_CRASH", "abort"}});
  ASSERT_TRUE(run.exited) << run.describe();
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  EXPECT_NE(run.err.find("plugin `dev.oe.fixture.crashes` crashed in invoke (SIGABRT)"),
            std::string::npos)
      << run.describe();

  // --plugin-isolation in-process overrides the record: the abort takes oe down, as it would
  // without isolation (and the in-process crash report names the plugin).
  TempDir in_process;
  writeIsolationExperience(in_process.path());
  const ProcessResult crashed =
      oe({"run", in_process.path().string(), "--plugin-isolation", "in-process"},
         {"good", "crashes"}, {{"OE_FIXTURE_CRASH", "abort"}});
  EXPECT_FALSE(crashed.exited && crashed.exit_code == 1) << crashed.describe();
  EXPECT_NE(crashed.err.find("oe: plugin `dev.oe.fixture.crashes` crashed in invoke (SIGABRT) "
                             "while running node `second`"),
            std::string::npos)
      << crashed.describe();
}

// The experience can ask too (plugins: { isolation: ... }), for all its plugins or by plugin id,
// and is read before its plugins load on every path of a run: the first run parses the file,
// the second reads the spec snapshot the first saved.
TEST_F(OeBinary, ExperienceAsksForIsolation) {
  trust({"good", "crashes"});
  for (const std::string asked :
       {"  isolation: process\n", "  isolation:\n    dev.oe.fixture.crashes: process\n"}) {
    TempDir experience;
    writeIsolationExperience(experience.path());
    {
      std::ofstream yaml(experience.path() / "experience.yaml", std::ios::app);
      yaml << "plugins:\n" << asked;
    }
    const ProcessResult check = oe({"validate", experience.path().string()}, {"good", "crashes"});
    EXPECT_EQ(check.exit_code, 0) << check.describe();
    for (int pass = 0; pass < 2; ++pass) {
      const ProcessResult run = oe({"run", experience.path().string()}, {"good", "crashes"},
                                   {{"OE_FIXTURE_CRASH", "abort"}});
      ASSERT_TRUE(run.exited) << asked << " pass " << pass << ": " << run.describe();
      EXPECT_EQ(run.exit_code, 1) << run.describe();
      EXPECT_NE(run.err.find(crashedMessage("SIGABRT")), std::string::npos) << run.describe();
    }
  }
  // A value oe does not know is the schema's error, with its line.
  TempDir wrong;
  writeIsolationExperience(wrong.path());
  {
    std::ofstream yaml(wrong.path() / "experience.yaml", std::ios::app);
    yaml << "plugins:\n  isolation: thread\n";
  }
  const ProcessResult refused = oe({"run", wrong.path().string()}, {"good", "crashes"});
  EXPECT_EQ(refused.exit_code, 1) << refused.describe();
  EXPECT_NE(refused.err.find("experience.yaml:24:14: error: plugins.isolation:"), std::string::npos)
      << refused.describe();
  EXPECT_EQ(refused.err.find("unknown node kind"), std::string::npos) << refused.describe();
}

// oe.limits/1-draft from a plugin in a helper: oe takes the slot with the invoke's own context
// and the helper's buffer gives it back, so runtime.limits bounds plugins in several helper
// processes as it bounds them in-process. Three nodes at once, one slot: no two hold it together.
TEST_F(OeBinary, IsolatedPluginTakesRuntimeLimits) {
  trust({"limited"});
  for (const char* mode : {"process", "in-process"}) {
    TempDir experience;
    TempDir marks;
    writeFile(experience.path() / "experience.yaml", R"(name: limited
version: 0.1.0
runtime:
  concurrency: 3
  limits:
    abi-limit: { max_in_flight: 1 }
state:
  schema:
    a: { type: string }
    b: { type: string }
    c: { type: string }
graph:
  nodes:
    - { id: a, kind: abi-limited, writes: [a] }
    - { id: b, kind: abi-limited, writes: [b] }
    - { id: c, kind: abi-limited, writes: [c] }
  edges: []
)");
    const ProcessResult run =
        oe({"run", experience.path().string(), "--json"}, {"limited"},
           {{"OE_PLUGIN_ISOLATION", mode}, {"OE_FIXTURE_LIMIT_DIR", marks.path().string()}});
    ASSERT_EQ(run.exit_code, 0) << mode << ": " << run.describe();
    const nlohmann::json out = nlohmann::json::parse(run.out);
    for (const char* field : {"a", "b", "c"}) {
      EXPECT_EQ(out["final_state"].value(field, ""), "runtime.limits.abi-limit|ok")
          << mode << ": " << run.out;
    }
  }
}

TEST_F(OeBinary, UnknownIsolationIsRefused) {
  trust({"good"});
  TempDir experience;
  writeFile(experience.path() / "experience.yaml", R"(name: isolation
version: 0.1.0
graph:
  nodes:
    - { id: only, kind: abi-good }
)");
  const ProcessResult flag =
      oe({"run", experience.path().string(), "--plugin-isolation", "thread"}, {"good"});
  EXPECT_EQ(flag.exit_code, 2) << flag.describe();
  EXPECT_NE(flag.err.find("plugin isolation \"thread\" is not one oe knows"), std::string::npos)
      << flag.describe();
  const ProcessResult env =
      oe({"run", experience.path().string()}, {"good"}, {{"OE_PLUGIN_ISOLATION", "thread"}});
  EXPECT_NE(env.exit_code, 0) << env.describe();
  EXPECT_NE(env.err.find("OE_PLUGIN_ISOLATION: plugin isolation \"thread\""), std::string::npos)
      << env.describe();
}

}  // namespace
}  // namespace oe::abi_test

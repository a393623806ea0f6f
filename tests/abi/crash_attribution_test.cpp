// A plugin that takes the whole process down inside invoke (a fault, abort(), a stack overflow,
// exit()) is named before oe dies: on stderr and as a `plugin.crashed` line in the run's log
// (host/src/oe/plugins/crash_guard.hpp). The run is left resumable: once the plugin behaves,
// `oe resume` finishes it to the state an uninterrupted run reaches, without running again
// what had finished.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <ostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "abi/oe_binary.hpp"
#include "abi/process.hpp"

namespace oe::abi_test {
namespace {

// `first` (a well-behaved kind) hands over to `second`, whose plugin crashes when asked.
void writeTwoNodes(const std::filesystem::path& dir) {
  writeEchoExperience(dir, "crash-attribution",
                      echoNode("first", "abi-good", "from first") +
                          echoNode("second", "abi-crashes", "from second"),
                      "    - { from: first, to: second }\n");
}

// ms since the epoch of an event's "ts" (2026-12-07T12:09:00.017Z).
int64_t epochMs(const std::string& ts) {
  std::tm tm{};
  std::istringstream in(ts);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  EXPECT_FALSE(in.fail()) << ts;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + std::stoi(ts.substr(20, 3));
}

#if defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerExitsOnExit = true;
#else
constexpr bool kSanitizerExitsOnExit = false;
#endif

struct CrashCase {
  const char* how;    // $OE_FIXTURE_CRASH
  const char* cause;  // what the report names
  int signal;         // what kills oe (0: it exits)
};

void PrintTo(const CrashCase& c, std::ostream* os) { *os << c.how; }

class CrashAttribution : public OeBinary, public ::testing::WithParamInterface<CrashCase> {};

TEST_P(CrashAttribution, NamesThePluginAndNodeAndLeavesTheRunResumable) {
  const CrashCase& c = GetParam();
  trust({"good", "crashes"});
  const std::vector<std::string> plugins{"good", "crashes"};

  TempDir whole;
  writeTwoNodes(whole.path());
  const ProcessResult uninterrupted = oe({"run", whole.path().string()}, plugins);
  ASSERT_TRUE(uninterrupted.exited && uninterrupted.exit_code == 0) << uninterrupted.describe();
  const ProcessResult whole_state =
      oe({"state", "--json", "--experience", whole.path().string()}, plugins);
  ASSERT_EQ(whole_state.exit_code, 0) << whole_state.describe();
  ASSERT_NE(whole_state.out.find("from second"), std::string::npos) << whole_state.describe();

  TempDir experience;
  writeTwoNodes(experience.path());
  const ProcessResult crashed =
      oe({"run", experience.path().string()}, plugins, {{"OE_FIXTURE_CRASH", c.how}});
  // The process dies as the plugin made it: by the signal, or (exit()) with the plugin's code.
  // A sanitizer build's runtime takes a fault over after our report and exits non-zero.
  ASSERT_FALSE(crashed.timed_out) << crashed.describe();
  if (c.signal == 0) {
    ASSERT_TRUE(crashed.exited) << crashed.describe();
    // exit() on a worker thread runs the process's static destructors while oe's other threads
    // still work; ThreadSanitizer, when it sees that teardown race, exits with its own code (66).
    EXPECT_TRUE(crashed.exit_code == 3 || (kSanitizerExitsOnExit && crashed.exit_code == 66))
        << crashed.describe();
  } else {
    EXPECT_TRUE(!crashed.exited ? crashed.signal == c.signal : crashed.exit_code != 0)
        << crashed.describe();
  }

  const std::vector<nlohmann::json> events = onlyRunEvents(experience.path());
  ASSERT_FALSE(events.empty());
  const std::string run_id = events.front().value("run_id", "");
  ASSERT_FALSE(run_id.empty());
  const std::string verb = c.signal == 0 ? "` called exit() in invoke"
                                         : std::string("` crashed in invoke (") + c.cause + ")";
  EXPECT_NE(crashed.err.find("oe: plugin `dev.oe.fixture.crashes" + verb +
                             " while running node `second` (kind abi-crashes) of run " + run_id +
                             "; the run is left resumable"),
            std::string::npos)
      << crashed.describe();

  int crash_lines = 0;
  bool first_finished = false;
  std::string second_started;
  for (const nlohmann::json& event : events) {
    if (event.value("type", "") == "node.started" && event.value("node_id", "") == "second") {
      second_started = event.value("ts", "");
    }
    if (event.value("type", "") == "node.finished" && event.value("node_id", "") == "first") {
      first_finished = true;
    }
    if (event.value("type", "") != "plugin.crashed") {
      continue;
    }
    ++crash_lines;
    EXPECT_EQ(event.value("run_id", ""), run_id);
    EXPECT_EQ(event.value("node_id", ""), "second");
    EXPECT_EQ(event.value("call", ""), "second");
    EXPECT_EQ(event.value("plugin", ""), "dev.oe.fixture.crashes");
    EXPECT_EQ(event.value("kind", ""), "abi-crashes");
    EXPECT_EQ(event.value("phase", ""), "invoke");
    EXPECT_EQ(event.value("cause", ""), c.cause);
    // Written by the handler without the library's clock formatting: the same shape.
    EXPECT_TRUE(std::regex_match(event.value("ts", ""),
                                 std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
        << event.dump();
    // The handler's own calendar arithmetic agrees with the log's clock: moments after the node
    // started.
    const int64_t after_start = epochMs(event.value("ts", "")) - epochMs(second_started);
    EXPECT_GE(after_start, 0) << event.dump() << " started " << second_started;
    EXPECT_LT(after_start, 60'000) << event.dump() << " started " << second_started;
  }
  EXPECT_EQ(crash_lines, 1);
  EXPECT_TRUE(first_finished);

  // `oe runs` and `oe inspect` say what happened to the unfinished run.
  const std::string crash_text =
      "plugin `dev.oe.fixture.crashes" +
      (c.signal == 0 ? std::string("` called exit() in invoke")
                     : std::string("` crashed in invoke (") + c.cause + ")") +
      " in call `second`; oe died with it";
  const ProcessResult listed = oe({"runs", "--experience", experience.path().string()}, plugins);
  EXPECT_NE(listed.out.find(crash_text), std::string::npos) << listed.describe();
  const ProcessResult inspected =
      oe({"inspect", run_id, "--experience", experience.path().string()}, plugins);
  EXPECT_NE(inspected.out.find(crash_text), std::string::npos) << inspected.describe();

  // The plugin fixed (the variable gone): resume finishes the run where the uninterrupted one
  // ended, replaying `first` from the cache.
  const ProcessResult resumed =
      oe({"resume", run_id, "--experience", experience.path().string()}, plugins);
  ASSERT_TRUE(resumed.exited && resumed.exit_code == 0) << resumed.describe();
  const ProcessResult state =
      oe({"state", "--json", "--experience", experience.path().string()}, plugins);
  ASSERT_EQ(state.exit_code, 0) << state.describe();
  // The echoed call context names each run's folder and id; everything else is the same.
  const auto withoutContext = [](const std::string& text) {
    nlohmann::json value = nlohmann::json::parse(text);
    value["echo"].erase("context");
    return value;
  };
  EXPECT_EQ(withoutContext(state.out), withoutContext(whole_state.out));
}

INSTANTIATE_TEST_SUITE_P(Causes, CrashAttribution,
                         ::testing::Values(CrashCase{"segv", "SIGSEGV", SIGSEGV},
                                           CrashCase{"abort", "SIGABRT", SIGABRT},
                                           CrashCase{"stack", "SIGSEGV", SIGSEGV},
                                           CrashCase{"exit", "exit()", 0}),
                         [](const ::testing::TestParamInfo<CrashCase>& param_info) {
                           return std::string(param_info.param.how);
                         });

}  // namespace
}  // namespace oe::abi_test

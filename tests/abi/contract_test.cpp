// The host's side of the call contract (node.h, docs/abi.md "Threads and lifetimes"), through the
// real `oe` and the contract fixtures (fixtures/contract_plugin.c), which check each promise from
// inside the plugin and abort oe when one is broken: a truncated descriptor loads and runs;
// create gets its own descriptor and a live node context; cancel reaches a plugin only while the
// call's invoke runs (Ctrl-C during a long invoke, a timeout spent queued for a worker);
// emit_event keeps to its type rule.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <ostream>
#include <regex>
#include <string>
#include <vector>

#include "abi/fixtures.hpp"
#include "abi/oe_binary.hpp"
#include "abi/process.hpp"
#include "support/process.hpp"

namespace oe::abi_test {
namespace {

using nlohmann::json;

constexpr std::string_view kViolation = "CONTRACT VIOLATION";

std::vector<json> eventsOfType(const std::vector<json>& events, std::string_view type) {
  std::vector<json> out;
  for (const json& event : events) {
    if (event.value("type", "") == type) {
      out.push_back(event);
    }
  }
  return out;
}

std::string dump(const std::vector<json>& events) {
  std::string text;
  for (const json& event : events) {
    text += event.dump() + "\n";
  }
  return text;
}

// What a plugin logged as `node`, from `oe run`'s stderr ("  log     <node>: <message>"): the
// host's node.log events reach the terminal, not the run's event log.
std::vector<std::string> nodeLog(const std::string& err, std::string_view node) {
  const std::string prefix = "  log     " + std::string(node) + ": ";
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < err.size()) {
    const size_t end = std::min(err.find('\n', at), err.size());
    const std::string line = err.substr(at, end - at);
    if (line.starts_with(prefix)) {
      lines.push_back(line.substr(prefix.size()));
    }
    at = end + 1;
  }
  return lines;
}

bool anyIs(const std::vector<std::string>& lines, std::string_view text) {
  return std::find(lines.begin(), lines.end(), text) != lines.end();
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) {
    text += line + "\n";
  }
  return text;
}

// Two nodes, one of each kind the fixture serves from the same functions.
constexpr std::string_view kTwoKinds = R"(name: abi-contract
version: 0.1.0
state:
  schema:
    out: { type: string }
graph:
  nodes:
    - { id: first, kind: abi-contract, writes: [out] }
    - { id: second, kind: abi-contract-b, writes: [out] }
  edges:
    - { from: first, to: second }
)";

class Contract : public OeBinary {
 protected:
  // `oe run` of `yaml`, written to this test's experience folder, with `fixture` as the plugins.
  const ProcessResult& run(std::string_view yaml, const std::string& fixture) {
    fixture_ = fixture;
    writeFile(experience_.path() / "experience.yaml", std::string(yaml));
    trust({fixture_});
    last_ = oe({"run", experience_.path().string()}, {fixture_});
    return last_;
  }
  // A field of the state the run left (`oe state <field>`), or null.
  json state(const std::string& field) {
    const ProcessResult r =
        oe({"state", field, "--experience", experience_.path().string()}, {fixture_});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    const json value = json::parse(r.out, nullptr, false);
    return value.is_discarded() ? json() : value;
  }

  TempDir experience_;
  std::string fixture_;
  ProcessResult last_;
};

// The plain fixture, and the one whose descriptors end before their optional members.
class EitherBuild : public Contract, public ::testing::WithParamInterface<std::string> {};

INSTANTIATE_TEST_SUITE_P(Fixtures, EitherBuild, ::testing::Values("contract", "truncated"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param;
                         });

TEST_P(EitherBuild, CreateGetsItsOwnDescriptorAndALiveNodeContext) {
  run(kTwoKinds, GetParam());
  ASSERT_TRUE(last_.exited) << last_.describe();
  ASSERT_EQ(last_.exit_code, 0) << last_.describe();
  EXPECT_EQ(state("out"), "abi-contract-b");
  // Each create logged through its node context, so the line names the node; a host that
  // passed its own copy of the descriptor would have failed the create instead.
  for (const auto& [node, kind] :
       {std::pair{"first", "abi-contract"}, std::pair{"second", "abi-contract-b"}}) {
    const std::vector<std::string> lines = nodeLog(last_.err, node);
    EXPECT_TRUE(anyIs(lines, std::string("create: ") + kind +
                                 " got its own descriptor; on the node context emit_event -> " +
                                 std::to_string(OE_FAILED_PRECONDITION) + ", state_get -> " +
                                 std::to_string(OE_FAILED_PRECONDITION)))
        << node << ":\n"
        << joined(lines) << last_.describe();
  }
  const std::vector<json> events = onlyRunEvents(experience_.path());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["status"], "success") << dump(events);
}

TEST_F(Contract, TruncatedDescriptorIsListedWithItsKinds) {
  const ProcessResult r = oe({"plugins"}, {"truncated"});
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(std::regex_search(r.out, listingLine("dev.oe.fixture.truncated",
                                                   "abi-contract,abi-contract-b", "truncated.so")))
      << r.describe();
  EXPECT_EQ(r.err.find("refused plugin"), std::string::npos) << r.describe();
}

TEST_F(Contract, EmitEventAcceptsSharedAndOwnTypesAndRefusesTheRest) {
  run(R"(name: abi-contract-events
version: 0.1.0
state:
  schema:
    statuses: { type: array }
graph:
  nodes:
    - { id: emit, kind: abi-contract, args: { mode: events }, writes: [statuses] }
  edges: []
)",
      "contract");
  ASSERT_TRUE(last_.exited) << last_.describe();
  ASSERT_EQ(last_.exit_code, 0) << last_.describe();
  // node.activity, dev.oe.fixture.contract.custom, other.plugin.thing, run.finished
  EXPECT_EQ(state("statuses"),
            json::array({OE_OK, OE_OK, OE_INVALID_ARGUMENT, OE_INVALID_ARGUMENT}));

  const std::vector<json> events = onlyRunEvents(experience_.path());
  for (const char* type : {"node.activity", "dev.oe.fixture.contract.custom"}) {
    const std::vector<json> emitted = eventsOfType(events, type);
    ASSERT_EQ(emitted.size(), 1u) << type << "\n" << dump(events);
    EXPECT_EQ(emitted[0]["node_id"], "emit") << emitted[0];
    EXPECT_EQ(emitted[0]["from"], "abi-contract") << emitted[0];
  }
  EXPECT_TRUE(eventsOfType(events, "other.plugin.thing").empty()) << dump(events);
  const std::vector<json> finished = eventsOfType(events, "run.finished");
  ASSERT_EQ(finished.size(), 1u) << "only the host ends a run\n" << dump(events);
  EXPECT_EQ(finished[0]["status"], "success");
  EXPECT_EQ(finished[0], events.back());
  // The refusal is logged as the node, saying what is allowed.
  const std::vector<std::string> lines = nodeLog(last_.err, "emit");
  for (const char* refused : {"other.plugin.thing", "run.finished"}) {
    EXPECT_TRUE(
        anyIs(lines, std::string("emit_event refused type \"") + refused +
                         "\": a plugin emits node.activity, node.tokens, policy.denied or its own "
                         "\"dev.oe.fixture.contract.<name>\""))
        << refused << "\n"
        << joined(lines) << last_.describe();
  }
}

// Ctrl-C while a long invoke runs: the kind's cancel reaches it (or, for the truncated kind,
// which has none, is_cancelled turns true), invoke returns OE_CANCELLED and the run ends
// interrupted. Without timeout_ms the call runs inline on the coordinator and the signal
// thread cancels it; with one it runs on a worker and the coordinator does.
struct SigintCase {
  const char* name;
  const char* fixture;
  const char* timeout;  // the node's timeout_ms line, or ""
  const char* stopped;  // the fixture's error message
};

void PrintTo(const SigintCase& c, std::ostream* os) { *os << c.name; }

class Sigint : public Contract, public ::testing::WithParamInterface<SigintCase> {};

INSTANTIATE_TEST_SUITE_P(
    Paths, Sigint,
    ::testing::Values(SigintCase{"Inline", "contract", "", "stopped by cancel()"},
                      SigintCase{"OnAWorker", "contract", "      timeout_ms: 600000\n",
                                 "stopped by cancel()"},
                      SigintCase{"TruncatedKindPolls", "truncated", "",
                                 "stopped on is_cancelled (this kind has no cancel)"}),
    [](const ::testing::TestParamInfo<SigintCase>& param_info) {
      return std::string(param_info.param.name);
    });

TEST_P(Sigint, CancelReachesTheRunningInvokeAndTheRunEndsInterrupted) {
  const SigintCase& c = GetParam();
  const std::filesystem::path reached = experience_.path() / "reached";
  writeFile(experience_.path() / "experience.yaml", R"(name: abi-contract-sigint
version: 0.1.0
state:
  schema:
    out: { type: string }
graph:
  nodes:
    - id: wait
      kind: abi-contract
      args: { mode: block, marker: ")" + reached.string() +
                                                        R"(" }
)" + c.timeout + R"(      writes: [out]
  edges: []
)");
  trust({c.fixture});
  oe::test::BackgroundProcess run({OE_EXE, "run", experience_.path().string()},
                                  {{"OE_PLUGIN_PATH", pluginPath({c.fixture})},
                                   {"HOME", home_.path().string()},
                                   {"OE_TRUST_FILE", trustFile().string()}},
                                  home_.path(), home_.path() / "oe");
  // The fixture creates `reached` inside invoke: the signal arrives while invoke runs.
  ASSERT_TRUE(oe::test::waitForFile(reached)) << run.err();
  run.signal(SIGINT);
  const int code = run.wait();
  EXPECT_EQ(run.err().find(kViolation), std::string::npos) << run.err();
  ASSERT_EQ(code, 128 + SIGINT) << run.out() << run.err();

  const std::vector<json> events = onlyRunEvents(experience_.path());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["type"], "run.finished") << dump(events);
  EXPECT_EQ(events.back()["status"], "interrupted") << dump(events);
  const std::vector<json> failed = eventsOfType(events, "node.failed");
  ASSERT_EQ(failed.size(), 1u) << dump(events);
  EXPECT_EQ(failed[0]["node_id"], "wait");
  EXPECT_NE(failed[0].dump().find(c.stopped), std::string::npos) << failed[0];
}

// More calls than the pool has workers (64, kMaxPoolThreads): `hold`'s 64 items take every
// worker until their own timeout cancels them, so `late` (timeout_ms: 1) times out while it waits
// for a worker. The fixture aborts oe if cancel reaches a node outside its invoke, and `late`'s
// invoke would create its marker: a call cancelled before it starts is never invoked.
TEST_F(Contract, ATimeoutSpentQueuedForAWorkerNeverReachesThePlugin) {
  const std::filesystem::path late_marker = experience_.path() / "late-invoked";
  run(R"(name: abi-contract-queued
version: 0.1.0
runtime: { concurrency: 2 }
state:
  schema:
    items: { type: array }
    out: { type: string }
graph:
  nodes:
    - { id: seed, kind: abi-contract, args: { mode: seed, count: 64 }, writes: [items] }
    - id: hold
      kind: abi-contract
      for_each: { source: $.items, concurrency: 64 }
      args: { mode: block }
      timeout_ms: 2000
      writes: [out]
    - id: late
      kind: abi-contract-b
      args: { mode: block, marker: ")" +
          late_marker.string() + R"(" }
      timeout_ms: 1
      writes: [out]
  edges:
    - { from: seed, to: hold }
    - { from: seed, to: late }
)",
      "contract");
  ASSERT_TRUE(last_.exited) << "the fixture aborted oe: " << last_.describe();
  EXPECT_EQ(last_.err.find(kViolation), std::string::npos) << last_.describe();
  EXPECT_EQ(last_.exit_code, 1) << last_.describe();
  EXPECT_FALSE(std::filesystem::exists(late_marker))
      << "late was invoked after its timeout cancelled it\n"
      << last_.describe();

  const std::vector<json> events = onlyRunEvents(experience_.path());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["status"], "partial") << "seed succeeded, hold and late failed";
  std::string late_error;
  int hold_timeouts = 0;
  for (const json& event : eventsOfType(events, "node.failed")) {
    const std::string text = event.dump();
    if (event["node_id"] == "late") {
      late_error = text;
    } else if (event["node_id"] == "hold" &&
               text.find("timed out after 2000 ms") != std::string::npos) {
      ++hold_timeouts;
    }
  }
  EXPECT_NE(late_error.find("timed out after 1 ms"), std::string::npos) << dump(events);
  // Every item held its worker until its own timeout, and cancel() reached it there.
  EXPECT_EQ(hold_timeouts, 64) << dump(events);
}

}  // namespace
}  // namespace oe::abi_test

// A plugin that breaks the call contract (fixtures/misuse_plugin.c), run by the real `oe`: the
// host refuses the misuse, says so, and keeps its own account of the run true.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "abi/fixtures.hpp"
#include "abi/oe_binary.hpp"
#include "abi/process.hpp"

namespace oe::abi_test {
namespace {

using nlohmann::json;

// Nodes of kind abi-misuse, each with its args, run one after another in the order given.
std::filesystem::path writeMisuseExperience(const std::filesystem::path& dir,
                                            const std::vector<std::pair<std::string, std::string>>&
                                                nodes) {
  std::string yaml = R"(name: abi-misuse
version: 0.1.0
state:
  schema:
    stale: { type: object }
graph:
  nodes:
)";
  for (const auto& [id, args] : nodes) {
    yaml += "    - id: " + id + "\n      kind: abi-misuse\n      args: " + args +
            "\n      writes: [stale]\n";
  }
  yaml += nodes.size() < 2 ? "  edges: []\n" : "  edges:\n";
  for (size_t i = 1; i < nodes.size(); ++i) {
    yaml += "    - { from: " + nodes[i - 1].first + ", to: " + nodes[i].first + " }\n";
  }
  writeFile(dir / "experience.yaml", yaml);
  return dir;
}

TEST_F(OeBinary, ACallContextUsedAfterItsInvokeReturnedIsRefusedAndReported) {
  TempDir experience;
  writeMisuseExperience(experience.path(), {{"keeper", R"({ mode: keep })"},
                                            {"user", R"({ mode: stale })"}});
  trust({"misuse"});
  const ProcessResult r = oe({"run", experience.path().string(), "--json"}, {"misuse"});
  ASSERT_TRUE(r.exited) << r.describe();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json out = json::parse(r.out);
  const json& stale = out["final_state"]["stale"];
  EXPECT_EQ(stale["emit"], OE_FAILED_PRECONDITION) << stale;
  EXPECT_EQ(stale["cancelled"], true) << "a context that ended reads as cancelled: " << stale;
  EXPECT_EQ(stale["live_emit"], OE_OK) << stale;
  // Nothing reached the run's log through the dead context, under any node.
  bool live_seen = false;
  for (const json& event : onlyRunEvents(experience.path())) {
    const std::string text = event.dump();
    EXPECT_EQ(text.find("a call that ended"), std::string::npos) << text;
    live_seen = live_seen || (text.find("from the live call") != std::string::npos &&
                              event.value("node_id", "") == "user");
  }
  EXPECT_TRUE(live_seen) << "the live call's event is logged under its own node";
  EXPECT_NE(r.err.find("plugin misbehaving: emit_event was given a host context that is no longer "
                       "valid (a call context of kind \"abi-misuse\", plugin "
                       "\"dev.oe.fixture.misuse\")"),
            std::string::npos)
      << r.describe();
}

TEST_F(OeBinary, ACallThatFloodsTheRunLogIsCappedWithOneWarning) {
  TempDir experience;
  writeMisuseExperience(experience.path(), {{"flood", R"({ mode: flood })"}});
  // Without --json: the node's warnings (node.log) are what `oe run` shows, with the final state.
  trust({"misuse"});
  const ProcessResult r = oe({"run", experience.path().string()}, {"misuse"});
  ASSERT_TRUE(r.exited) << r.describe();
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const std::string marker = "  stale: ";
  const size_t at = r.out.find(marker);
  ASSERT_NE(at, std::string::npos) << r.describe();
  const size_t from = at + marker.size();
  const json stale = json::parse(r.out.substr(from, r.out.find('\n', from) - from));
  EXPECT_EQ(stale["oversize"], OE_RESOURCE_EXHAUSTED) << "a 100 KiB event is over the size cap";
  EXPECT_GT(stale["refused"].get<int>(), 0) << stale;
  EXPECT_EQ(stale["refusal"], OE_RESOURCE_EXHAUSTED) << stale;
  // 20 MB were attempted; the burst (1 MiB) and the rate let through a fraction of it.
  EXPECT_LT(stale["accepted"].get<int>(), 20000) << stale;
  uintmax_t log_bytes = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(experience.path() / ".openexpertise" / "runs")) {
    log_bytes += std::filesystem::file_size(entry.path());
  }
  EXPECT_LT(log_bytes, uintmax_t{10} << 20) << "the run log stays far below what was attempted";
  // The cause once (the first refusal: "node.activity" plus 100 KiB of fields), the count at the
  // end: every refusal of the call, the oversize one included.
  const std::string shown = r.out + r.err;  // the lines go to stderr, the summary to stdout
  const auto count = [&shown](const std::string& needle) {
    int n = 0;
    for (size_t i = shown.find(needle); i != std::string::npos; i = shown.find(needle, i + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count("emit_event refused an event of 102413 bytes"), 1) << shown.substr(0, 4000);
  EXPECT_EQ(count("further refusals in this call are counted"), 1) << shown.substr(0, 4000);
  EXPECT_EQ(count("emit_event and log refused " +
                  std::to_string(stale["refused"].get<int>() + 1) + " writes of this call in all"),
            1)
      << shown.substr(0, 4000);
}

}  // namespace
}  // namespace oe::abi_test

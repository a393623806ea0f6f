// `oe demo` through the binary: the list of the shipped recorded examples, and one replayed
// offline with no provider configured, ending as its recording says, leaving no folder behind.
#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using nlohmann::json;

class DemoCli : public OeTest {
 protected:
  // No provider: a demo that reached for the network would fail.
  std::map<std::string, std::string> offline() {
    return {{"OPENAI_API_KEY", ""},          {"ANTHROPIC_API_KEY", ""},
            {"OPENAI_BASE_URL", ""},         {"ANTHROPIC_BASE_URL", ""},
            {"OE_SCRIPTED_CLI_ANSWERS", ""}, {"TMPDIR", dir_.path().string()}};
  }
};

TEST_F(DemoCli, ListsTheDemos) {
  auto r = oe({"demo"}, offline());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"review-branch  ", "deep-research  ", "brainstorming  ",
                           "systematic-debugging  ", "tri-cli-orchestration  "}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << r.out;
  }
  auto listed = oe({"demo", "--json"}, offline());
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(json::parse(listed.out).size(), 5U) << listed.out;
}

TEST_F(DemoCli, ReviewBranchReplaysOfflineToSuccess) {
  auto r = oe({"demo", "review-branch", "--json"}, offline());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["status"], "success");
  EXPECT_EQ(out["final_state"]["risk_score"], 0.75);
  EXPECT_NE(r.err.find("replaying llm-recording.jsonl"), std::string::npos) << r.err;
  // The temporary copy is gone: TMPDIR is the test's folder, which holds nothing else of oe's.
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    EXPECT_FALSE(entry.path().filename().string().starts_with("oe-demo-")) << entry.path();
  }
}

TEST_F(DemoCli, AnUnknownDemoNamesTheDemos) {
  auto r = oe({"demo", "nope"}, offline());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no demo \"nope\"; the demos are brainstorming, deep-research"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace oe::test

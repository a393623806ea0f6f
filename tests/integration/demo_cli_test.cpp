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
  // The copy is kept, and the folder every hint of the summary names exists: TMPDIR is the
  // test's folder, which holds nothing else of oe's.
  int copies = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    if (entry.path().filename().string().starts_with("oe-demo-")) {
      ++copies;
      EXPECT_TRUE(std::filesystem::exists(entry.path() / "review-branch" / "experience.yaml"));
      EXPECT_NE(r.err.find("remove it with rm -r " + entry.path().string()), std::string::npos)
          << r.err;
    }
  }
  EXPECT_EQ(copies, 1);
}

TEST_F(DemoCli, EveryFolderTheSummaryNamesStillExists) {
  auto r = oe({"demo", "review-branch"}, offline());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string flag = "--experience ";
  int hints = 0;
  for (size_t at = r.out.find(flag); at != std::string::npos; at = r.out.find(flag, at + 1)) {
    const size_t start = at + flag.size();
    const size_t end = r.out.find_first_of("` )\n", start);
    const std::filesystem::path named = r.out.substr(start, end - start);
    EXPECT_TRUE(std::filesystem::is_directory(named)) << named << " in\n" << r.out;
    ++hints;
  }
  EXPECT_GT(hints, 0) << r.out;
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

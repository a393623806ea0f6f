// The LLM examples run offline from their shipped recordings and end in the state their README
// promises (issue 4: "examples run offline from their recordings").
#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using nlohmann::json;

class ExamplesReplayTest : public OeTest {
 protected:
  // Copies examples/<name> (without any .openexpertise/ left by a local run) into the temp dir
  // and runs it from its recording with no provider configured.
  json replay(const std::string& name, int* exit_code) {
    const auto source = std::filesystem::path(OE_SOURCE_DIR) / "examples" / name;
    for (const auto& entry : std::filesystem::directory_iterator(source)) {
      if (entry.path().filename() != ".openexpertise") {
        std::filesystem::copy(entry.path(), dir_.path() / entry.path().filename(),
                              std::filesystem::copy_options::recursive);
      }
    }
    auto r = oe({"run", dir_.path().string(), "--json", "--llm-replay",
                 (dir_.path() / "llm-recording.jsonl").string()},
                {{"OPENAI_API_KEY", ""},
                 {"ANTHROPIC_API_KEY", ""},
                 {"OPENAI_BASE_URL", ""},
                 {"ANTHROPIC_BASE_URL", ""}});
    *exit_code = r.exit_code;
    last_stderr_ = r.err;
    auto parsed = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << r.out << r.err;
    return parsed;
  }
};

TEST_F(ExamplesReplayTest, AgentEcho) {
  int code = -1;
  json out = replay("agent-echo", &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["final_state"]["greeting"], "Hello, World! It's great to meet you.");
}

TEST_F(ExamplesReplayTest, ReviewBranch) {
  int code = -1;
  json out = replay("review-branch", &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  EXPECT_EQ(out["status"], "success");
  const json& state = out["final_state"];
  ASSERT_EQ(state["findings"].size(), 3U);
  EXPECT_EQ(state["findings"][0]["dimension"], "security");  // item order (deterministic)
  EXPECT_EQ(state["verified_findings"].size(), 3U);
  EXPECT_EQ(state["risk_score"], 0.75);
  EXPECT_EQ(out["usage"]["llm_calls"], 7);
}

}  // namespace
}  // namespace oe::test

// Fixture of the cli-agent plugin tests: the BUILT cli_agent.so loaded through the real ABI by a
// FakeHost serving oe.prompt/1, with the fake claude, codex and gemini (tests/fixtures/bin) first
// on PATH and each run of them recorded (argv, cwd, stdin) in the temp experience directory.
#pragma once

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "support/llm_kind_fixture.hpp"
#include "support/scoped_env.hpp"

namespace oe::cliagent::test {

struct CliAgentKind {
  static constexpr const char* kPluginPath = OE_CLI_AGENT_PLUGIN_PATH;
  static constexpr const char* kKind = "cli-agent";
  static constexpr const char* kFileField = "prompt";  // inline text for this kind
};

inline std::string pathWithFixtures() {
  const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): tests set it first
  return std::string(OE_CLI_AGENT_FIXTURE_BIN) + ":" + (path == nullptr ? "/usr/bin:/bin" : path);
}

class CliAgentTest : public oe::test::LlmKindTest<CliAgentKind> {
 protected:
  CliAgentTest()
      : path_("PATH", pathWithFixtures()),
        record_("FAKE_CLI_RECORD", (dir_.path() / "record.jsonl").string()) {}

  // A cli-agent node: `provider`, `prompt`, `writes` and `extra` fields.
  static Json cliNode(const std::string& id, const std::string& provider,
                      const std::string& prompt, const Json& writes = Json::array(),
                      Json extra = Json::object()) {
    extra["provider"] = provider;
    return spec(id, prompt, writes, extra);
  }

  // Every run of a fake CLI so far: {"cli", "argv", "cwd", "stdin"}.
  [[nodiscard]] std::vector<Json> records() const {
    std::vector<Json> out;
    std::ifstream in(dir_.path() / "record.jsonl");
    for (std::string line; std::getline(in, line);) {
      out.push_back(Json::parse(line));
    }
    return out;
  }

  [[nodiscard]] std::vector<oe::test::RecordedEvent> eventsOf(const std::string& type) const {
    std::vector<oe::test::RecordedEvent> out;
    for (const auto& event : host_.events()) {
      if (event.type == type) {
        out.push_back(event);
      }
    }
    return out;
  }

 private:
  oe::test::ScopedEnv path_;
  oe::test::ScopedEnv record_;
};

}  // namespace oe::cliagent::test

// Fixture of the agent plugin tests: the shared LLM-kind fixture over the BUILT agent.so.
#pragma once

#include "support/llm_kind_fixture.hpp"

namespace oe::agent::test {

struct AgentKind {
  static constexpr const char* kPluginPath = OE_AGENT_PLUGIN_PATH;
  static constexpr const char* kKind = "agent";
  static constexpr const char* kFileField = "prompt";
};
using AgentTest = oe::test::LlmKindTest<AgentKind>;
using Json = AgentTest::Json;
using oe::test::CallResult;
using oe::test::CreateResult;

}  // namespace oe::agent::test

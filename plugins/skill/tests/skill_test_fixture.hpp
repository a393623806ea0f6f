// Fixture of the skill plugin tests: the shared LLM-kind fixture over the BUILT skill.so.
#pragma once

#include "support/llm_kind_fixture.hpp"

namespace oe::skill::test {

struct SkillKind {
  static constexpr const char* kPluginPath = OE_SKILL_PLUGIN_PATH;
  static constexpr const char* kKind = "skill";
  static constexpr const char* kFileField = "impl";
};
using SkillTest = oe::test::LlmKindTest<SkillKind>;
using Json = SkillTest::Json;
using oe::test::CallResult;
using oe::test::CreateResult;

}  // namespace oe::skill::test

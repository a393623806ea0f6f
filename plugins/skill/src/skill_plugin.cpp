// The `skill` node kind (plugin dev.oe.skill, reference §6.3): a directory holding SKILL.md,
// whose body is the system prompt; the user message is the node's inputs as pretty JSON. The
// answer is text for the node's single writes field or, with an object `schema:` (an oe
// addition), a structured_output object checked and repaired as for agent.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <memory>
#include <oe/cpp/plugin.hpp>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "llm_kit/ask.hpp"
#include "llm_kit/node_setup.hpp"
#include "llm_kit/options.hpp"

#ifndef OE_SKILL_PLUGIN_VERSION
#error "OE_SKILL_PLUGIN_VERSION must be defined by the build"
#endif

namespace oe::skill {
namespace {

using llmkit::Expected;
using llmkit::fail;

constexpr const char* kSpecSchema =
    R"j({"type":"object","required":["impl"],"properties":{)j"
    R"j("impl":{"type":"string","minLength":1,"x-oe-path":"directory",)j"
    R"j("description":"The skill directory, relative to )j"
    R"j(the experience directory; its SKILL.md (YAML front matter between --- lines, then the )j"
    R"j(instructions) gives the system prompt"},)j"
    R"j("inputs":{"type":"object","description":"Accepted for compatibility and ignored: the )j"
    R"j(model receives the node's reads, edge inputs and args as JSON"},)j"
    R"j("model":{"type":"string","minLength":1,"description":"The model to call; default: the )j"
    R"j(run's default model (OE_ANTHROPIC_MODEL / OE_OPENAI_MODEL, else the provider's)"},)j"
    R"j("schema":{"x-oe-writes":"properties","description":"A JSON Schema object (oe )j"
    R"j(addition): the model must answer by )j"
    R"j(calling the structured_output tool with an object matching it, and that object is the )j"
    R"j(node's state delta. Without it the answer is text, written to the single writes field"},)j"
    R"j("args":{"type":"object","description":"Values added to what the model receives; $.path )j"
    R"j(values are read from state"},)j"
    R"j("max_tokens":{"type":"integer","minimum":1,"description":"Upper bound on the tokens )j"
    R"j(of each answer (default 4096)"},)j"
    R"j("repair_attempts":{"type":"integer","minimum":0,"description":"With schema: how many )j"
    R"j(more calls may ask the model to fix an answer that is missing or fails the schema, )j"
    R"j(showing it the errors (default 1; 0 fails on the first bad answer)"}}})j";

struct SkillFile {
  std::string name;  // front matter `name`, else empty
  std::string body;  // the markdown after the front matter
};

// The line starting at `pos` is exactly `---` (a CR before the newline is allowed).
bool delimiterAt(const std::string& text, size_t pos, size_t* next_line) {
  if (text.compare(pos, 3, "---") != 0) {
    return false;
  }
  size_t end = pos + 3;
  if (end < text.size() && text[end] == '\r') {
    ++end;
  }
  if (end < text.size() && text[end] != '\n') {
    return false;
  }
  *next_line = end < text.size() ? end + 1 : end;
  return true;
}

// gray-matter's split: front matter from an opening `---` line to the next `---` line (or the
// end), the body after it. A file without an opening line is all body.
Expected<SkillFile> parseSkillFile(const std::string& text, const std::string& path,
                                   const std::string& who) {
  SkillFile skill;
  size_t matter_start = 0;
  if (!delimiterAt(text, 0, &matter_start)) {
    skill.body = text;
    return skill;
  }
  size_t matter_end = text.size();
  size_t body_start = text.size();
  for (size_t line = matter_start; line < text.size();) {
    size_t after = 0;
    if (delimiterAt(text, line, &after)) {
      matter_end = line;
      body_start = after;
      break;
    }
    const size_t newline = text.find('\n', line);
    line = newline == std::string::npos ? text.size() : newline + 1;
  }
  skill.body = text.substr(body_start);
  try {
    const YAML::Node matter = YAML::Load(text.substr(matter_start, matter_end - matter_start));
    if (matter.IsMap() && matter["name"] && matter["name"].IsScalar()) {
      skill.name = matter["name"].as<std::string>();
    }
  } catch (const YAML::Exception& error) {
    // Lines count from the file's first line: the front matter starts on line 2.
    return fail(OE_INVALID_ARGUMENT, who + ": the front matter of " + path +
                                         " is not valid YAML (line " +
                                         std::to_string(error.mark.line + 2) + ", column " +
                                         std::to_string(error.mark.column + 1) + "): " + error.msg);
  }
  return skill;
}

Expected<SkillFile> loadSkill(const std::string& dir, const std::string& who) {
  namespace fs = std::filesystem;
  const std::string path = (fs::path(dir) / "SKILL.md").string();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return fail(OE_NOT_FOUND,
                "SKILL.md not found in skill directory: " + dir + " (looked for " + path + ")");
  }
  auto text = llmkit::readText(path, who);
  if (!text) {
    return std::move(text).failure();
  }
  return parseSkillFile(*text, path, who);
}

}  // namespace

// One `kind: skill` node. Immutable after create, so invoke is reentrant (for_each).
class SkillNode final : public sdk::Node {
 public:
  SkillNode(llmkit::LlmNodeOptions options, SkillFile skill)
      : options_(std::move(options)),
        system_(std::move(skill.body)),
        activity_("calling " + options_.modelLabel() +
                  " (skill: " + (skill.name.empty() ? options_.id : skill.name) + ")") {}

  void invoke(sdk::Call& call) override {
    // Checked before the call, so a misdeclared node spends no tokens.
    if (!options_.schema && options_.writes.size() != 1) {
      throw sdk::Error(OE_INVALID_ARGUMENT,
                       options_.who + " must declare exactly one write field for text mode; got " +
                           std::to_string(options_.writes.size()) +
                           ". Structured-output skills land in Plan 3+.");
    }
    const llmkit::LlmServices services = llmkit::orRaise(llmkit::findServices(call, options_.who));
    llmkit::AskSpec spec;
    spec.system = system_;
    spec.user = llmkit::orRaise(llmkit::valuesJson(services, 2, options_.who));
    spec.calling_activity = activity_;
    call.respond(llmkit::orRaise(llmkit::ask(services, call, options_, spec)));
  }

 private:
  const llmkit::LlmNodeOptions options_;
  const std::string system_;
  const std::string activity_;
};

class SkillPlugin {
 public:
  // Stateless: every node asks the host's services through its own call.
  explicit SkillPlugin(sdk::Host /*host*/) {}

  static constexpr std::span<const sdk::KindSpec<SkillPlugin>> kinds();

  static std::unique_ptr<sdk::Node> create(SkillPlugin& /*plugin*/, std::string_view config_json) {
    llmkit::LlmNodeSetup setup = llmkit::orRaise(llmkit::readLlmNode(
        config_json, "skill", "Skill", {"impl", "the skill directory that holds SKILL.md"}));
    SkillFile skill = llmkit::orRaise(loadSkill(setup.path, setup.options.who));
    return std::make_unique<SkillNode>(std::move(setup.options), std::move(skill));
  }
};

namespace {
constexpr sdk::KindSpec<SkillPlugin> kKinds[] = {
    {"skill",
     "Runs a skill directory: SKILL.md is the system prompt, the node's inputs the user "
     "message; the answer is text for one field, or a structured object checked against schema",
     kSpecSchema, OE_NODE_KIND_REENTRANT, &SkillPlugin::create},
};
}  // namespace

constexpr std::span<const sdk::KindSpec<SkillPlugin>> SkillPlugin::kinds() { return kKinds; }

}  // namespace oe::skill

OE_SDK_PLUGIN(oe::skill::SkillPlugin, "dev.oe.skill", OE_SKILL_PLUGIN_VERSION,
              "The skill node kind: SKILL.md directories sent to the run's LLM through oe.llm/1")

// The `agent` node kind (plugin dev.oe.agent, reference §6.2): a prompt template file rendered
// with the node's inputs, sent to the run's LLM through the host (oe.llm/1); the answer is text
// for the node's single writes field, or a structured_output object checked against `schema:`
// and repaired by the model when it does not match.
#include <filesystem>
#include <memory>
#include <oe/cpp/plugin.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "llm_kit/ask.hpp"
#include "llm_kit/node_setup.hpp"
#include "llm_kit/options.hpp"

#ifndef OE_AGENT_PLUGIN_VERSION
#error "OE_AGENT_PLUGIN_VERSION must be defined by the build"
#endif

namespace oe::agent {
namespace {

using llmkit::Expected;
using llmkit::fail;
using llmkit::Json;

constexpr const char* kSpecSchema =
    R"j({"type":"object","required":["prompt"],"properties":{)j"
    R"j("prompt":{"type":"string","minLength":1,"x-oe-path":"file",)j"
    R"j("description":"Path of the prompt template )j"
    R"j(file, relative to the experience directory. {{name}}, {{a.b}} and {{$item.id}} )j"
    R"j(placeholders are filled from the node's reads, edge inputs and args; the result is the )j"
    R"j(user message"},)j"
    R"j("model":{"type":"string","minLength":1,"description":"The model to call; default: the )j"
    R"j(run's default model (OE_ANTHROPIC_MODEL / OE_OPENAI_MODEL, else the provider's)"},)j"
    R"j("schema":{"x-oe-writes":"properties","description":"A JSON Schema object: the model )j"
    R"j(must answer by calling the )j"
    R"j(structured_output tool with an object matching it, and that whole object is the node's )j"
    R"j(state delta. Without it the answer is text, written to the node's single writes field"},)j"
    R"j("args":{"type":"object","description":"Values for the prompt's placeholders; $.path )j"
    R"j(values are read from state"},)j"
    R"j("max_tokens":{"type":"integer","minimum":1,"description":"Upper bound on the tokens )j"
    R"j(of each answer (default 4096)"},)j"
    R"j("repair_attempts":{"type":"integer","minimum":0,"description":"With schema: how many )j"
    R"j(more calls may ask the model to fix an answer that is missing or fails the schema, )j"
    R"j(showing it the errors (default 1; 0 fails on the first bad answer)"}}})j";

// The template's text, read once when the node is created.
Expected<std::string> readTemplate(const std::string& path, const std::string& declared,
                                   const std::string& who) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) {
    return fail(OE_NOT_FOUND,
                "Agent prompt template not found: " + path + " (declared as \"" + declared + "\")");
  }
  if (fs::is_directory(status)) {
    return fail(OE_INVALID_ARGUMENT,
                who + ": prompt " + path + " is a directory; prompt: names a template file");
  }
  return llmkit::readText(path, who, "the prompt template");
}

}  // namespace

// One `kind: agent` node. Immutable after create, so invoke is reentrant (for_each).
class AgentNode final : public sdk::Node {
 public:
  AgentNode(llmkit::LlmNodeOptions options, std::string prompt_template)
      : options_(std::move(options)), template_(std::move(prompt_template)) {}

  void invoke(sdk::Call& call) override {
    // Checked before the call, so a misdeclared node spends no tokens (same message upstream
    // gives after the call).
    if (!options_.schema && options_.writes.size() != 1) {
      throw sdk::Error(OE_INVALID_ARGUMENT,
                       options_.who + " returned text but declares " +
                           std::to_string(options_.writes.size()) +
                           " writes; text mode requires exactly a single write field. Use a "
                           "structured schema for multi-field output.");
    }
    const llmkit::LlmServices services = llmkit::orRaise(llmkit::findServices(call, options_.who));
    llmkit::AskSpec spec;
    spec.user = llmkit::orRaise(llmkit::renderPrompt(services, template_, options_.who));
    spec.calling_activity = "calling " + options_.modelLabel();
    call.respond(llmkit::orRaise(llmkit::ask(services, call, options_, spec)));
  }

 private:
  const llmkit::LlmNodeOptions options_;
  const std::string template_;
};

class AgentPlugin {
 public:
  // Stateless: every node asks the host's services through its own call.
  explicit AgentPlugin(sdk::Host /*host*/) {}

  static constexpr std::span<const sdk::KindSpec<AgentPlugin>> kinds();

  static std::unique_ptr<sdk::Node> create(AgentPlugin& /*plugin*/, std::string_view config_json) {
    llmkit::LlmNodeSetup setup = llmkit::orRaise(llmkit::readLlmNode(
        config_json, "agent", "Agent", {"prompt", "the path of a prompt template file"}));
    std::string text = llmkit::orRaise(readTemplate(setup.path, setup.declared, setup.options.who));
    return std::make_unique<AgentNode>(std::move(setup.options), std::move(text));
  }
};

namespace {
constexpr sdk::KindSpec<AgentPlugin> kKinds[] = {
    {"agent",
     "Asks the run's LLM with a prompt template file; the answer is text for one field, or a "
     "structured object checked against the node's schema (and repaired when it fails)",
     kSpecSchema, OE_NODE_KIND_REENTRANT, &AgentPlugin::create},
};
}  // namespace

constexpr std::span<const sdk::KindSpec<AgentPlugin>> AgentPlugin::kinds() { return kKinds; }

}  // namespace oe::agent

OE_SDK_PLUGIN(oe::agent::AgentPlugin, "dev.oe.agent", OE_AGENT_PLUGIN_VERSION,
              "The agent node kind: prompt templates sent to the run's LLM through oe.llm/1")

// The `evolution` node kind (plugin dev.oe.evolution, reference §8.1): upstream's
// EvolutionAdvisor. One LLM call through the host's oe.llm/1 with oe's proposal prompt (a file
// installed beside oe, or the node's `prompt:`), upstream's user message and structured_output
// schema; the answer is edge_output {proposals: [...]}.
#include <dlfcn.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <oe/cpp/plugin.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llm_kit/node_setup.hpp"
#include "llm_kit/options.hpp"

#ifndef OE_EVOLUTION_PLUGIN_VERSION
#error "OE_EVOLUTION_PLUGIN_VERSION must be defined by the build"
#endif

namespace oe::evolution {
namespace {

using llmkit::Json;

constexpr uint32_t kMaxTokens = 8192;  // upstream's
constexpr size_t kSampleEvents = 30;   // upstream's sample_events

constexpr const char* kSpecSchema =
    R"j({"type":"object","properties":{)j"
    R"j("prompt":{"type":"string","minLength":1,"x-oe-path":"file","description":"A system )j"
    R"j(prompt file that replaces oe's proposal prompt, relative to the experience directory"},)j"
    R"j("model":{"type":"string","minLength":1,"description":"The model to call; default: the )j"
    R"j(run's default model"},)j"
    R"j("max_tokens":{"type":"integer","minimum":1,"description":"Upper bound on the )j"
    R"j(answer's tokens (default 8192)"},)j"
    R"j("args":{"type":"object","description":"experience_yaml (string), run_events (array), )j"
    R"j(state_diff (array of {field, before, after}) and run_id; $.path values are read from )j"
    R"j(state"}}})j";

// Upstream's structured_output schema, key for key.
Json proposalSchema() {
  return Json::parse(R"j({
  "type": "object",
  "required": ["proposals"],
  "properties": {
    "proposals": {
      "type": "array",
      "maxItems": 5,
      "items": {
        "type": "object",
        "required": ["operation", "confidence", "title", "rationale", "diff"],
        "properties": {
          "operation": {"type": "string", "enum": ["add-node", "tune-param", "add-dataset-case"]},
          "confidence": {"type": "string", "enum": ["high", "medium", "low"]},
          "title": {"type": "string"},
          "rationale": {"type": "string"},
          "diff": {"type": "string"}
        }
      }
    }
  }
})j");
}

// <prefix>/share/oe/evolution/proposal.md for this library at <prefix>/lib/oe/plugins/.
std::filesystem::path shippedPrompt() {
  Dl_info info{};
  static const int kAnchor = 0;  // an address inside this library
  if (dladdr(&kAnchor, &info) == 0 || info.dli_fname == nullptr) {
    return "share/oe/evolution/proposal.md";
  }
  const auto lib_dir = std::filesystem::absolute(info.dli_fname).parent_path();
  return (lib_dir / ".." / ".." / ".." / "share" / "oe" / "evolution" / "proposal.md")
      .lexically_normal();
}

std::string stringOr(const Json& value, const char* key, std::string fallback = {}) {
  auto it = value.find(key);
  return it != value.end() && it->is_string() ? it->get<std::string>() : std::move(fallback);
}

}  // namespace

class EvolutionNode final : public sdk::Node {
 public:
  EvolutionNode(std::string who, std::string system, std::optional<std::string> model,
                uint32_t max_tokens, std::vector<std::string> writes)
      : who_(std::move(who)),
        system_(std::move(system)),
        model_(std::move(model)),
        max_tokens_(max_tokens),
        writes_(std::move(writes)) {}

  void invoke(sdk::Call& call) override {
    const Json request = Json::parse(call.request(), nullptr, false);
    const Json args = request.is_object() ? request.value("args", Json::object()) : Json::object();
    const Json events = args.value("run_events", Json::array());
    if (!args.contains("experience_yaml") || !args["experience_yaml"].is_string()) {
      throw sdk::Error(OE_INVALID_ARGUMENT,
                       who_ + ": args.experience_yaml must be the experience's YAML text");
    }
    if (!events.is_array()) {
      throw sdk::Error(OE_INVALID_ARGUMENT, who_ + ": args.run_events must be an array of events");
    }
    // Upstream's user message: JSON.stringify({...}, null, 2), in this key order.
    Json user = Json::object();
    user["experience_yaml"] = args["experience_yaml"];
    user["run_event_count"] = events.size();
    // Upstream's {field, before, after} key order (the host's JSON may have sorted them).
    Json diff = Json::array();
    for (const auto& entry : args.value("state_diff", Json::array())) {
      if (entry.is_object() && entry.contains("field")) {
        Json ordered = Json::object();
        ordered["field"] = entry["field"];
        ordered["before"] = entry.value("before", Json());
        ordered["after"] = entry.value("after", Json());
        diff.push_back(std::move(ordered));
      } else {
        diff.push_back(entry);
      }
    }
    user["state_diff"] = std::move(diff);
    Json sample = Json::array();
    for (size_t i = 0; i < events.size() && i < kSampleEvents; ++i) {
      sample.push_back(events[i]);
    }
    user["sample_events"] = std::move(sample);

    Json tool = Json::object();
    tool["name"] = "structured_output";
    tool["description"] = "Return the evolution proposals for this run";
    tool["input_schema"] = proposalSchema();
    Json body = Json::object();
    if (model_) {
      body["model"] = *model_;
    }
    body["system"] = system_;
    body["max_tokens"] = max_tokens_;
    body["messages"] = Json::array({Json{{"role", "user"}, {"content", user.dump(2)}}});
    body["tools"] = Json::array({tool});

    const sdk::Llm llm = call.llm();
    if (!llm) {
      throw sdk::Error(OE_UNIMPLEMENTED, who_ + ": this host offers no oe.llm/1 service");
    }
    call.emitEvent(
        "node.activity",
        Json{{"message", "asking " + (model_ ? *model_ : std::string("the default model")) +
                             " for evolution proposals"}}
            .dump());
    const sdk::LlmReply reply = llm.complete(body.dump());
    if (reply.status() != OE_OK) {
      throw sdk::Error(reply.status(), who_ + ": " + std::string(reply.error()));
    }
    const Json answer = Json::parse(reply.response(), nullptr, false);
    Json proposals = Json::array();
    bool called = false;
    if (answer.is_object() && answer.contains("tool_calls") && answer["tool_calls"].is_array()) {
      for (const auto& tool_call : answer["tool_calls"]) {
        if (!tool_call.is_object() || stringOr(tool_call, "name") != "structured_output") {
          continue;
        }
        called = true;
        const Json input = tool_call.value("input", Json::object());
        const Json listed =
            input.is_object() ? input.value("proposals", Json::array()) : Json::array();
        if (!listed.is_array()) {
          call.log(OE_LOG_WARN, who_ +
                                    ": structured_output.proposals is not an array; no "
                                    "proposals taken from it");
          break;
        }
        for (const auto& item : listed) {
          if (!item.is_object()) {
            call.log(OE_LOG_WARN, who_ + ": a proposal that is not an object was dropped");
            continue;
          }
          Json p = Json::object();
          for (const char* key : {"operation", "confidence", "title", "rationale", "diff"}) {
            p[key] = stringOr(item, key);
          }
          proposals.push_back(std::move(p));
        }
        break;
      }
    }
    if (!called) {
      call.log(OE_LOG_INFO, who_ + ": the model called no structured_output tool: no proposals");
    }
    Json out = Json::object();
    out["state_delta"] = Json::object();
    if (writes_.size() == 1) {
      out["state_delta"][writes_.front()] = proposals;  // as a graph node writing one field
    }
    out["edge_output"] = Json{{"proposals", std::move(proposals)}};
    call.respond(out.dump());
  }

 private:
  const std::string who_;
  const std::string system_;
  const std::optional<std::string> model_;
  const uint32_t max_tokens_;
  const std::vector<std::string> writes_;
};

class EvolutionPlugin {
 public:
  explicit EvolutionPlugin(sdk::Host /*host*/) {}

  static constexpr std::span<const sdk::KindSpec<EvolutionPlugin>> kinds();

  static std::unique_ptr<sdk::Node> create(EvolutionPlugin& /*plugin*/,
                                           std::string_view config_json) {
    llmkit::NodeConfig config = llmkit::orRaise(llmkit::parseNodeConfig(config_json, "evolution"));
    const Json& node = config.node;
    const std::string who = "Evolution \"" + stringOr(node, "id", "evolution") + "\"";
    std::optional<std::string> model;
    if (auto it = node.find("model"); it != node.end() && it->is_string()) {
      model = it->get<std::string>();
    }
    uint32_t max_tokens = kMaxTokens;
    if (auto it = node.find("max_tokens"); it != node.end()) {
      if (!it->is_number_unsigned() || it->get<uint64_t>() == 0 ||
          it->get<uint64_t>() > UINT32_MAX) {
        throw sdk::Error(OE_INVALID_ARGUMENT, who + ": max_tokens must be a positive integer");
      }
      max_tokens = static_cast<uint32_t>(it->get<uint64_t>());
    }
    std::vector<std::string> writes;
    if (auto it = node.find("writes"); it != node.end() && it->is_array()) {
      for (const auto& w : *it) {
        if (w.is_string()) {
          writes.push_back(w.get<std::string>());
        }
      }
    }
    std::string path;
    std::string missing_hint;
    if (auto it = node.find("prompt"); it != node.end() && it->is_string()) {
      path = llmkit::resolvePath(config.experience_dir, it->get<std::string>());
      missing_hint =
          "; `prompt:` names a system prompt file relative to the experience directory (oe "
          "evolve --prompt FILE: relative to the current one)";
    } else {
      path = shippedPrompt().string();
      missing_hint =
          "; reinstall oe (it ships share/oe/evolution/proposal.md beside "
          "lib/oe/plugins) or name a prompt file with `prompt:` (oe evolve --prompt "
          "FILE)";
    }
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      throw sdk::Error(OE_NOT_FOUND,
                       who + ": the system prompt " + path + " does not exist" + missing_hint);
    }
    std::string system = llmkit::orRaise(llmkit::readText(path, who, "the system prompt"));
    return std::make_unique<EvolutionNode>(who, std::move(system), std::move(model), max_tokens,
                                           std::move(writes));
  }
};

namespace {
constexpr sdk::KindSpec<EvolutionPlugin> kKinds[] = {
    {"evolution",
     "Asks the run's LLM for up to 5 proposals (add-node, tune-param, add-dataset-case) to "
     "improve an experience, from its YAML, a run's events and state diff",
     kSpecSchema, OE_NODE_KIND_REENTRANT, &EvolutionPlugin::create},
};
}  // namespace

constexpr std::span<const sdk::KindSpec<EvolutionPlugin>> EvolutionPlugin::kinds() {
  return kKinds;
}

}  // namespace oe::evolution

OE_SDK_PLUGIN(oe::evolution::EvolutionPlugin, "dev.oe.evolution", OE_EVOLUTION_PLUGIN_VERSION,
              "The evolution node kind: improvement proposals for an experience from a run, "
              "through oe.llm/1")

// The `experience` node kind: a nested experience (reference §6.5, D15), run to its end by the
// host's oe.subrun/1-draft on the calling worker thread. The node's edge_output is upstream's
// {runId, status, finalState}; a failed child does not fail the node (upstream), but a child
// that cannot start does. oe additions: state_scope shared, and the inputs/outputs mappings
// (docs/kinds-experience.md).
#include <oe/ext/draft/subrun.h>
#include <oe/cpp/host_buffer.hpp>
#include <oe/cpp/plugin.hpp>

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mapping.hpp"

#ifndef OE_EXPERIENCE_PLUGIN_VERSION
#error "OE_EXPERIENCE_PLUGIN_VERSION must be defined by the build"
#endif

namespace oe::experience {
namespace {

// "x-oe-nests" tells the host's validator which field names a nested experience and which one
// its state scope (docs/experience-format.md): it follows the file, validates it, refuses
// cycles and a nesting too deep, and checks a shared child's field types against the parent's.
constexpr const char* kSpecSchema =
    R"j({"type":"object","required":["impl"],)j"
    R"j("x-oe-nests":{"path":"/impl","state_scope":"/state_scope"},"properties":{)j"
    R"j("impl":{"type":"string","minLength":1,"description":"The nested experience: its )j"
    R"j(experience.yaml (or the folder holding it), relative to this experience"},)j"
    R"j("state_scope":{"enum":["isolated","shared"],"description":"isolated (default): the )j"
    R"j(child runs on a fresh state of its own. shared: it starts from this experience's state, )j"
    R"j(and its writes of fields this experience declares land here too, with this )j"
    R"j(experience's types and merge rules"},)j"
    R"j("inputs":{"type":"object","description":"The child run's args: each value a $.path )j"
    R"j(into this experience's state (its first field must be in reads) or a literal"},)j"
    R"j("outputs":{"type":"object","additionalProperties":{"type":"string","pattern":"^\\$"},)j"
    R"j("description":"Fields of this node's writes, each from a $.path into the child's final )j"
    R"j(state"}}})j";

class ExperienceNode final : public sdk::Node {
 public:
  ExperienceNode(const oe_host_api& api, NodeSpec spec) : api_(api), spec_(std::move(spec)) {}

  void invoke(sdk::Call& call) override {
    const Json bundle = Json::parse(call.request(), nullptr, false);
    if (!bundle.is_object()) {
      throw sdk::Error(OE_INVALID_ARGUMENT, "the host's request is not a JSON object");
    }
    const auto* subrun =
        static_cast<const oe_subrun_api*>(api_.get_extension(call.context(), OE_EXT_SUBRUN));
    if (!OE_HAS_MEMBER(oe_subrun_api, subrun, run) || subrun->run == nullptr) {
      throw sdk::Error(OE_UNIMPLEMENTED, "this oe does not offer " OE_EXT_SUBRUN
                                         ", which nested experiences need; use the oe this "
                                         "plugin was built with");
    }
    const Json request = {{"experience", spec_.impl},
                          {"declared_as", spec_.impl},
                          {"state_scope", spec_.scope},
                          {"args", childArgs(spec_, bundle.value("args", Json::object()),
                                             bundle.value("state_view", Json::object()))}};
    const std::string text = request.dump();
    sdk::HostBuffer result(api_, call.context());
    const oe_status status =
        subrun->run(call.context(), oe_str{text.data(), text.size()}, result.out());
    if (status != OE_OK) {
      throw sdk::Error(status, result.str());
    }
    Json child = Json::parse(result.view(), nullptr, false);
    if (!child.is_object()) {
      throw sdk::Error(OE_INTERNAL, "the host's nested-run result is not a JSON object");
    }
    std::vector<std::string> missing;
    Json delta = outputDelta(spec_, child.value("finalState", Json::object()), missing);
    if (!missing.empty()) {
      std::string list;
      for (const std::string& m : missing) {
        list += (list.empty() ? "" : ", ") + m;
      }
      call.log(OE_LOG_WARN, "the nested run " + child.value("runId", std::string()) + " ended " +
                                child.value("status", std::string()) +
                                " without a value for outputs " + list + "; not written");
    }
    const Json response = {{"state_delta", std::move(delta)},
                           {"edge_output",
                            {{"runId", child.value("runId", Json())},
                             {"status", child.value("status", Json())},
                             {"finalState", child.value("finalState", Json::object())}}}};
    call.respond(response.dump());
  }

 private:
  const oe_host_api& api_;
  const NodeSpec spec_;
};

}  // namespace

class ExperiencePlugin {
 public:
  explicit ExperiencePlugin(sdk::Host host) : host_(host) {}

  static constexpr std::span<const sdk::KindSpec<ExperiencePlugin>> kinds();

  static std::unique_ptr<sdk::Node> create(ExperiencePlugin& plugin, std::string_view config_json) {
    const Json config = Json::parse(config_json, nullptr, false);
    if (!config.is_object() || !config.contains("node") || !config["node"].is_object()) {
      throw sdk::Error(OE_INVALID_ARGUMENT, "the experience kind's config has no node object");
    }
    SpecOrError read = readNodeSpec(config["node"]);
    if (!read.spec) {
      throw sdk::Error(OE_INVALID_ARGUMENT, read.error);
    }
    return std::make_unique<ExperienceNode>(*plugin.host_.api(), std::move(*read.spec));
  }

 private:
  sdk::Host host_;
};

namespace {
constexpr sdk::KindSpec<ExperiencePlugin> kKinds[] = {
    {"experience",
     "Runs a nested experience to its end as part of this run: an isolated state of its own or "
     "this experience's state shared, with inputs and outputs mappings",
     kSpecSchema, OE_NODE_KIND_REENTRANT, &ExperiencePlugin::create},
};
}  // namespace

constexpr std::span<const sdk::KindSpec<ExperiencePlugin>> ExperiencePlugin::kinds() {
  return kKinds;
}

}  // namespace oe::experience

OE_SDK_PLUGIN(oe::experience::ExperiencePlugin, "dev.oe.experience", OE_EXPERIENCE_PLUGIN_VERSION,
              "The experience node kind: nested experiences run through oe.subrun/1-draft")

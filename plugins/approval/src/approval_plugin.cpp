// The `approval` node kind (plugin dev.oe.approval): the gate's output once a person decided.
// The question, the parking of the run and the decision are the host's (src/oe/approvals, the
// run engine), as for `approval:` on any node; the host calls this kind only for an approved
// gate, with the decision in args["$approval"], and the kind returns it as its edge_output and
// writes it to the node's single `writes` field, where `when:` on later edges can read it.
#include <memory>
#include <nlohmann/json.hpp>
#include <oe/cpp/plugin.hpp>
#include <span>
#include <string>
#include <string_view>

#ifndef OE_APPROVAL_PLUGIN_VERSION
#error "OE_APPROVAL_PLUGIN_VERSION must be defined by the build"
#endif

namespace oe::approval {
namespace {

using Json = nlohmann::json;

constexpr const char* kSpecSchema =
    R"j({"type":"object","properties":{)j"
    R"j("prompt":{"type":"string","description":"What the person is asked"},)j"
    R"j("show":{"type":"array","items":{"type":"string","minLength":1},"description":"What )j"
    R"j(is presented with the question: $.path of the state, or diff:NODE (the diff of a )j"
    R"j(workspace: worktree node)"},)j"
    R"j("timeout":{"type":"string","pattern":"^[0-9]+[smhd]$","description":"How long the )j"
    R"j(question stays open, e.g. 30m, 2h, 7d (default: no deadline)"},)j"
    R"j("on_timeout":{"enum":["approve","reject","fail"],"description":"What a passed )j"
    R"j(deadline decides (default fail)"}}})j";

}  // namespace

// Immutable after create: reentrant.
class ApprovalNode final : public sdk::Node {
 public:
  explicit ApprovalNode(std::string field) : field_(std::move(field)) {}

  void invoke(sdk::Call& call) override {
    const Json request = Json::parse(call.request(), nullptr, false);
    const Json* decision = nullptr;
    if (request.is_object()) {
      if (auto args = request.find("args"); args != request.end() && args->is_object()) {
        if (auto it = args->find("$approval"); it != args->end() && it->is_object()) {
          decision = &*it;
        }
      }
    }
    if (decision == nullptr) {
      // Only the host's gate calls this kind with a decision; anything else is a host defect
      // or a kind used outside a run that asks (a worker of an older oe).
      throw sdk::Error(OE_INVALID_ARGUMENT,
                       "approval gate called without a decision: this oe does not ask approvals "
                       "for it; upgrade oe or run the node with `oe run`");
    }
    Json out = {{"edge_output", *decision}, {"state_delta", Json::object()}};
    if (!field_.empty()) {
      out["state_delta"][field_] = *decision;
    }
    call.respond(out.dump());
  }

 private:
  const std::string field_;  // the node's one `writes` field, or empty
};

class ApprovalPlugin {
 public:
  explicit ApprovalPlugin(sdk::Host /*host*/) {}

  static constexpr std::span<const sdk::KindSpec<ApprovalPlugin>> kinds();

  static std::unique_ptr<sdk::Node> create(ApprovalPlugin& /*plugin*/,
                                           std::string_view config_json) {
    const Json config = Json::parse(config_json, nullptr, false);
    std::string field;
    if (config.is_object()) {
      const Json node = config.value("node", Json::object());
      if (auto writes = node.find("writes"); writes != node.end() && writes->is_array() &&
                                             !writes->empty() && writes->front().is_string()) {
        field = writes->front().get<std::string>();
      }
    }
    return std::make_unique<ApprovalNode>(std::move(field));
  }
};

namespace {
constexpr sdk::KindSpec<ApprovalPlugin> kKinds[] = {
    {"approval",
     "A gate a person approves or rejects (`oe approve` / `oe reject`): the run parks until "
     "then; the decision is the node's output and its one writes field",
     kSpecSchema, OE_NODE_KIND_REENTRANT, &ApprovalPlugin::create},
};
}  // namespace

constexpr std::span<const sdk::KindSpec<ApprovalPlugin>> ApprovalPlugin::kinds() { return kKinds; }

}  // namespace oe::approval

OE_SDK_PLUGIN(oe::approval::ApprovalPlugin, "dev.oe.approval", OE_APPROVAL_PLUGIN_VERSION,
              "The approval node kind: a gate a person decides, its decision as the node's output")

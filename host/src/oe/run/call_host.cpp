// The Call as the plugin's host context (oe_host_ctx): its invoke on the worker thread (under
// phase_mutex, so an abandon is ordered after every read of the run), its cancel, its handle and
// event budget, the runtime.limits slots it holds (LimitSlot), the host services it answers
// (log, emit_event, state_get, oe.llm/1, oe.limits/1-draft, oe.cli-replay/1-draft, oe.prompt/1,
// oe.subrun/1-draft) and the Run members they reach on the worker thread; and the node context
// given to create.
#include <algorithm>
#include <atomic>
#include <optional>

#include "oe/common/host_buffer.hpp"
#include "oe/expr/interpolate.hpp"
#include "oe/expr/js_value.hpp"
#include "oe/run/engine.hpp"

namespace oe::run::engine {

NodeContext::NodeContext(Run& run, const NodeRuntime& node) : run_(run), node_(node) {
  setOwner("a node context", node.kind->library ? node.kind->library->staticId() : nullptr,
           node.kind->kind->kind);
}

void NodeContext::log(oe_log_level level, std::string_view message) {
  run_.logFromNode(node_, level, message);
}

bool Call::invoke(const std::string& request) {
  uint64_t invocation = 0;
  oe_node* invoked = nullptr;
  // What this invocation holds on to after the run may have given it up (Run::abandon): its
  // instance's library, and copies of what it reads of the call and of the run. All of it is
  // read under phase_mutex, so that a later abandon (which takes that lock) is ordered after
  // every read this thread makes of the run: the run may retry the call or be gone by then.
  std::shared_ptr<plugins::PluginLibrary> library;
  const oe_node_kind* kind = nullptr;
  uint32_t attempt_number = 0;
  oe_host_ctx* context = nullptr;
  std::optional<plugins::CrashScope> crash_site;
  {
    std::lock_guard lock(phase_mutex);
    if (cancelled.load()) {
      phase = Phase::kReturned;
      status = OE_CANCELLED;
      return true;
    }
    phase = Phase::kInvoking;
    invocation = ++invocations;
    invoked = instance;
    invoking_thread = std::this_thread::get_id();
    event_budget.reset();
    // A handle of this invocation's own: one kept from an earlier call, or an earlier attempt,
    // is refused from here on (host_context.hpp).
    setOwner("a call context", node->kind->library ? node->kind->library->staticId() : nullptr,
             node->kind->kind->kind);
    renewHandle();
    library = node->kind->library;
    kind = node->kind->kind;
    attempt_number = static_cast<uint32_t>(attempt);
    context = handle();
    // A call made without a run (the unit tests of the call's phases) is reported without one.
    crash_site.emplace("invoke", plugins::pluginIdOf(*node->kind),
                       node->spec != nullptr ? std::string_view(node->spec->kind) : "",
                       node->spec != nullptr ? std::string_view(node->spec->id) : "", write_key,
                       run != nullptr ? std::string_view(run->runId()) : "",
                       run != nullptr ? run->eventLogFd() : -1);
    crash_scope = &*crash_site;
  }
  // Its own writers: a retry of the call writes the call's.
  oe_writer answer;
  oe_writer failure;
  const oe_invocation inv{sizeof(oe_invocation),
                          attempt_number,
                          oe_str{request.data(), request.size()},
                          context,
                          &answer,
                          &failure};
  const oe_status returned = kind->invoke(invoked, &inv);
  {
    std::lock_guard lock(phase_mutex);  // waits for a cancel racing the return
    crash_scope = nullptr;
    if (phase == Phase::kAbandoned || invocations != invocation) {
      // The run went on without this invocation (a retry may be running on the same call, or
      // the run may be gone): its answer is dropped, its instance is its library's to destroy,
      // or, for a kind no library holds (one built into the process), destroyed here.
      if (library) {
        library->abandonedReturned(invoked);
      } else {
        kind->destroy(invoked);
      }
      return false;
    }
    status = returned;
    response.data = std::move(answer.data);
    error.data = std::move(failure.data);
    phase = Phase::kReturned;
  }
  closeHandle();  // the call context is dead once invoke returned
  giveBackSlots();
  if (const uint64_t refused = event_budget.refused(); refused > 1) {
    log(OE_LOG_WARN, "emit_event and log refused " + std::to_string(refused) +
                         " writes of this call in all (docs/abi.md, \"Caps on what one call "
                         "writes\")");
  }
  return true;
}

// A runtime.limits slot handed to a plugin (oe.limits/1-draft) as a host buffer: host->release
// deletes it, which gives the slot back. `call_` is cleared when the call's own sweep (below)
// gave it back first; whichever comes first gives it back, once.
class LimitSlot final : public HostBuffer {
 public:
  LimitSlot(std::string names, llm::LlmService& llm, llm::RateLimiter::Ticket ticket, Call& call)
      : HostBuffer(std::move(names)), llm_(llm), ticket_(std::move(ticket)), call_(&call) {}
  LimitSlot(const LimitSlot&) = delete;
  LimitSlot& operator=(const LimitSlot&) = delete;
  ~LimitSlot() override {
    if (Call* call = call_.exchange(nullptr)) {
      std::lock_guard lock(call->slots_mutex);
      std::erase(call->slots, this);
    }
    giveBack();
  }
  // From the sweep, under the call's slots_mutex: true when the plugin had not released it.
  bool detach() {
    if (call_.exchange(nullptr) == nullptr) {
      return false;
    }
    giveBack();
    return true;
  }

 private:
  void giveBack() {
    if (!given_back_.exchange(true)) {
      llm_.giveBack(ticket_, 0);
    }
  }

  llm::LlmService& llm_;
  llm::RateLimiter::Ticket ticket_;
  std::atomic<Call*> call_;
  std::atomic<bool> given_back_{false};
};

void Call::giveBackSlots() {
  std::vector<std::string> leaked;
  {
    std::lock_guard lock(slots_mutex);
    for (LimitSlot* slot : slots) {
      if (slot->detach()) {
        leaked.push_back(slot->text());
      }
    }
    slots.clear();
  }
  for (const std::string& names : leaked) {
    log(OE_LOG_WARN, "the node still held a slot under " + names +
                         " when its invoke returned; oe gave it back. The plugin should "
                         "release it (host->release) when its limited work is over");
  }
}

bool Call::requestCancel() {
  if (cancelled.exchange(true)) {
    return false;
  }
  if (remote != 0) {
    // Whether its result was in is read before the cancel goes out: read after, it may be the
    // worker's answer to this very cancel (NOTIFY is quick), and a timeout would then be
    // reported as a plain cancellation.
    const bool answered = remote_done.load();
    if (!answered) {
      run->cancelRemote(remote);  // the worker holding it stops at once (NOTIFY oe_cancels)
    }
    return !answered;
  }
  std::lock_guard lock(phase_mutex);
  if (phase == Phase::kInvoking && node->kind->kind->cancel != nullptr) {
    node->kind->kind->cancel(instance, handle());
  }
  for (const auto& child : children) {
    child->stop("its parent node \"" + node->spec->id + "\" was cancelled");
  }
  return phase != Phase::kReturned;
}

void Call::log(oe_log_level level, std::string_view message) {
  run->logFromNode(*node, level, message);
}

oe_status Call::emitEvent(std::string_view type, std::string_view fields_json) {
  return run->emitFromPlugin(*this, type, fields_json);
}

oe_status Call::stateGet(std::string_view field, std::string& out_json) {
  const auto& reads = node->spec->reads;
  if (std::find(reads.begin(), reads.end(), field) == reads.end()) {
    return OE_PERMISSION_DENIED;
  }
  auto it = state_view.find(std::string(field));
  out_json = it == state_view.end() ? "null" : it->dump();
  return OE_OK;
}

oe_status Call::llmComplete(std::string_view request_json, std::string& out) {
  return run->llmFromPlugin(*this, request_json, out);
}

oe_status Call::runSubExperience(std::string_view request_json, std::string& out) {
  return run->subrunFromPlugin(*this, request_json, out);
}

oe_status Call::acquireLimit(std::string_view name, oe_host_buf* out_slot) {
  return run->limitFromPlugin(*this, name, out_slot);
}

oe_status Call::cliReplayBegin(std::string_view request_json, std::string& out) {
  return run->cliBeginFromPlugin(*this, request_json, out);
}

oe_status Call::cliReplayFinish(std::string_view request_json, std::string_view outcome_json,
                                std::string& out_error) {
  return run->cliFinishFromPlugin(*this, request_json, outcome_json, out_error);
}

Json promptValueMap(const Json& state_view, const Json& edge_inputs, const Json& args) {
  Json values = state_view;
  for (const auto& [key, value] : edge_inputs.items()) {
    values[key] = value;
  }
  for (const auto& [key, value] : args.items()) {
    values[key] = value;
  }
  return values;
}

std::string promptValuesJson(const std::vector<std::string>& reads, const Json& state_view,
                             const Json& edge_inputs, const Json& args, int indent) {
  // Upstream's JSON.stringify({...state_view, ...edge_inputs, ...args}) keeps insertion order:
  // the reads in declaration order, then the edge inputs, then the args; a key given again
  // keeps its first place and takes the later value. (Json objects sort their keys.)
  std::vector<std::pair<std::string_view, const Json*>> members;
  auto put = [&members](std::string_view key, const Json& value) {
    for (auto& member : members) {
      if (member.first == key) {
        member.second = &value;
        return;
      }
    }
    members.emplace_back(key, &value);
  };
  for (const std::string& field : reads) {
    if (auto it = state_view.find(field); it != state_view.end()) {
      put(field, *it);
    }
  }
  for (const auto& [key, value] : edge_inputs.items()) {
    put(key, value);
  }
  for (const auto& [key, value] : args.items()) {
    put(key, value);
  }
  return expr::stringifyIndentedMembers(members, indent);
}

Json Call::promptValueMap() const {
  return engine::promptValueMap(state_view, edge_inputs, promptArgs());
}

oe_status Call::renderPrompt(std::string_view template_text, std::string& out) {
  // A prompt file's `${secret:NAME}` gets its value here, in the template; a placeholder gets
  // one only from an arg the node's own `args:` wrote (promptArgs), never from the state or an
  // edge.
  const secrets::SecretSet* secrets = run->secretSet();
  std::string with_values;
  if (secrets != nullptr && template_text.find("${secret:") != std::string_view::npos) {
    with_values = secrets->substitute(template_text, /*json_string=*/false);
    template_text = with_values;
  }
  auto rendered = expr::interpolate(template_text, promptValueMap(), /*strict=*/false);
  if (!rendered) {
    return OE_INTERNAL;  // non-strict interpolation has no failure
  }
  out = std::move(rendered).value();
  return OE_OK;
}

oe_status Call::promptValues(uint32_t indent, std::string& out) {
  out = promptValuesJson(node->spec->reads, state_view, edge_inputs, promptArgs(),
                         static_cast<int>(indent));
  return OE_OK;
}

oe_status Run::llmFromPlugin(Call& call, std::string_view request_json, std::string& out) {
  llm::Answer answer =
      llm_->complete(llm::Site{&call, call.node->spec->id, &call.llm_usage}, request_json);
  out = std::move(answer.body);
  return answer.status;
}

oe_status Run::cliBeginFromPlugin(Call& call, std::string_view request_json, std::string& out) {
  if (llm_ == nullptr) {
    out.clear();  // no LLM service (an engine test): no budget, no recording; run it live
    return OE_OK;
  }
  llm::Answer answer =
      llm_->beginCli(llm::Site{&call, call.node->spec->id, &call.llm_usage}, request_json);
  out = std::move(answer.body);
  return answer.status;
}

oe_status Run::cliFinishFromPlugin(Call& call, std::string_view request_json,
                                   std::string_view outcome_json, std::string& out_error) {
  if (llm_ == nullptr) {
    return OE_OK;
  }
  llm::Answer answer = llm_->finishCli(llm::Site{&call, call.node->spec->id, &call.llm_usage},
                                       request_json, outcome_json);
  if (answer.status != OE_OK) {
    out_error = std::move(answer.body);
  }
  return answer.status;
}

oe_status Run::limitFromPlugin(Call& call, std::string_view name, oe_host_buf* out_slot) {
  if (llm_ == nullptr) {
    return OE_OK;  // no runtime.limits at all: nothing to hold
  }
  auto ticket = llm_->waitForRoom(llm::Site{&call, call.node->spec->id, nullptr}, name, "", 0);
  if (!ticket) {
    return OE_CANCELLED;
  }
  if (ticket->buckets.empty()) {
    return OE_OK;  // no limit of that name: an empty slot
  }
  auto slot = std::make_unique<LimitSlot>("runtime.limits." + std::string(name), *llm_,
                                          std::move(*ticket), call);
  {
    std::lock_guard lock(call.slots_mutex);
    call.slots.push_back(slot.get());
  }
  giveBuffer(std::move(slot), out_slot);
  return OE_OK;
}

void Run::logFromNode(const NodeRuntime& node, oe_log_level level, std::string_view message) {
  // Plugin log lines go to the same sink as the plugin-level log, tagged with the node.
  const char* tag = level >= OE_LOG_ERROR ? "error" : level >= OE_LOG_WARN ? "warn" : "info";
  Json event = {{"type", "node.log"},
                {"node_id", node.spec->id},
                {"level", tag},
                {"message", std::string(message)}};
  emitLocal(std::move(event));
}

bool pluginEventTypeAllowed(std::string_view type, std::string_view plugin_id) {
  // policy.denied: a plugin that ran a confined process reports what the kernel refused it
  // (docs/policy.md); the host's proxy reports the hosts it refused under the same type.
  if (type == "node.activity" || type == "node.tokens" || type == "policy.denied") {
    return true;
  }
  // The host's namespaces stay the host's, even for a plugin whose id would put its own types
  // in one (an id such as "node" or "run.x" is no reverse-DNS name, but nothing else stops it).
  for (const std::string_view host_namespace : {"run.", "node.", "state."}) {
    if (type.starts_with(host_namespace)) {
      return false;
    }
  }
  if (plugin_id.empty() || type.size() <= plugin_id.size() + 1 || !type.starts_with(plugin_id) ||
      type[plugin_id.size()] != '.') {
    return false;
  }
  const std::string_view name = type.substr(plugin_id.size() + 1);
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
  });
}

oe_status Run::emitFromPlugin(const Call& call, std::string_view type, std::string_view fields) {
  const std::string_view plugin_id =
      call.node->kind->library ? std::string_view(call.node->kind->library->id()) : "";
  if (!pluginEventTypeAllowed(type, plugin_id)) {
    logFromNode(*call.node, OE_LOG_WARN,
                "emit_event refused type \"" + std::string(type) +
                    "\": a plugin emits node.activity, node.tokens, policy.denied or its own \"" +
                    std::string(plugin_id.empty() ? "<plugin-id>" : plugin_id) + ".<name>\"");
    return OE_INVALID_ARGUMENT;
  }
  auto written = log_.nodeEvent(type, call.node->spec->id, fields);
  if (!written) {
    logFromNode(*call.node, OE_LOG_WARN, "emit_event refused: " + written.error().message);
    return OE_INVALID_ARGUMENT;
  }
  return OE_OK;
}

}  // namespace oe::run::engine

// Node execution: a call's bundle (reads, D1 args, canonical dumps), the cache lookup and
// replay, the plugin call (inline or on the pool, with its timeout), retries with their backoff,
// and the output applied to the state, the cache and the successors' edge inputs.
#include "oe/run/node_executor.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "oe/common/host_buffer.hpp"
#include "oe/expr/interpolate.hpp"
#include "oe/expr/js_value.hpp"
#include "oe/run/engine.hpp"

namespace oe::run::engine {

Json bundleArgs(const Json& run_args, Json node_args, const Json& extra_args) {
  Json args = run_args;
  if (node_args.is_object()) {
    for (auto& [key, value] : node_args.items()) {
      args[key] = std::move(value);
    }
  }
  for (auto& [key, value] : extra_args.items()) {
    args[key] = value;
  }
  return args;
}

std::string writeKey(std::string_view node_id, const Json& extra) {
  std::string key(node_id);
  if (extra.empty()) {
    return key;  // a plain node: no allocation beyond the id
  }
  if (auto pipeline = extra.find("$pipeline"); pipeline != extra.end() && pipeline->is_string()) {
    key += "@" + pipeline->get<std::string>() + "#" + extra.value("$index", Json(0)).dump();
  } else if (auto loop = extra.find("$loop"); loop != extra.end() && loop->is_string()) {
    key += "@" + loop->get<std::string>() + "#" + extra.value("$iter", Json(0)).dump();
  } else if (auto index = extra.find("$index"); index != extra.end()) {
    key += "#" + index->dump();
  }
  return key;
}

int64_t itemOf(const Call& call) {
  const Json& extra = call.extra_args;
  if (!extra.is_object() || extra.empty()) {
    return -1;
  }
  auto at = extra.find(extra.contains("$loop") ? "$iter" : "$index");
  return at != extra.end() && at->is_number_integer() ? at->get<int64_t>() : -1;
}

std::string_view writeKeyNode(std::string_view write_key) {
  return write_key.substr(0, write_key.find_first_of("#@/"));
}

std::string invokeRequest(std::string_view node_json, const Call& call, std::string_view run_id,
                          std::string_view node_id, std::string_view experience_dir_json) {
  std::string request;
  request.reserve(node_json.size() + call.args_json.size() + call.state_json.size() +
                  call.edges_json.size() + run_id.size() + node_id.size() +
                  experience_dir_json.size() + 128);
  request += "{\"node\":";
  request += node_json;
  request += ",\"args\":";
  request += call.args_json;
  request += ",\"state_view\":";
  request += call.state_json;
  request += ",\"edge_inputs\":";
  request += call.edges_json;
  request += ",\"context\":{\"run_id\":";
  request += jsonQuoted(run_id);
  request += ",\"node_id\":";
  request += jsonQuoted(node_id);
  request += ",\"experience_dir\":";
  request += experience_dir_json;
  request += ",\"attempt\":";
  request += std::to_string(call.attempt);
  request += "}}";
  return request;
}

std::string invocationError(oe_status status, const std::string& error_text,
                            std::string_view kind) {
  if (!error_text.empty()) {
    return error_text;
  }
  return status == OE_CANCELLED ? "cancelled"
                                : "the " + std::string(kind) + " plugin failed with status " +
                                      std::to_string(status) + " and no message";
}

void addLlmMetrics(Json& output, const llm::Usage& used) {
  Json& metrics = output["metrics"];
  if (!metrics.is_object()) {
    metrics = Json::object();
  }
  metrics.emplace("tokens_in", used.input_tokens);
  metrics.emplace("tokens_out", used.output_tokens);
  metrics.emplace("cost_usd", used.cost_usd);
}

int64_t retryDelayMs(const spec::OnError& policy, int attempt) {
  const int64_t base = policy.base_ms;
  return policy.backoff == spec::Backoff::kExponential
             ? base * (int64_t{1} << std::min(attempt - 1, 30))
             : base * attempt;
}

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
  }
  // Its own writers: a retry of the call writes the call's.
  oe_writer answer;
  oe_writer failure;
  const oe_invocation inv{sizeof(oe_invocation), attempt_number,
                          oe_str{request.data(), request.size()}, context, &answer, &failure};
  const oe_status returned = kind->invoke(invoked, &inv);
  {
    std::lock_guard lock(phase_mutex);  // waits for a cancel racing the return
    if (phase == Phase::kAbandoned || invocations != invocation) {
      // The run went on without this invocation (a retry may be running on the same call, or
      // the run may be gone): its answer is dropped, its instance is its library's to destroy.
      if (library) {
        library->abandonedReturned(invoked);
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
    run->cancelRemote(remote);  // the worker holding it stops at its next heartbeat
    return !remote_done.load();
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

Json Call::promptValueMap() const { return engine::promptValueMap(state_view, edge_inputs, args); }

oe_status Call::renderPrompt(std::string_view template_text, std::string& out) {
  auto rendered = expr::interpolate(template_text, promptValueMap(), /*strict=*/false);
  if (!rendered) {
    return OE_INTERNAL;  // non-strict interpolation has no failure
  }
  out = std::move(rendered).value();
  return OE_OK;
}

oe_status Call::promptValues(uint32_t indent, std::string& out) {
  out =
      promptValuesJson(node->spec->reads, state_view, edge_inputs, args, static_cast<int>(indent));
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
  if (type == "node.activity" || type == "node.tokens") {
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
                    "\": a plugin emits node.activity, node.tokens or its own \"" +
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

const std::vector<uint32_t>& Run::fileIds(NodeRuntime& node) {
  if (!node.files_known) {
    node.file_ids = file_table_.idsOf(*node.spec);
    node.files_known = true;
  }
  return node.file_ids;
}

std::string Run::keyOf(NodeRuntime& node, const Call& call,
                       const std::vector<cache::FileDigest>& data_files) {
  std::vector<cache::FileDigest> files = file_table_.filesOf(fileIds(node));
  files.insert(files.end(), data_files.begin(), data_files.end());
  return cache::cacheKeyOfText(nodeJson(node), call.state_json, call.edges_json, call.args_json,
                               files, file_table_.kindIdentity(node.kind));
}

void Run::keyCall(NodeRuntime& node, Call& call) {
  const std::string too_large =
      file_table_.addDataFiles(call.args, *node.spec, call.data_files, &call.names_paths);
  const bool kind_refuses =
      node.kind != nullptr && (node.kind->kind->flags & OE_NODE_KIND_NOT_CACHEABLE) != 0;
  if (!node.spec->cache.enabled || kind_refuses || !too_large.empty()) {
    call.uncacheable = true;
  }
  if (!too_large.empty() && !node.key_warned) {
    node.key_warned = true;
    warn(node.spec->id, nodeLabel(node) + " runs without the cache: " + too_large);
  }
  // Computed even for a call that is never cached: its state writes carry it (landed marks).
  call.cache_key = keyOf(node, call, call.data_files);
}

void Run::startCall(NodeRuntime& node, Json extra_args, Json edge_inputs,
                    std::function<void(bool, const Json*)> done) {
  auto call = std::make_shared<Call>();
  call->run = this;
  call->node = &node;
  call->extra_args = std::move(extra_args);
  call->edge_inputs = std::move(edge_inputs);
  if (call->edge_inputs.is_null()) {
    call->edge_inputs = Json::object();  // a node no predecessor handed anything to
  }
  call->done = std::move(done);
  if (node.selected) {
    log_.nodeReady(node.spec->id, node.spec->phase);
  }

  // Bundle (reference §3.3): reads -> state_view; D1 args = run args, node args, injected keys.
  call->state_view = Json::object();
  for (const auto& field : node.spec->reads) {
    if (const Json* value = store_.field(field)) {
      call->state_view[field] = *value;
    }
  }
  call->args = bundleArgs(run_args_, node.args.resolve(store_), call->extra_args);
  // Dumped once: the same text goes into the cache key and into the plugin's request.
  call->args_json = cache::canonicalJson(call->args);
  call->state_json = cache::canonicalJson(call->state_view);
  call->edges_json = cache::canonicalJson(call->edge_inputs);
  call->write_key = writeKey(node.spec->id, call->extra_args);

  if (!node.selected) {
    reuseFromCache(call);
    return;
  }
  if (cache_ != nullptr) {
    keyCall(node, *call);
    std::optional<Json> hit;
    std::string replayed;  // the entry replayed when it is not the call's own key's
    if (!force_selected_ && !call->uncacheable) {
      if (options_.reuse_cache) {
        hit = cache_->get(call->cache_key);
      }
      if (!hit) {
        // A call whose write landed earlier in this chain is done (docs/durability.md): when
        // its key changed since (the state it reads was written again later in the run it
        // resumes, by a loop's next iterations say, or its definition changed), it replays
        // the output it landed from, so what it hands on is what it handed on then. Under
        // --no-cache too: that is the chain's own output, not a reuse.
        if (const std::string* landed = store_.landedInput(call->write_key);
            landed != nullptr && !landed->empty() &&
            (!options_.reuse_cache || *landed != call->cache_key)) {
          hit = cache_->get(*landed);
          if (hit) {
            replayed = *landed;
          }
        }
      }
    }
    if (hit) {
      inItemOrder(*call, /*ok=*/true, [this, call, hit = std::move(*hit),
                                       replayed = std::move(replayed)]() mutable {
        if (call->drop) {
          dropItem(*call);  // already in the cache
          return true;
        }
        std::string replay_error;
        if (!applyOutput(*call, hit, true, &replay_error)) {
          // D12: a replay that fails is a miss; the node runs.
          log_.nodeStarted(call->node->spec->id, call->node->spec->phase, itemOf(*call));
          attempt(call);
          return false;
        }
        ++summary_.cached;
        cache_hits_.push_back(replayed.empty() ? call->cache_key : std::move(replayed));
        Json edge_output;
        const bool has_edge = hit.contains("edge_output");
        if (has_edge) {
          edge_output = hit["edge_output"];
        }
        // Posted, not called: a for_each of cached items must not recurse once per item.
        asio::post(io_, [call, has_edge, edge_output = std::move(edge_output)] {
          auto finish = std::move(call->done);
          finish(true, has_edge ? &edge_output : nullptr);
        });
        return true;
      });
      return;
    }
  }
  log_.nodeStarted(node.spec->id, node.spec->phase, itemOf(*call));
  attempt(call);
}

void Run::reuseFromCache(const std::shared_ptr<Call>& call) {
  NodeRuntime& node = *call->node;
  ++summary_.reused;
  std::optional<Json> hit;
  if (cache_ != nullptr) {
    keyCall(node, *call);
    if (!call->uncacheable) {
      hit = cache_->get(call->cache_key);
    }
  }
  Json edge_output;
  const bool has_edge = hit && hit->contains("edge_output");
  if (has_edge) {
    edge_output = (*hit)["edge_output"];
    for (uint32_t succ : dag_.succs[node.index]) {
      nodes_[succ].edge_inputs[node.spec->id] = edge_output;
    }
  } else if (!hit) {
    Json warning = {{"type", "node.log"},
                    {"node_id", node.spec->id},
                    {"level", "warn"},
                    {"message",
                     "not selected and not in the cache: its successors get no "
                     "edge_output from it (run it once without --from/--only)"}};
    emitLocal(std::move(warning));
  }
  asio::post(io_, [call, has_edge, edge_output = std::move(edge_output)] {
    auto finish = std::move(call->done);
    finish(true, has_edge ? &edge_output : nullptr);
  });
}

Result<oe_node*> Run::acquireInstance(NodeRuntime& node) {
  const bool reentrant = (node.kind->kind->flags & OE_NODE_KIND_REENTRANT) != 0;
  if (reentrant && !node.instances.empty()) {
    return node.instances.front();
  }
  if (!reentrant && !node.idle.empty()) {
    oe_node* instance = node.idle.back();
    node.idle.pop_back();
    return instance;
  }
  oe_writer err;
  oe_node* instance = nullptr;
  const std::string config = createConfig(node);
  if (!node.context) {
    node.context = std::make_unique<NodeContext>(*this, node);
  }
  const oe_status status = node.kind->kind->create(
      node.kind->library ? node.kind->library->self() : nullptr,
      node.kind->descriptor != nullptr ? node.kind->descriptor : node.kind->kind,
      oe_str{config.data(), config.size()}, node.context->handle(), &instance, &err);
  if (status != OE_OK || instance == nullptr) {
    return makeError(err.data.empty()
                         ? "the " + node.spec->kind + " plugin could not create the node (status " +
                               std::to_string(status) + ")"
                         : err.data);
  }
  node.instances.push_back(instance);
  return instance;
}

void Run::releaseInstance(NodeRuntime& node, oe_node* instance) {
  if ((node.kind->kind->flags & OE_NODE_KIND_REENTRANT) == 0) {
    node.idle.push_back(instance);
  }
}

void Run::destroyInstances() {
  for (auto& node : nodes_) {
    destroyInstances(node);
  }
}

void Run::destroyInstances(NodeRuntime& node) {
  for (oe_node* instance : node.instances) {
    node.kind->kind->destroy(instance);
  }
  node.instances = {};
  node.idle = {};
}

void Run::attempt(const std::shared_ptr<Call>& call) {
  NodeRuntime& node = *call->node;
  ++call->attempt;
  call->response.data.clear();
  call->error.data.clear();
  call->timed_out = false;
  if (dispatcher_ && node.spec->kind != "experience") {
    // A nested experience needs this process's services (its store, its plugins' registry):
    // it runs here; every other kind goes to the work queue.
    attemptRemote(call, invokeRequest(nodeJson(node), *call, log_.runId(), node.spec->id,
                                      experience_dir_json_));
    return;
  }
  auto instance = acquireInstance(node);
  if (!instance) {
    attemptFailed(call, instance.error().message);
    return;
  }
  call->instance = *instance;
  std::string request =
      invokeRequest(nodeJson(node), *call, log_.runId(), node.spec->id, experience_dir_json_);
  ++calls_in_flight_;
  active_calls_.push_back(call);

  call->phase = Call::Phase::kQueued;
  auto invoke = [call, request = std::move(request)] { return call->invoke(request); };
  const auto timeout = node.spec->timeout_ms;
  // Inline when nothing else could run meanwhile: saves the thread hand-off (35-70 µs here),
  // which dominates cheap nodes. Ready nodes cannot start while the concurrency limit is
  // reached (a fan-out under concurrency 1), so they do not prevent it. A node with a timeout
  // always goes to the pool so the coordinator stays free to fire the timer.
  const bool nothing_else_could_start = ready_.nothingElseCouldStart();
  const bool inline_call = !timeout && calls_in_flight_ == 1 && nothing_else_could_start &&
                           (!node.spec->for_each || node.spec->for_each->concurrency <= 1);
  if (inline_call) {
    {
      std::lock_guard lock(inline_mutex_);
      inline_call_ = call.get();
      if (signalled_) {
        call->requestCancel();  // the signal came before the call was here to see it
      }
    }
    (void)invoke();  // never abandoned: an inline call has no timeout
    {
      std::lock_guard lock(inline_mutex_);
      inline_call_ = nullptr;
    }
    asio::post(io_, [this, call] { invokeDone(call); });
    return;
  }
  armTimeout(call);
  pool_->post([this, call, invoke = std::move(invoke)] {
    if (invoke()) {
      asio::post(io_, [this, call] { invokeDone(call); });
    }
    // else abandoned (Run::abandon): the run has gone on, and `this` may be gone.
  });
}

void Run::armTimeout(const std::shared_ptr<Call>& call) {
  const auto timeout = call->node->spec->timeout_ms;
  if (!timeout) {
    return;
  }
  call->timer = std::make_unique<asio::steady_timer>(io_, std::chrono::milliseconds(*timeout));
  call->timer->async_wait([this, call](const boost::system::error_code& ec) {
    if (ec || !call->requestCancel()) {
      return;
    }
    call->timed_out = true;  // read on this thread, in invokeDone
    // A plugin that ignores the cancel does not hold the run: after the grace the call is given
    // up (invokeDone cancels this timer when the call comes back in time).
    call->timer->expires_after(options_.cancel_grace);
    call->timer->async_wait([this, call](const boost::system::error_code& grace_ec) {
      if (!grace_ec) {
        abandon(call);
      }
    });
  });
}

void Run::abandon(const std::shared_ptr<Call>& call) {
  NodeRuntime& node = *call->node;
  if (call->remote != 0) {
    if (call->remote_done.load() || call->remote_abandoned.exchange(true)) {
      return;  // its result is in, or on its way to invokeDone
    }
  } else {
    std::lock_guard lock(call->phase_mutex);
    if (call->phase != Call::Phase::kInvoking) {
      return;  // it returned: invokeDone is queued
    }
    call->phase = Call::Phase::kAbandoned;
    if (node.kind->library) {
      node.kind->library->adoptAbandoned(node.kind->kind, call->instance);
    }
    pool_->giveUp(call->invoking_thread);
  }
  if (call->remote == 0) {
    // From here the call's thread touches nothing of the run: its context is closed (a host
    // function still running with it finishes first), the slots it holds are given back, and
    // its instance leaves the node's pool, never to be reused or destroyed by this run.
    call->closeHandle();
    call->giveBackSlots();
    std::erase(node.instances, call->instance);
    std::erase(node.idle, call->instance);
    call->instance = nullptr;
  }
  retired_timers_.push_back(std::move(call->timer));  // its handler is running: keep it alive
  abandoned_.push_back(call);
  --calls_in_flight_;
  active_calls_.erase(std::find(active_calls_.begin(), active_calls_.end(), call));
  const auto grace_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.cancel_grace);
  attemptFailed(call, "Node \"" + node.spec->id + "\" timed out after " +
                          std::to_string(*node.spec->timeout_ms) + " ms (timeout_ms) and did not "
                          "stop within " + std::to_string(grace_ms.count()) +
                          " ms of being cancelled: oe gave the call up (the " + node.spec->kind +
                          " plugin may still be running it; what it answers will be ignored). "
                          "Raise timeout_ms, or have the plugin return soon after is_cancelled "
                          "turns true");
  if (abandoned_.size() == kMaxAbandonedCalls && !cancelling_) {
    // Each abandoned call keeps a thread until it returns, if ever: a run that keeps leaving
    // them behind stops, so what it leaves is bounded.
    any_failure_ = true;
    cancelAll(std::to_string(kMaxAbandonedCalls) + " plugin calls did not stop when cancelled; "
              "the run stops starting work so that no more are left running");
  }
}

void Run::attemptRemote(const std::shared_ptr<Call>& call, std::string request) {
  NodeRuntime& node = *call->node;
  ++calls_in_flight_;
  active_calls_.push_back(call);
  call->instance = nullptr;
  call->remote_done = false;
  queue::NewAttempt attempt;
  attempt.run_id = log_.runId();
  attempt.node_id = node.spec->id;
  attempt.call_key = call->write_key;
  attempt.attempt = call->attempt;
  attempt.queue = node.spec->queue.value_or("default");
  attempt.kind = node.spec->kind;
  attempt.config = createConfig(node);
  attempt.request = std::move(request);
  // A worker stores the entry under this key: none for a call that is never cached.
  attempt.cache_key = call->uncacheable ? std::string() : call->cache_key;
  attempt.timeout_ms = node.spec->timeout_ms;
  // The result comes back on the dispatcher's thread and is applied here, on the coordinator,
  // by the same invokeDone as a local call's: state, events, cache, retries, item order.
  call->remote = dispatcher_->submit(std::move(attempt), [this, call](const queue::Finished& f) {
    call->remote_done = true;
    asio::post(io_, [this, call, f] {
      if (call->remote_abandoned.load()) {
        return;  // given up after its timeout and grace: the run went on without it
      }
      const auto status = static_cast<oe_status>(f.result_status);
      call->status = f.ok ? OE_OK : status != OE_OK ? status : OE_INTERNAL;
      call->response.data = f.response;
      call->error.data = f.error;
      if (!f.events.empty()) {
        // The plugin's events, logged here as a local attempt's are (stamped now: a worker's
        // node.activity reaches the log when its attempt is collected, not as it happens).
        const Json events = Json::parse(f.events, nullptr, false);
        for (const Json& event : events.is_array() ? events : Json::array()) {
          const std::string type = stringField(event, "type");
          if (type.empty()) {  // also what is not an object
            continue;
          }
          Json fields = event;
          for (const char* own : {"type", "run_id", "node_id", "ts"}) {
            fields.erase(own);
          }
          (void)log_.nodeEvent(type, call->node->spec->id, fields.dump());
        }
      }
      if (!f.llm_usage.empty()) {
        // What the worker's LLM calls used: the node's metrics and the run's summary count it
        // (the chain's shared budget was charged by the worker already).
        call->llm_usage.usage = llm::Usage::fromJson(Json::parse(f.llm_usage, nullptr, false));
        if (llm_ != nullptr) {
          llm_->countRemoteUsage(call->llm_usage.usage);
        }
      }
      invokeDone(call);
    });
  });
  armTimeout(call);
}

void Run::invokeDone(const std::shared_ptr<Call>& call) {
  NodeRuntime& node = *call->node;
  --calls_in_flight_;
  active_calls_.erase(std::find(active_calls_.begin(), active_calls_.end(), call));
  if (call->timer) {
    call->timer->cancel();
  }
  if (call->instance != nullptr) {  // none for an attempt a worker ran
    releaseInstance(node, call->instance);
  }
  call->instance = nullptr;

  if (call->timed_out) {
    attemptFailed(call, "Node \"" + node.spec->id + "\" timed out after " +
                            std::to_string(*node.spec->timeout_ms) +
                            " ms (timeout_ms); raise timeout_ms or make the node faster");
    return;
  }
  if (call->status != OE_OK) {
    attemptFailed(call, invocationError(call->status, call->error.data, node.spec->kind));
    return;
  }
  Json output = Json::parse(call->response.data, nullptr, false);
  if (output.is_discarded()) {
    std::string head = call->response.data.substr(0, 200);
    attemptFailed(call, nodeLabel(node) + ": the plugin's response is not JSON: " + head);
    return;
  }
  if (call->llm_usage.usage.calls > 0 && output.is_object()) {
    // The host's own account of the node's LLM calls fills what the plugin did not report.
    addLlmMetrics(output, call->llm_usage.usage);
  }
  inItemOrder(*call, /*ok=*/true, [this, call, output = std::move(output)]() mutable {
    if (call->drop) {
      // Paid for: kept in the cache (a valid state_delta object only), so the resume does not
      // pay again; a replay that then fails to apply runs live (D12).
      if (output.is_object() && output.contains("state_delta") &&
          output["state_delta"].is_object()) {
        storeInCache(*call, output);
      }
      dropItem(*call);
      return true;
    }
    std::string error;
    if (!applyOutput(*call, output, false, &error)) {
      attemptFailed(call, std::move(error));  // a retry, or the failure settled in this slot
      return false;
    }
    ++summary_.ran;
    Json edge_output;
    const bool has_edge = output.contains("edge_output");
    if (has_edge) {
      edge_output = std::move(output["edge_output"]);
    }
    auto finish = std::move(call->done);
    finish(true, has_edge ? &edge_output : nullptr);
    return true;
  });
}

void Run::storeInCache(Call& call, const Json& output) {
  if (cache_ == nullptr || call.uncacheable) {
    return;
  }
  Json stored = Json::object();
  stored["state_delta"] = output["state_delta"];
  if (output.contains("edge_output")) {
    stored["edge_output"] = output["edge_output"];
  }
  if (output.contains("metrics") && !output["metrics"].is_null()) {
    stored["metrics"] = output["metrics"];
  }
  auto put = cache_->put(call.cache_key, call.node->spec->id, log_.runId(), stored);
  if (put && call.names_paths) {
    // A call that changed the files it is keyed by (a report or a log named in its args, one it
    // created) is stored under the key of the files as it left them too: the next run finds
    // them so and replays it, instead of running it again because of its own writes.
    std::vector<cache::FileDigest> after;
    if (file_table_.addDataFiles(call.args, *call.node->spec, after).empty() &&
        after != call.data_files) {
      data_files_changed_ = true;
      put = cache_->put(keyOf(*call.node, call, after), call.node->spec->id, log_.runId(), stored);
    }
  }
  if (!put) {
    Json warning = {{"type", "node.log"},
                    {"node_id", call.node->spec->id},
                    {"level", "warn"},
                    {"message", "cache write failed: " + put.error().message}};
    emitLocal(std::move(warning));
  }
}

void Run::dropItem(Call& call) {
  const std::string message =
      "not applied: an earlier item of this for_each did not finish before the run stopped "
      "(runtime.deterministic keeps item order); its output is kept in the cache and `oe "
      "resume` applies it in order";
  settleFailure(call, message, /*cancelled=*/true);
  auto finish = std::move(call.done);
  finish(false, nullptr);
}

void Run::settleFailure(const Call& call, const std::string& error, bool cancelled) {
  const spec::NodeSpec& spec = *call.node->spec;
  log_.nodeFailed(spec.id, error, spec.phase, cancelled, itemOf(call));
  if (cancelled) {
    ++summary_.cancelled;
    summary_.cancellations.push_back(NodeFailure{spec.id, error});
  } else {
    ++summary_.failed;
    summary_.failures.push_back(NodeFailure{spec.id, error});
  }
}

bool Run::stopping() {
  if (cancelling_) {
    return true;
  }
  // A signal or stop whose cancelAll is still queued behind this call's completion.
  std::lock_guard lock(inline_mutex_);
  return signalled_;
}

bool Run::applyOutput(Call& call, const Json& output, bool from_cache, std::string* error) {
  NodeRuntime& node = *call.node;
  if (!output.is_object() || !output.contains("state_delta") ||
      !output["state_delta"].is_object()) {
    *error = nodeLabel(node) +
             " returned no state_delta object; a node must answer "
             "{\"state_delta\": {...}}";
    return false;
  }
  const Json& delta = output["state_delta"];
  std::vector<std::string> written;
  // A write that already landed in this chain of runs (a resume replaying, or running again,
  // what the interrupted run had finished) is not applied again, whatever its inputs are now:
  // an array_append would grow twice, a last_wins field would lose what a later node wrote.
  const std::string_view write_key =
      delta.empty() ? std::string_view() : std::string_view(call.write_key);
  const state::WriteMeta meta{log_.runId(), node.spec->id, write_key, call.cache_key};
  const bool landed = store_.landedInput(write_key) != nullptr;
  if (!landed && node.spec->writes_declared && !delta.empty() &&
      !checkWrites(node, delta, error)) {
    return false;  // runtime.strict_writes: refused before anything of it lands
  }
  const Json* to_apply = &delta;
  Json local;
  if (options_.nesting.forward_write && !delta.empty()) {
    // A nested run sharing its parent's state: the parent's store first (its type checks and
    // merge rules); what had already landed there is not applied here again either.
    auto landed_above = options_.nesting.forward_write(delta, meta);
    if (!landed_above) {
      *error = nodeLabel(node) + ": " + landed_above.error().message;
      return false;
    }
    if (!landed_above->empty()) {
      local = delta;
      for (const std::string& field : *landed_above) {
        local.erase(field);
      }
      to_apply = &local;
    }
  }
  if (!to_apply->empty() && !landed) {
    auto result = store_.write(*to_apply, meta);
    if (!result) {
      *error = result.error().message;
      return false;
    }
    written = std::move(result).value();
  }
  for (const auto& field : written) {
    log_.stateWrite(node.spec->id, field);
  }
  if (output.contains("edge_output")) {
    // Buffered for every successor; the last write wins (reference §3.3).
    for (uint32_t succ : dag_.succs[node.index]) {
      nodes_[succ].edge_inputs[node.spec->id] = output["edge_output"];
    }
  }
  if (!from_cache) {
    // Before node.finished: once the log says a node finished, a resume must find its entry.
    storeInCache(call, output);
  }
  const Json* metrics = nullptr;
  auto it = output.find("metrics");
  if (it != output.end() && !it->is_null() && !(it->is_object() && it->empty())) {
    metrics = &*it;
  }
  log_.nodeFinished(node.spec->id, node.spec->phase, metrics, from_cache, itemOf(call));
  return true;
}

bool Run::checkWrites(const NodeRuntime& node, const Json& delta, std::string* error) {
  const std::vector<std::string>& writes = node.spec->writes;
  for (const auto& [field, value] : delta.items()) {
    if (std::find(writes.begin(), writes.end(), field) != writes.end()) {
      continue;
    }
    std::string listed;
    for (const std::string& w : writes) {
      listed += (listed.empty() ? "" : ", ") + w;
    }
    if (listed.empty()) {
      listed = "none";
    }
    const std::string& id = node.spec->id;
    if (exp_.runtime.strict_writes) {
      *error = "Node \"" + id + "\" wrote field \"" + field +
               "\", which is not in its writes (" + listed +
               "); runtime.strict_writes refuses it, so nothing of the node's output was "
               "applied. Add \"" + field + "\" to the node's writes, or stop the node writing it";
      return false;
    }
    // Applied, as upstream does (it never checked writes), and said once per node and field.
    if (outside_writes_.insert(id + '\n' + field).second) {
      warn(id, "node \"" + id + "\" wrote field \"" + field + "\", which is not in its writes (" +
                   listed + "); it was applied. Add \"" + field +
                   "\" to the node's writes, or set runtime.strict_writes: true to refuse such "
                   "writes");
    }
  }
  return true;
}

void Run::attemptFailed(const std::shared_ptr<Call>& call, std::string message) {
  NodeRuntime& node = *call->node;
  const spec::OnError& policy = node.spec->on_error;
  if (call->llm_usage.budget_refused) {
    // Not the node's fault and not worth a retry: the run stops starting work, lets the calls
    // in flight finish (their spend is already reserved), and `oe resume` continues it.
    any_failure_ = true;
    stopForBudget();
    inItemOrder(*call, /*ok=*/false, [this, call, message = std::move(message)] {
      const std::string error = message +
                                "; raise runtime.budget (or pass --max-tokens / --max-cost-usd) "
                                "and run `oe resume " +
                                log_.runId() + "`";
      // Stopped by the budget, not failed: the run stops cleanly and a resume runs it.
      settleFailure(*call, error, /*cancelled=*/true);
      auto finish = std::move(call->done);
      finish(false, nullptr);
      return true;
    });
    return;
  }
  if (!cancelling_ && retriesAfter(policy, call->attempt)) {
    const int64_t delay = retryDelayMs(policy, call->attempt);
    // Logged (an oe addition; upstream only sleeps): `oe inspect --html` draws the failed
    // attempts, and a failure that a retry hid stays visible. Only a failing call pays for it.
    (void)log_.nodeEvent(
        "node.retry", node.spec->id,
        Json{{"attempt", call->attempt}, {"error", message}, {"delay_ms", delay}}.dump(
            -1, ' ', false, Json::error_handler_t::replace));
    call->cancelled = false;
    call->timer = std::make_unique<asio::steady_timer>(io_, std::chrono::milliseconds(delay));
    ++calls_in_flight_;  // the pending retry counts as work in flight
    waiting_calls_.push_back(call);
    call->timer->async_wait([this, call](const boost::system::error_code&) {
      --calls_in_flight_;
      waiting_calls_.erase(std::find(waiting_calls_.begin(), waiting_calls_.end(), call));
      if (cancelling_) {
        call->stopped = true;
        attemptFailed(call, "cancelled before retry");
        return;
      }
      attempt(call);
    });
    return;
  }
  if (policy.policy == spec::ErrorPolicy::kFailRun && !cancelling_) {
    // D7: cancel the remaining work and end the run `failed`.
    any_failure_ = true;
    cancelAll("node \"" + node.spec->id + "\" failed and policy=fail_run: " + message);
  }
  // Cancelled, not failed: the run was stopping (a signal, fail_run elsewhere, a nested run's
  // parent stopped) and the call ended cancelled, or it was waiting for a retry. A timeout is
  // the node's own failure.
  const bool cancelled =
      call->stopped || (call->status == OE_CANCELLED && !call->timed_out && stopping());
  inItemOrder(*call, /*ok=*/false, [this, call, cancelled, message = std::move(message)] {
    settleFailure(*call, message, cancelled);
    auto finish = std::move(call->done);
    finish(false, nullptr);
    return true;
  });
}

}  // namespace oe::run::engine

// Nested runs (oe.subrun/1-draft): an `experience` node's child experience, loaded, validated
// and run to its end on the calling worker thread as part of this run (docs/kinds-experience.md).
// The child shares the run's plugins and LLM service (budget, runtime.limits, record/replay);
// it is stopped through the calling Call; with state_scope shared, its writes reach this run's
// store on the coordinator (onCoordinator), under this run's chain of landed writes.
#include <algorithm>
#include <filesystem>

#include "oe/pg/connection.hpp"
#include "oe/run/engine.hpp"
#include "oe/spec/loader.hpp"
#include "oe/spec/validate.hpp"

namespace oe::run::engine {

namespace fs = std::filesystem;

namespace {

// The child's progress as the parent node's activity: which child node started, finished or
// failed (the child's own log has the detail).
std::optional<std::string> relayedActivity(const events::Event& event) {
  const std::string_view type = event.type();
  const std::string node(event.nodeId());
  if (type == "node.started") {
    return node + " started";
  }
  if (type == "node.finished") {
    return node + (event.cached() ? " cached" : " finished");
  }
  if (type == "node.failed") {
    return node + " failed: " + stringField(event.json(), "error");
  }
  if (type == "run.finished") {
    return "run finished " + stringField(event.json(), "status");
  }
  return std::nullopt;
}

}  // namespace

const spec::KindCatalog& Run::catalog() {
  std::call_once(catalog_once_, [this] { catalog_ = kindCatalog(*registry_); });
  return catalog_;
}

Result<std::vector<std::string>> Run::forwardWrite(const Call& call, const std::string& parent_key,
                                                   const Json& delta,
                                                   const state::WriteMeta& child_meta) {
  Json shared = Json::object();
  for (const auto& [field, value] : delta.items()) {
    if (exp_.state.find(field) != nullptr) {
      shared[field] = value;
    }
  }
  std::vector<std::string> landed_fields;
  if (shared.empty()) {
    return landed_fields;  // only fields of the child's own: they stay in its store
  }
  // The write's identity in this run's chain: the parent call's, then the child's own.
  const std::string key = child_meta.write_key.empty()
                              ? std::string()
                              : parent_key + "/" + std::string(child_meta.write_key);
  const std::string& node_id = call.node->spec->id;
  if (store_.landedInput(key) != nullptr) {  // done in this chain, whatever its input now
    for (const auto& [field, value] : shared.items()) {
      landed_fields.push_back(field);
    }
    return landed_fields;
  }
  auto written =
      store_.write(shared, state::WriteMeta{log_.runId(), node_id, key, child_meta.input_key});
  if (!written) {
    return makeError("the parent experience's state (state_scope: shared) refused the write: " +
                     written.error().message);
  }
  for (const std::string& field : *written) {
    log_.stateWrite(node_id, field);
  }
  return landed_fields;
}

oe_status Run::subrunFromPlugin(Call& call, std::string_view request_text, std::string& out) {
  const std::string& node_id = call.node->spec->id;
  if (registry_ == nullptr) {
    out = "nested experiences are not available in this run (no plugin registry)";
    return OE_UNIMPLEMENTED;
  }
  Json request = Json::parse(request_text, nullptr, false);
  if (!request.is_object() || !request.contains("experience") ||
      !request["experience"].is_string()) {
    out = "oe.subrun/1-draft: the request must be an object with \"experience\": \"<path>\"";
    return OE_INVALID_ARGUMENT;
  }
  const std::string written_path = request["experience"].get<std::string>();
  const std::string declared = request.value("declared_as", written_path);
  const std::string scope = stringField(request, "state_scope", "isolated");
  if (scope != "isolated" && scope != "shared") {
    out =
        "oe.subrun/1-draft: state_scope must be \"isolated\" or \"shared\", not \"" + scope + "\"";
    return OE_INVALID_ARGUMENT;
  }
  const fs::path path = spec::nestedExperiencePath(exp_.dir, written_path);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    out = spec::nestedNotFound(path, declared);
    return OE_NOT_FOUND;
  }

  // The experiences above the child: a cycle, or nesting deeper than kMaxNestingDepth, is
  // refused here too (`oe validate` reports both before any run).
  std::vector<fs::path> ancestry = options_.nesting.ancestry;
  ancestry.push_back(fs::weakly_canonical(exp_.file, ec));
  const fs::path child_file = fs::weakly_canonical(path, ec);
  if (std::find(ancestry.begin(), ancestry.end(), child_file) != ancestry.end()) {
    out = "nested experiences form a cycle: " + spec::nestingChain(ancestry, child_file) +
          "; an experience cannot include itself";
    return OE_FAILED_PRECONDITION;
  }
  const int depth = options_.nesting.depth + 1;
  if (depth > kMaxNestingDepth) {
    out = "nested experiences go deeper than " + std::to_string(kMaxNestingDepth) +
          " levels: " + spec::nestingChain(ancestry, child_file) + "; flatten the nesting";
    return OE_FAILED_PRECONDITION;
  }

  auto loaded = spec::loadExperience(path);
  std::vector<Diagnostic> diagnostics = std::move(loaded.diagnostics);
  if (loaded.experience && !hasErrors(diagnostics)) {
    // A replayed run starts no program (the recording answers): none needs to be on PATH.
    const spec::ProgramCheck programs =
        options_.llm.replay_file ? spec::ProgramCheck() : spec::ProgramCheck(Severity::kError);
    auto found = spec::validateExperience(*loaded.experience, catalog(), /*strict=*/false,
                                          /*check_files=*/true, programs);
    diagnostics.insert(diagnostics.end(), found.begin(), found.end());
  }
  if (!loaded.experience || hasErrors(diagnostics)) {
    out = "the nested experience " + path.string() + " is not valid (see `oe validate " +
          path.string() + "`):";
    for (const Diagnostic& d : diagnostics) {
      if (d.severity == Severity::kError) {
        out += "\n  " + d.format();
      }
    }
    return OE_INVALID_ARGUMENT;
  }
  // The files the child's nodes read beyond those they name (x-oe-reads-file): their keys.
  spec::attachReadFiles(*loaded.experience, catalog());
  const spec::Experience& child_exp = *loaded.experience;

  const std::string sub_run_id = events::newRunId();
  RunOptions child;
  child.args = request.value("args", Json::object());
  child.run_id = sub_run_id;
  child.use_cache = cache_ != nullptr;
  child.reuse_cache = options_.reuse_cache;
  child.llm = options_.llm;
  // Upstream's place for an isolated child's store; a shared child keeps its own fields there.
  child.state_db = workspaceDir(exp_) / "sub" / (node_id + "-" + sub_run_id + ".sqlite");
  Nesting& nesting = child.nesting;
  nesting.parent_run_id = log_.runId();
  nesting.parent_node_id = node_id;
  nesting.depth = depth;
  nesting.ancestry = std::move(ancestry);
  nesting.llm = llm_;
  nesting.secrets = secrets_;
  nesting.stop = std::make_shared<StopHandle>();
  const bool top = options_.nesting.depth == 0;
  nesting.approval_store = top ? (pg::isUrl(options_.store_url)
                                      ? options_.store_url
                                      : approvals::storePath(workspaceDir(exp_)).string())
                                : options_.nesting.approval_store;
  nesting.approval_chain = top ? chain_id_ : options_.nesting.approval_chain;
  nesting.approval_run_id = top ? log_.runId() : options_.nesting.approval_run_id;
  // Named by the call's key, so a pipeline stage's or loop body's nested run asks per item
  // ("nest@p#1/review"); a main-pass node's key is its id ("nest/review").
  nesting.approval_prefix =
      options_.nesting.approval_prefix + writeKey(node_id, call.extra_args) + "/";
  {
    std::lock_guard lock(call.phase_mutex);
    if (call.cancelled.load()) {
      out = "cancelled before the nested experience started";
      return OE_CANCELLED;
    }
    call.children.push_back(nesting.stop);
  }
  // Registered for the child's life only: the handle goes when it ends, however it ends.
  struct Unregister {
    Call& call;
    const StopHandle* handle;
    ~Unregister() {
      std::lock_guard lock(call.phase_mutex);
      std::erase_if(call.children, [this](const auto& child) { return child.get() == handle; });
    }
  } unregister{call, nesting.stop.get()};
  call.uncacheable = true;
  if (scope == "shared") {
    nesting.seed_state = onCoordinator([this] { return store_.snapshot(); });
    nesting.forward_write = [this, &call, parent_key = writeKey(node_id, call.extra_args)](
                                const Json& delta, const state::WriteMeta& meta) {
      return onCoordinator([&] { return forwardWrite(call, parent_key, delta, meta); });
    };
  }
  child.on_event = [this, &call, sub_run_id](const events::Event& event) {
    if (auto activity = relayedActivity(event)) {
      (void)log_.nodeEvent("node.activity", call.node->spec->id,
                           Json{{"activity", *activity}, {"sub_run_id", sub_run_id}}.dump());
    }
  };
  const fs::path child_log = workspaceDir(child_exp) / "runs" / (sub_run_id + ".jsonl");
  (void)log_.nodeEvent("node.activity", node_id,
                       Json{{"activity", "running " + path.string() + " as run " + sub_run_id},
                            {"sub_run_id", sub_run_id},
                            {"sub_event_log", child_log.string()}}
                           .dump());

  auto summary = runExperience(child_exp, *registry_, child);
  if (!summary) {
    out = "the nested experience " + path.string() + " could not start: " + summary.error().message;
    return OE_FAILED_PRECONDITION;
  }
  if (summary->stop_reason == "budget_exhausted") {
    call.llm_usage.budget_refused = true;  // the parent run stops too, resumable
    out = "the run's LLM budget ran out inside the nested experience " + path.string() + " (run " +
          sub_run_id + ")";
    return OE_RESOURCE_EXHAUSTED;
  }
  if (call.cancelled.load()) {
    out = "cancelled: the nested experience " + path.string() + " (run " + sub_run_id +
          ") was stopped";
    return OE_CANCELLED;
  }
  if (summary->status == RunStatus::kWaiting) {
    // Parked on approvals: the call's node parks with it (attemptFailed), and the run that
    // continues this one runs the nested experience again, which then finds the decisions.
    call.parked_in = summary->waiting;
    out = "the nested experience " + path.string() + " (run " + sub_run_id +
          ") waits for an approval";
    return OE_UNAVAILABLE;
  }
  out = Json{{"runId", summary->run_id},
             {"status", std::string(toString(summary->status))},
             {"finalState", summary->final_state},
             {"eventLog", summary->event_log.string()}}
            .dump();
  return OE_OK;
}

}  // namespace oe::run::engine

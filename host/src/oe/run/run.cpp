// The run engine: a ready-queue scheduler (D5) on one Boost.Asio io_context. All scheduling,
// state writes and event appends happen on the coordinator thread (the one calling
// runExperience); plugin calls run on a worker pool, or inline when nothing else could run.
#include "oe/run/run.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/executor_work_guard.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "oe/cache/cache_store.hpp"
#include "oe/events/event_log.hpp"
#include "oe/expr/args_template.hpp"
#include "oe/expr/condition.hpp"
#include "oe/expr/interpolate.hpp"
#include "oe/expr/js_value.hpp"
#include "oe/expr/state_path.hpp"
#include "oe/graph/dag.hpp"
#include "oe/llm/llm_service.hpp"
#include "oe/plugins/host_context.hpp"
#include "oe/spec/loader.hpp"
#include "oe/state/state_store.hpp"

namespace oe::run {

std::string_view toString(RunStatus status) {
  switch (status) {
    case RunStatus::kSuccess:
      return "success";
    case RunStatus::kPartial:
      return "partial";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kInterrupted:
      return "interrupted";
    default:
      return "failed";
  }
}

std::filesystem::path workspaceDir(const spec::Experience& experience) {
  return experience.dir / ".openexpertise";
}

std::filesystem::path statePath(const spec::Experience& experience) {
  if (experience.state.store) {
    return experience.dir / *experience.state.store;  // D14
  }
  return workspaceDir(experience) / "state.sqlite";
}

namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxPoolThreads = 64;

// JSON string literal for s (quotes included).

enum class Outcome { kPending, kRunning, kSucceeded, kFailed, kSkipped };

// D4: the files a node names (impl, prompt, a dataset's source.uri, a skill folder) with their
// content digests (fileDigest: a folder through its SKILL.md, else its files). The host knows no
// kind, so any string of the node's definition, at any depth, that names an existing path
// counts (not its args: see below). One table per run (or per pin): a file many nodes name is
// hashed once and stored once, and a node keeps only the indices of its files.
class FileTable {
 public:
  explicit FileTable(std::filesystem::path dir) : dir_(std::move(dir)) {}

  std::vector<uint32_t> idsOf(const spec::NodeSpec& node) {
    // A run's nodes carry their candidates (spec::compactNodes); others have their DOM.
    const std::vector<std::string> from_dom =
        node.raw.is_null() ? std::vector<std::string>() : spec::pathCandidates(node.raw);
    const std::vector<std::string>& candidates = node.raw.is_null() ? node.path_candidates
                                                                    : from_dom;
    std::vector<uint32_t> ids;
    for (const std::string& candidate : candidates) {
      const std::string* text = &candidate;
      // By the text as written (relative to one folder): a file hashed once stays as it was
      // for the run, with no path built and no stat again for the next node.
      auto it = by_text_.find(*text);
      if (it == by_text_.end()) {
        std::filesystem::path path(*text);
        if (path.is_relative()) {
          path = dir_ / path;
        }
        std::error_code ec;
        if (!std::filesystem::exists(path, ec)) {
          continue;  // names no file (yet): looked at again for the next node that has it
        }
        auto digest = cache::fileDigest(path);
        files_.push_back(cache::FileDigest{*text, digest ? *digest : std::string("unreadable")});
        it = by_text_.emplace(*text, static_cast<uint32_t>(files_.size() - 1)).first;
      }
      ids.push_back(it->second);
    }
    return ids;
  }

  std::vector<cache::FileDigest> filesOf(const std::vector<uint32_t>& ids) const {
    std::vector<cache::FileDigest> out;
    out.reserve(ids.size());
    for (uint32_t id : ids) {
      out.push_back(files_[id]);
    }
    return out;
  }

 private:
  std::filesystem::path dir_;
  std::vector<cache::FileDigest> files_;
  std::unordered_map<std::string, uint32_t> by_text_;
};

// The pin of an experience (see definitionPin), with each node's files from `files_of`.
template <class FilesOf>
Json buildPin(const spec::Experience& experience, FilesOf&& files_of) {
  auto file_digest = cache::fileDigest(experience.file);
  Json nodes = Json::object();
  Json order = Json::array();
  for (size_t i = 0; i < experience.nodes.size(); ++i) {
    const spec::NodeSpec& node = experience.nodes[i];
    // The same text either way (sorted keys, compact; a YAML document is valid UTF-8).
    std::string material = node.text.empty() ? node.raw.dump() : node.text;
    for (const cache::FileDigest& file : files_of(i)) {
      material += "\n" + file.path + "=" + file.sha256;
    }
    nodes[node.id] = cache::sha256Hex(material);
    order.push_back(node.id);
  }
  return Json{{"experience", experience.file.string()},
              {"experience_sha256", file_digest ? *file_digest : std::string("unreadable")},
              {"nodes", std::move(nodes)},
              {"order", std::move(order)}};
}

class Run;
struct NodeRuntime;

// Everything one plugin call needs; also the oe_host_ctx the plugin sees during the call.
struct Call final : oe_host_ctx {
  Run* run = nullptr;
  NodeRuntime* node = nullptr;
  Json extra_args;    // $item/$index/$pipeline/$iter/$loop
  Json edge_inputs;   // what predecessors (or the previous pipeline stage) handed over
  Json state_view;    // the node's `reads`, frozen at dispatch
  Json args;
  std::string args_json;   // canonical dumps of args, state_view and edge_inputs (cache key
  std::string state_json;  // and request share them)
  std::string edges_json;
  std::string cache_key;
  int attempt = 0;
  oe_node* instance = nullptr;
  oe_writer response;
  oe_writer error;
  oe_status status = OE_OK;
  std::atomic<bool> cancelled{false};
  bool timed_out = false;
  std::unique_ptr<asio::steady_timer> timer;
  // Continuation on the coordinator: success flag and the edge_output (null when absent).
  std::function<void(bool ok, const Json* edge_output)> done;

  llm::CallUsage llm_usage;  // written by oe.llm/1 on the worker thread during the attempt

  void log(oe_log_level level, std::string_view message) override;
  oe_status emitEvent(std::string_view type, std::string_view fields_json) override;
  oe_status stateGet(std::string_view field, std::string& out_json) override;
  [[nodiscard]] bool isCancelled() const override { return cancelled.load(); }
  oe_status llmComplete(std::string_view request_json, std::string& out) override;
  oe_status renderPrompt(std::string_view template_text, std::string& out) override;
  oe_status promptValues(uint32_t indent, std::string& out) override;
  // {...state_view, ...edge_inputs, ...args}: what a prompt's placeholders see (reference §2.1).
  [[nodiscard]] Json promptValueMap() const;
};

struct NodeRuntime {
  const spec::NodeSpec* spec = nullptr;
  uint32_t index = 0;
  const plugins::LoadedKind* kind = nullptr;
  expr::ArgsTemplate args;
  std::vector<expr::Condition> conditions;  // `when` of incoming edges
  // nodeJson() of a node kept as a DOM only (a run's nodes have their text), while it can run.
  std::unique_ptr<std::string> raw_dump;
  std::vector<uint32_t> file_ids;  // the files the node names (D4), in the run's FileTable
  bool files_known = false;
  Json edge_inputs;  // null until a predecessor hands something over (no allocation per node)
  bool main = true;  // false for pipeline stages and loop bodies (they run after the main pass)
  bool selected = true;  // false: outside --from/--only, reused from the cache, never executed
  uint32_t unmet = 0;
  Outcome outcome = Outcome::kPending;
  // Node instances: one shared instance for reentrant kinds, else a free list.
  std::vector<oe_node*> instances;
  std::vector<oe_node*> idle;
  // for_each bookkeeping, only for a node that has for_each (most have not: ~130 bytes saved
  // per node of the run).
  struct ForEachRun {
    Json items;
    size_t next_item = 0;
    size_t items_done = 0;
    size_t items_in_flight = 0;
    bool any_item_failed = false;
    // D16 (runtime.deterministic): item outcomes waiting for the items before them; the
    // function applies one and says whether it consumed the slot (a failed cache replay runs
    // live instead).
    size_t next_apply = 0;
    std::map<size_t, std::function<bool()>> parked;
  };
  std::unique_ptr<ForEachRun> each;
};

class Run {
 public:
  Run(const spec::Experience& exp, const RunOptions& options, state::StateStore& store,
      events::EventLog& log, cache::CacheStore* cache, llm::LlmService* llm)
      : exp_(exp), options_(options), store_(store), log_(log), cache_(cache), llm_(llm) {}

  Result<void> prepare(const plugins::PluginRegistry& plugins);
  // definitionPin() from the digests this run computes anyway for its cache keys.
  Json pin() {
    return buildPin(exp_, [this](size_t i) { return fileDigests(nodes_[i]); });
  }
  RunSummary execute();
  void destroyInstances();
  void destroyInstances(NodeRuntime& node);

  // Called from worker threads through Call.
  void logFromPlugin(const Call& call, oe_log_level level, std::string_view message);
  oe_status llmFromPlugin(Call& call, std::string_view request_json, std::string& out);
  oe_status emitFromPlugin(const Call& call, std::string_view type, std::string_view fields);

 private:
  void pump();
  void startNode(NodeRuntime& node);
  void pumpForEach(NodeRuntime& node);
  void finishNode(NodeRuntime& node, bool ok);
  void skipNode(NodeRuntime& node, std::string_view reason);
  void releaseSuccessors(NodeRuntime& node);
  void mainPassDone();
  void runPipeline(size_t pipeline_index);
  void runPipelineItem(size_t pipeline_index, size_t item_index, size_t stage_index,
                       Json prev_output, std::shared_ptr<Json> items);
  void runLoop(size_t loop_index, int iteration);
  void finishRun();

  void startCall(NodeRuntime& node, Json extra_args, Json edge_inputs,
                 std::function<void(bool, const Json*)> done);
  void attempt(const std::shared_ptr<Call>& call);
  void reuseFromCache(const std::shared_ptr<Call>& call);
  void invokeDone(const std::shared_ptr<Call>& call);
  void attemptFailed(const std::shared_ptr<Call>& call, std::string message);
  bool applyOutput(Call& call, const Json& output, bool from_cache, std::string* error);
  Result<oe_node*> acquireInstance(NodeRuntime& node);
  void releaseInstance(NodeRuntime& node, oe_node* instance);
  void cancelAll(std::string reason);
  void stopForBudget();
  // D16: runs `settle` now, or, for a for_each item under runtime.deterministic, once every item
  // before it has settled, so array_append fields fill in item order whatever the completion
  // order. `settle` returns false when it did not settle the item (it will come back).
  void inItemOrder(Call& call, std::function<bool()> settle);
  std::vector<cache::FileDigest> fileDigests(NodeRuntime& node);
  // The position of node `id` in exp_.nodes (and nodes_).
  [[nodiscard]] std::optional<uint32_t> indexOf(std::string_view id) const {
    const spec::NodeSpec* node = exp_.findNode(id);
    if (node == nullptr) {
      return std::nullopt;
    }
    return static_cast<uint32_t>(node - exp_.nodes.data());
  }
  const std::string& nodeJson(NodeRuntime& node) {
    if (!node.spec->text.empty()) {
      return node.spec->text;
    }
    if (!node.raw_dump) {
      node.raw_dump = std::make_unique<std::string>(cache::canonicalJson(node.spec->raw));
    }
    return *node.raw_dump;
  }
  void emitLocal(const Json& event) {
    if (options_.on_event) {
      options_.on_event(event);
    }
  }
  [[nodiscard]] std::string nodeLabel(const NodeRuntime& node) const {
    return "node \"" + node.spec->id + "\" (kind " + node.spec->kind + ")";
  }

  const spec::Experience& exp_;
  const RunOptions& options_;
  state::StateStore& store_;
  events::EventLog& log_;
  cache::CacheStore* cache_;
  llm::LlmService* llm_;
  graph::Dag dag_;
  std::vector<NodeRuntime> nodes_;
  Json run_args_;
  std::string experience_dir_json_;

  asio::io_context io_;
  std::unique_ptr<asio::thread_pool> pool_;
  std::deque<uint32_t> ready_;
  int concurrency_ = 1;
  int nodes_in_flight_ = 0;
  int calls_in_flight_ = 0;
  std::vector<std::shared_ptr<Call>> active_calls_;
  std::vector<std::shared_ptr<Call>> waiting_calls_;  // failed attempts waiting for their retry
  // The call running inline on this thread, so a signal can cancel it (guarded by inline_mutex_).
  std::mutex inline_mutex_;
  Call* inline_call_ = nullptr;
  bool cancelling_ = false;
  bool main_done_ = false;
  bool finished_ = false;
  RunSummary summary_;
  bool any_success_ = false;
  bool any_failure_ = false;
  std::vector<std::string> cache_hits_;  // keys replayed, recorded once at the end (touch)
  FileTable file_table_{exp_.dir};
  bool force_selected_ = false;  // --from/--only: selected nodes execute even on a cache hit
};

void Call::log(oe_log_level level, std::string_view message) {
  run->logFromPlugin(*this, level, message);
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

Json Call::promptValueMap() const {
  Json values = state_view;
  for (const auto& [key, value] : edge_inputs.items()) {
    values[key] = value;
  }
  for (const auto& [key, value] : args.items()) {
    values[key] = value;
  }
  return values;
}

oe_status Call::renderPrompt(std::string_view template_text, std::string& out) {
  auto rendered = expr::interpolate(template_text, promptValueMap(), /*strict=*/false);
  if (!rendered) {
    return OE_INTERNAL;  // non-strict interpolation has no failure
  }
  out = std::move(rendered).value();
  return OE_OK;
}

oe_status Call::promptValues(uint32_t indent, std::string& out) {
  out = expr::stringifyIndented(promptValueMap(), static_cast<int>(indent));
  return OE_OK;
}

oe_status Run::llmFromPlugin(Call& call, std::string_view request_json, std::string& out) {
  llm::Answer answer = llm_->complete(
      llm::Site{&call, call.node->spec->id, &call.llm_usage}, request_json);
  out = std::move(answer.body);
  return answer.status;
}

void Run::logFromPlugin(const Call& call, oe_log_level level, std::string_view message) {
  // Plugin log lines go to the same sink as the plugin-level log, tagged with the node.
  const char* tag = level >= OE_LOG_ERROR ? "error" : level >= OE_LOG_WARN ? "warn" : "info";
  Json event = {{"type", "node.log"}, {"node_id", call.node->spec->id}, {"level", tag},
                {"message", std::string(message)}};
  emitLocal(event);
}

oe_status Run::emitFromPlugin(const Call& call, std::string_view type, std::string_view fields) {
  auto written = log_.nodeEvent(type, call.node->spec->id, fields);
  return written ? OE_OK : OE_INVALID_ARGUMENT;
}

Result<void> Run::prepare(const plugins::PluginRegistry& plugins) {
  auto dag = graph::buildDag(exp_);
  if (!dag) {
    return dag.error();
  }
  dag_ = std::move(dag).value();
  run_args_ = options_.args.is_object() ? options_.args : Json::object();
  experience_dir_json_ = jsonQuoted(exp_.dir.string());

  nodes_.resize(exp_.nodes.size());
  for (uint32_t i = 0; i < exp_.nodes.size(); ++i) {
    NodeRuntime& node = nodes_[i];
    const spec::NodeSpec& spec = exp_.nodes[i];
    node.spec = &spec;
    node.index = i;
    node.kind = plugins.find(spec.kind);
    if (node.kind == nullptr) {
      return makeError("node \"" + spec.id + "\": no loaded plugin provides kind \"" + spec.kind +
                       "\"; run `oe plugins` to see the installed kinds");
    }
    node.args = expr::ArgsTemplate::view(spec.args);  // the spec outlives the run
    for (uint32_t edge_index : dag_.in_edges[i]) {
      const auto& edge = exp_.edges[edge_index];
      if (!edge.when) {
        continue;
      }
      auto condition = expr::Condition::compile(*edge.when);
      if (!condition) {
        return makeError("edge " + edge.from + " -> " + edge.to + ": when: " +
                         condition.error().message);
      }
      node.conditions.push_back(std::move(condition).value());
    }
  }
  for (const auto& pipeline : exp_.pipelines) {
    for (const auto& stage : pipeline.stages) {
      auto it = indexOf(stage);
      if (!it) {
        return makeError("Pipeline \"" + pipeline.id + "\" references unknown stage node \"" +
                         stage + "\"");
      }
      nodes_[*it].main = false;
    }
  }
  for (const auto& loop : exp_.loops) {
    auto it = indexOf(loop.body);
    if (!it) {
      return makeError("Loop \"" + loop.id + "\" references unknown body node \"" + loop.body + "\"");
    }
    if (!loop.until && !loop.max_iters) {
      return makeError("Loop \"" + loop.id + "\" must declare at least one of: until, max_iters");
    }
    nodes_[*it].main = false;
  }
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    for (uint32_t pred : dag_.preds[i]) {
      if (nodes_[pred].main) {
        ++nodes_[i].unmet;
      }
    }
  }

  const std::string& pick = !options_.only_node.empty() ? options_.only_node : options_.from_node;
  if (!pick.empty()) {
    auto it = indexOf(pick);
    if (!it) {
      return makeError(std::string(options_.only_node.empty() ? "--from" : "--only") +
                       ": no node \"" + pick + "\" in " + exp_.file.string());
    }
    for (auto& node : nodes_) {
      node.selected = false;
    }
    // --from: the node and everything downstream of it (successors in the graph).
    std::vector<uint32_t> stack = {*it};
    while (!stack.empty()) {
      const uint32_t i = stack.back();
      stack.pop_back();
      if (nodes_[i].selected) {
        continue;
      }
      nodes_[i].selected = true;
      if (options_.only_node.empty()) {
        stack.insert(stack.end(), dag_.succs[i].begin(), dag_.succs[i].end());
      }
    }
    force_selected_ = true;
  }
  concurrency_ = std::max(1, options_.concurrency.value_or(exp_.runtime.concurrency.value_or(1)));
  int widest_for_each = 1;
  for (const auto& node : exp_.nodes) {
    if (node.for_each) {
      widest_for_each = std::max(widest_for_each, node.for_each->concurrency);
    }
  }
  const size_t threads = std::min<size_t>(
      kMaxPoolThreads, static_cast<size_t>(concurrency_) * static_cast<size_t>(widest_for_each));
  pool_ = std::make_unique<asio::thread_pool>(std::max<size_t>(1, threads));
  return {};
}

RunSummary Run::execute() {
  summary_.run_id = log_.runId();
  for (uint32_t i : dag_.topo) {
    if (nodes_[i].main && nodes_[i].unmet == 0) {
      ready_.push_back(i);
    }
  }
  // Signals are watched on their own thread: the coordinator may be busy in an inline call,
  // which must be cancelled at once, not after it returns.
  asio::io_context signal_io;
  asio::signal_set signals(signal_io, SIGINT, SIGTERM);
  signals.async_wait([this](const boost::system::error_code& ec, int signal_number) {
    if (ec) {
      return;
    }
    {
      std::lock_guard lock(inline_mutex_);
      if (inline_call_ != nullptr && !inline_call_->cancelled.exchange(true) &&
          inline_call_->node->kind->kind->cancel != nullptr) {
        inline_call_->node->kind->kind->cancel(inline_call_->instance, inline_call_);
      }
    }
    asio::post(io_, [this, signal_number] {
      cancelAll(signal_number == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)");
    });
  });
  std::thread signal_thread([&signal_io] { signal_io.run(); });
  asio::post(io_, [this] { pump(); });
  // Keeps run_one() blocking (not spinning) while the only work in flight is on the pool.
  auto work = asio::make_work_guard(io_);
  while (!finished_) {
    io_.run_one();
  }
  signals.cancel();
  signal_io.stop();
  signal_thread.join();
  pool_->join();
  return summary_;
}

void Run::pump() {
  if (cancelling_) {
    if (calls_in_flight_ == 0 && !finished_) {
      finishRun();
    }
    return;
  }
  while (!ready_.empty() && nodes_in_flight_ < concurrency_) {
    const uint32_t index = ready_.front();
    ready_.pop_front();
    startNode(nodes_[index]);
    if (cancelling_) {
      return;
    }
  }
  if (ready_.empty() && nodes_in_flight_ == 0 && !main_done_) {
    main_done_ = true;
    mainPassDone();
  }
}

void Run::startNode(NodeRuntime& node) {
  // Predecessor check: any failed or skipped predecessor skips this node (reference §3.3).
  for (uint32_t pred : dag_.preds[node.index]) {
    const Outcome o = nodes_[pred].outcome;
    if (o == Outcome::kFailed || o == Outcome::kSkipped) {
      skipNode(node, "predecessor failed or skipped");
      return;
    }
  }
  for (const auto& condition : node.conditions) {
    if (!condition.test(store_)) {
      skipNode(node, "when: condition false");
      return;
    }
  }
  node.outcome = Outcome::kRunning;
  ++nodes_in_flight_;
  if (node.spec->for_each) {
    std::optional<Json> items;
    if (auto source = expr::StatePath::parse(node.spec->for_each->source)) {
      items = source->resolve(store_);
    }
    if (!items || !items->is_array() || items->empty()) {
      // Not an array: zero iterations, no events, successors run (reference §3.5).
      finishNode(node, true);
      return;
    }
    node.each = std::make_unique<NodeRuntime::ForEachRun>();
    node.each->items = std::move(*items);
    pumpForEach(node);
    return;
  }
  // Moved, not copied: every predecessor is done, so nothing adds to them any more.
  startCall(node, Json::object(), std::move(node.edge_inputs),
            [this, &node](bool ok, const Json* /*edge_output*/) { finishNode(node, ok); });
}

void Run::pumpForEach(NodeRuntime& node) {
  const size_t limit = static_cast<size_t>(std::max(1, node.spec->for_each->concurrency));
  NodeRuntime::ForEachRun& each = *node.each;
  while (!cancelling_ && each.next_item < each.items.size() && each.items_in_flight < limit) {
    const size_t i = each.next_item++;
    ++each.items_in_flight;
    Json extra = {{"$item", each.items[i]}, {"$index", i}};
    startCall(node, std::move(extra), node.edge_inputs, [this, &node](bool ok, const Json*) {
      NodeRuntime::ForEachRun& done = *node.each;
      --done.items_in_flight;
      ++done.items_done;
      if (!ok) {
        done.any_item_failed = true;
      }
      if (done.items_done == done.items.size() || (cancelling_ && done.items_in_flight == 0)) {
        finishNode(node, !done.any_item_failed);
      } else {
        pumpForEach(node);
      }
    });
  }
}

void Run::finishNode(NodeRuntime& node, bool ok) {
  node.outcome = ok ? Outcome::kSucceeded : Outcome::kFailed;
  if (ok) {
    any_success_ = true;
  } else {
    any_failure_ = true;
    ++summary_.failed;
  }
  --nodes_in_flight_;
  if (node.main) {
    // A main-pass node never runs again in this run: its plugin instances go now rather than
    // at the end, so memory does not hold one per node (stages and loop bodies keep theirs).
    destroyInstances(node);
    node.raw_dump.reset();
    node.file_ids = {};
  }
  releaseSuccessors(node);
  asio::post(io_, [this] { pump(); });
}

void Run::skipNode(NodeRuntime& node, std::string_view reason) {
  node.outcome = Outcome::kSkipped;
  ++summary_.skipped;
  log_.nodeSkipped(node.spec->id, reason, node.spec->phase);
  releaseSuccessors(node);
}

void Run::releaseSuccessors(NodeRuntime& node) {
  if (!node.main) {
    return;
  }
  for (uint32_t succ : dag_.succs[node.index]) {
    NodeRuntime& next = nodes_[succ];
    if (next.main && --next.unmet == 0) {
      ready_.push_back(succ);
    }
  }
}

void Run::mainPassDone() {
  if (!exp_.pipelines.empty()) {
    runPipeline(0);
  } else if (!exp_.loops.empty()) {
    runLoop(0, 0);
  } else {
    finishRun();
  }
}

void Run::runPipeline(size_t pipeline_index) {
  if (cancelling_) {
    pump();
    return;
  }
  if (pipeline_index >= exp_.pipelines.size()) {
    if (!exp_.loops.empty()) {
      runLoop(0, 0);
    } else {
      finishRun();
    }
    return;
  }
  const auto& pipeline = exp_.pipelines[pipeline_index];
  auto path = expr::StatePath::parse(pipeline.items);
  std::optional<Json> items;
  if (path) {
    items = path->resolve(store_);
  }
  if (!items || !items->is_array() || items->empty()) {
    runPipeline(pipeline_index + 1);
    return;
  }
  runPipelineItem(pipeline_index, 0, 0, nullptr, std::make_shared<Json>(std::move(*items)));
}

void Run::runPipelineItem(size_t pipeline_index, size_t item_index, size_t stage_index,
                          Json prev_output, std::shared_ptr<Json> items) {
  const auto& pipeline = exp_.pipelines[pipeline_index];
  if (cancelling_) {
    pump();
    return;
  }
  if (item_index >= items->size()) {
    runPipeline(pipeline_index + 1);
    return;
  }
  if (stage_index >= pipeline.stages.size()) {
    runPipelineItem(pipeline_index, item_index + 1, 0, nullptr, items);
    return;
  }
  NodeRuntime& stage = nodes_[*indexOf(pipeline.stages[stage_index])];
  Json edge_inputs = Json::object();
  if (stage_index > 0) {
    edge_inputs[pipeline.stages[stage_index - 1]] = std::move(prev_output);
  }
  Json extra = {{"$item", (*items)[item_index]}, {"$index", item_index}, {"$pipeline", pipeline.id}};
  startCall(stage, std::move(extra), std::move(edge_inputs),
            [this, pipeline_index, item_index, stage_index, items, &stage](bool ok, const Json* out) {
              stage.outcome = ok ? Outcome::kSucceeded : Outcome::kFailed;
              if (ok) {
                any_success_ = true;
              } else {
                any_failure_ = true;
                ++summary_.failed;
              }
              if (ok && out != nullptr) {
                runPipelineItem(pipeline_index, item_index, stage_index + 1, *out, items);
              } else {
                // A failure, or a stage without edge_output, ends this item's chain (§3.5).
                runPipelineItem(pipeline_index, item_index + 1, 0, nullptr, items);
              }
            });
}

void Run::runLoop(size_t loop_index, int iteration) {
  if (cancelling_) {
    pump();
    return;
  }
  if (loop_index >= exp_.loops.size()) {
    finishRun();
    return;
  }
  const auto& loop = exp_.loops[loop_index];
  const int max_iters = loop.max_iters.value_or(100);
  bool stop = iteration >= max_iters;
  if (!stop && loop.until) {
    auto condition = expr::Condition::compile(*loop.until);
    stop = !condition || condition->test(store_);
  }
  if (stop) {
    runLoop(loop_index + 1, 0);
    return;
  }
  NodeRuntime& body = nodes_[*indexOf(loop.body)];
  Json extra = {{"$iter", iteration}, {"$loop", loop.id}};
  startCall(body, std::move(extra), body.edge_inputs,
            [this, loop_index, iteration, &body](bool ok, const Json*) {
              body.outcome = ok ? Outcome::kSucceeded : Outcome::kFailed;
              if (ok) {
                any_success_ = true;
                runLoop(loop_index, iteration + 1);
              } else {
                any_failure_ = true;
                ++summary_.failed;
                runLoop(loop_index + 1, 0);  // a failed iteration stops the loop
              }
            });
}

void Run::finishRun() {
  if (finished_) {
    return;
  }
  // D6, plus D7: a run stopped by fail_run (or a signal) is `failed`.
  if (cancelling_) {
    summary_.status = RunStatus::kFailed;
  } else if (!any_failure_) {
    summary_.status = RunStatus::kSuccess;
  } else {
    summary_.status = any_success_ ? RunStatus::kPartial : RunStatus::kFailed;
  }
  summary_.final_state = store_.snapshot();
  Json extra = {{"nodes",
                 {{"ran", summary_.ran},
                  {"cached", summary_.cached},
                  {"failed", summary_.failed},
                  {"skipped", summary_.skipped}}}};
  if (summary_.reused > 0) {
    extra["nodes"]["reused"] = summary_.reused;
  }
  if (!summary_.stop_reason.empty()) {
    extra["reason"] = summary_.stop_reason;
  }
  if (llm_ != nullptr) {
    summary_.usage = llm_->runUsage();
    summary_.usage_total = llm_->totalUsage();
    if (summary_.usage.calls > 0) {
      extra["usage"] = summary_.usage.toJson();
    }
    if (options_.prior_usage.calls > 0) {
      extra["usage_total"] = summary_.usage_total.toJson();
    }
  }
  // The batched state rows and cache entries reach SQLite before run.finished, so a reader
  // that sees the run finished sees all it wrote. A failure loses nothing: the rows stay in
  // their journals, which the next open folds.
  auto warn = [this](const std::string& message) {
    emitLocal(Json{{"type", "node.log"}, {"node_id", ""}, {"level", "warn"},
                   {"message", message}});
  };
  if (auto flushed = store_.flush(); !flushed) {
    warn(flushed.error().message);
  }
  // One transaction for all the run's hits, so `oe gc` keeps what this run replayed.
  if (cache_ != nullptr) {
    if (auto flushed = cache_->flush(); !flushed) {
      warn(flushed.error().message);
    }
    if (auto touched = cache_->touch(cache_hits_, log_.runId()); !touched) {
      warn(touched.error().message);
    }
  }
  log_.runFinished(toString(summary_.status), extra);
  finished_ = true;
}

std::vector<cache::FileDigest> Run::fileDigests(NodeRuntime& node) {
  if (!node.files_known) {
    node.file_ids = file_table_.idsOf(*node.spec);
    node.files_known = true;
  }
  return file_table_.filesOf(node.file_ids);
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
  call->args = run_args_;
  Json node_args = node.args.resolve(store_);
  if (node_args.is_object()) {
    for (auto& [key, value] : node_args.items()) {
      call->args[key] = std::move(value);
    }
  }
  for (auto& [key, value] : call->extra_args.items()) {
    call->args[key] = value;
  }
  // Dumped once: the same text goes into the cache key and into the plugin's request.
  call->args_json = cache::canonicalJson(call->args);
  call->state_json = cache::canonicalJson(call->state_view);
  call->edges_json = cache::canonicalJson(call->edge_inputs);

  if (!node.selected) {
    reuseFromCache(call);
    return;
  }
  if (cache_ != nullptr) {
    call->cache_key = cache::cacheKeyOfText(nodeJson(node), call->state_json, call->edges_json,
                                            call->args_json, fileDigests(node));
    std::optional<Json> hit;
    if (!force_selected_) {
      hit = cache_->get(call->cache_key);
    }
    if (hit) {
      inItemOrder(*call, [this, call, hit = std::move(*hit)] {
        std::string replay_error;
        if (!applyOutput(*call, hit, true, &replay_error)) {
          // D12: a replay that fails is a miss; the node runs.
          log_.nodeStarted(call->node->spec->id, call->node->spec->phase);
          attempt(call);
          return false;
        }
        ++summary_.cached;
        cache_hits_.push_back(call->cache_key);
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
  log_.nodeStarted(node.spec->id, node.spec->phase);
  attempt(call);
}

void Run::inItemOrder(Call& call, std::function<bool()> settle) {
  NodeRuntime& node = *call.node;
  if (!exp_.runtime.deterministic || !node.spec->for_each || !node.each ||
      !call.extra_args.contains("$index")) {
    settle();
    return;
  }
  NodeRuntime::ForEachRun& each = *node.each;
  each.parked.emplace(call.extra_args["$index"].get<size_t>(), std::move(settle));
  while (!each.parked.empty() && each.parked.begin()->first == each.next_apply) {
    auto next = std::move(each.parked.begin()->second);
    each.parked.erase(each.parked.begin());
    if (!next()) {
      break;  // the item runs live and comes back to this slot
    }
    ++each.next_apply;
  }
}

void Run::reuseFromCache(const std::shared_ptr<Call>& call) {
  NodeRuntime& node = *call->node;
  ++summary_.reused;
  std::optional<Json> hit;
  if (cache_ != nullptr) {
    call->cache_key = cache::cacheKeyOfText(nodeJson(node), call->state_json, call->edges_json,
                                            call->args_json, fileDigests(node));
    hit = cache_->get(call->cache_key);
  }
  Json edge_output;
  const bool has_edge = hit && hit->contains("edge_output");
  if (has_edge) {
    edge_output = (*hit)["edge_output"];
    for (uint32_t succ : dag_.succs[node.index]) {
      nodes_[succ].edge_inputs[node.spec->id] = edge_output;
    }
  } else if (!hit) {
    Json warning = {{"type", "node.log"}, {"node_id", node.spec->id}, {"level", "warn"},
                    {"message", "not selected and not in the cache: its successors get no "
                                "edge_output from it (run it once without --from/--only)"}};
    emitLocal(warning);
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
  const std::string config =
      "{\"experience_dir\":" + experience_dir_json_ + ",\"node\":" + nodeJson(node) + "}";
  const oe_status status = node.kind->kind->create(
      node.kind->library->self(), oe_str{config.data(), config.size()}, nullptr, &instance, &err);
  if (status != OE_OK || instance == nullptr) {
    return makeError(err.data.empty() ? "the " + node.spec->kind +
                                            " plugin could not create the node (status " +
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
  auto instance = acquireInstance(node);
  if (!instance) {
    attemptFailed(call, instance.error().message);
    return;
  }
  call->instance = *instance;
  const std::string request =
      "{\"node\":" + nodeJson(node) + ",\"args\":" + call->args_json +
      ",\"state_view\":" + call->state_json + ",\"edge_inputs\":" + call->edges_json +
      ",\"context\":{\"run_id\":" + jsonQuoted(log_.runId()) + ",\"node_id\":" + jsonQuoted(node.spec->id) +
      ",\"experience_dir\":" + experience_dir_json_ +
      ",\"attempt\":" + std::to_string(call->attempt) + "}}";
  ++calls_in_flight_;
  active_calls_.push_back(call);

  auto invoke = [call, request = std::move(request)] {
    oe_invocation inv{sizeof(oe_invocation), static_cast<uint32_t>(call->attempt),
                      oe_str{request.data(), request.size()}, call.get(), &call->response,
                      &call->error};
    call->status = call->node->kind->kind->invoke(call->instance, &inv);
  };
  const auto timeout = node.spec->timeout_ms;
  // Inline when nothing else could run meanwhile: saves the thread hand-off (35-70 µs here),
  // which dominates cheap nodes. Ready nodes cannot start while the concurrency limit is
  // reached (a fan-out under concurrency 1), so they do not prevent it. A node with a timeout
  // always goes to the pool so the coordinator stays free to fire the timer.
  const bool nothing_else_could_start = ready_.empty() || nodes_in_flight_ >= concurrency_;
  const bool inline_call = !timeout && calls_in_flight_ == 1 && nothing_else_could_start &&
                           (!node.spec->for_each || node.spec->for_each->concurrency <= 1);
  if (inline_call) {
    {
      std::lock_guard lock(inline_mutex_);
      inline_call_ = call.get();
    }
    invoke();
    {
      std::lock_guard lock(inline_mutex_);
      inline_call_ = nullptr;
    }
    asio::post(io_, [this, call] { invokeDone(call); });
    return;
  }
  if (timeout) {
    call->timer = std::make_unique<asio::steady_timer>(io_, std::chrono::milliseconds(*timeout));
    call->timer->async_wait([call](const boost::system::error_code& ec) {
      if (!ec && !call->cancelled.exchange(true)) {
        call->timed_out = true;
        if (call->node->kind->kind->cancel != nullptr) {
          call->node->kind->kind->cancel(call->instance, call.get());
        }
      }
    });
  }
  asio::post(*pool_, [this, call, invoke = std::move(invoke)] {
    invoke();
    asio::post(io_, [this, call] { invokeDone(call); });
  });
}

void Run::invokeDone(const std::shared_ptr<Call>& call) {
  NodeRuntime& node = *call->node;
  --calls_in_flight_;
  active_calls_.erase(std::find(active_calls_.begin(), active_calls_.end(), call));
  if (call->timer) {
    call->timer->cancel();
  }
  releaseInstance(node, call->instance);
  call->instance = nullptr;

  if (call->timed_out) {
    attemptFailed(call, "Node \"" + node.spec->id + "\" timed out after " +
                            std::to_string(*node.spec->timeout_ms) +
                            " ms (timeout_ms); raise timeout_ms or make the node faster");
    return;
  }
  if (call->status != OE_OK) {
    std::string message = call->error.data;
    if (message.empty()) {
      message = call->status == OE_CANCELLED ? "cancelled"
                                             : "the " + node.spec->kind +
                                                   " plugin failed with status " +
                                                   std::to_string(call->status) + " and no message";
    }
    attemptFailed(call, std::move(message));
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
    Json& metrics = output["metrics"];
    if (!metrics.is_object()) {
      metrics = Json::object();
    }
    const llm::Usage& used = call->llm_usage.usage;
    metrics.emplace("tokens_in", used.input_tokens);
    metrics.emplace("tokens_out", used.output_tokens);
    metrics.emplace("cost_usd", used.cost_usd);
  }
  inItemOrder(*call, [this, call, output = std::move(output)]() mutable {
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

bool Run::applyOutput(Call& call, const Json& output, bool from_cache, std::string* error) {
  NodeRuntime& node = *call.node;
  if (!output.is_object() || !output.contains("state_delta") || !output["state_delta"].is_object()) {
    *error = nodeLabel(node) + " returned no state_delta object; a node must answer "
                               "{\"state_delta\": {...}}";
    return false;
  }
  const Json& delta = output["state_delta"];
  std::vector<std::string> written;
  if (!delta.empty()) {
    auto result = store_.write(delta, state::WriteMeta{log_.runId(), node.spec->id});
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
  if (!from_cache && cache_ != nullptr) {
    // Before node.finished: once the log says a node finished, a resume must find its entry.
    Json stored = Json::object();
    stored["state_delta"] = delta;
    if (output.contains("edge_output")) {
      stored["edge_output"] = output["edge_output"];
    }
    if (output.contains("metrics") && !output["metrics"].is_null()) {
      stored["metrics"] = output["metrics"];
    }
    if (auto put = cache_->put(call.cache_key, node.spec->id, log_.runId(), stored); !put) {
      Json warning = {{"type", "node.log"}, {"node_id", node.spec->id}, {"level", "warn"},
                      {"message", "cache write failed: " + put.error().message}};
      emitLocal(warning);
    }
  }
  const Json* metrics = nullptr;
  auto it = output.find("metrics");
  if (it != output.end() && !it->is_null() && !(it->is_object() && it->empty())) {
    metrics = &*it;
  }
  log_.nodeFinished(node.spec->id, node.spec->phase, metrics);
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
    inItemOrder(*call, [this, call, message = std::move(message)] {
      log_.nodeFailed(call->node->spec->id,
                      message + "; raise runtime.budget (or pass --max-tokens / --max-cost-usd) "
                                "and run `oe resume " + log_.runId() + "`",
                      call->node->spec->phase);
      auto finish = std::move(call->done);
      finish(false, nullptr);
      return true;
    });
    return;
  }
  if (!cancelling_ && policy.policy == spec::ErrorPolicy::kRetry && call->attempt < policy.attempts) {
    // Linear unless exponential is asked for (reference §3.3): base*n or base*2^(n-1).
    const int64_t base = policy.base_ms;
    const int64_t delay = policy.backoff == spec::Backoff::kExponential
                              ? base * (int64_t{1} << std::min(call->attempt - 1, 30))
                              : base * call->attempt;
    Json retry = {{"type", "node.retry"}, {"node_id", node.spec->id}, {"attempt", call->attempt},
                  {"error", message}, {"delay_ms", delay}};
    emitLocal(retry);
    call->cancelled = false;
    call->timer = std::make_unique<asio::steady_timer>(io_, std::chrono::milliseconds(delay));
    ++calls_in_flight_;  // the pending retry counts as work in flight
    waiting_calls_.push_back(call);
    call->timer->async_wait([this, call](const boost::system::error_code&) {
      --calls_in_flight_;
      waiting_calls_.erase(std::find(waiting_calls_.begin(), waiting_calls_.end(), call));
      if (cancelling_) {
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
  inItemOrder(*call, [this, call, message = std::move(message)] {
    log_.nodeFailed(call->node->spec->id, message, call->node->spec->phase);
    auto finish = std::move(call->done);
    finish(false, nullptr);
    return true;
  });
}

void Run::stopForBudget() {
  if (cancelling_) {
    return;
  }
  cancelling_ = true;
  summary_.stop_reason = "budget_exhausted";
  ready_.clear();
  for (const auto& call : waiting_calls_) {
    call->timer->cancel();  // a retry would only meet the same budget
  }
  asio::post(io_, [this] { pump(); });
}

void Run::cancelAll(std::string reason) {
  if (cancelling_) {
    return;
  }
  cancelling_ = true;
  summary_.stop_reason = std::move(reason);
  ready_.clear();
  for (const auto& call : active_calls_) {
    if (!call->cancelled.exchange(true) && call->instance != nullptr &&
        call->node->kind->kind->cancel != nullptr) {
      call->node->kind->kind->cancel(call->instance, call.get());
    }
    if (call->timer) {
      call->timer->cancel();
    }
  }
  for (const auto& call : waiting_calls_) {
    call->timer->cancel();
  }
  asio::post(io_, [this] { pump(); });
}

}  // namespace

Json definitionPin(const spec::Experience& experience) {
  FileTable table(experience.dir);
  return buildPin(experience, [&](size_t i) {
    return table.filesOf(table.idsOf(experience.nodes[i]));
  });
}

Json diffPins(const Json& before, const Json& after) {
  Json changed = Json::array();
  Json added = Json::array();
  Json removed = Json::array();
  const Json& old_nodes = before.value("nodes", Json::object());
  const Json& new_nodes = after.value("nodes", Json::object());
  for (const auto& id : after.value("order", Json::array())) {
    auto it = old_nodes.find(id.get<std::string>());
    if (it == old_nodes.end()) {
      added.push_back(id);
    } else if (*it != new_nodes.value(id.get<std::string>(), Json())) {
      changed.push_back(id);
    }
  }
  for (const auto& id : before.value("order", Json::array())) {
    if (!new_nodes.contains(id.get<std::string>())) {
      removed.push_back(id);
    }
  }
  return Json{{"changed", changed}, {"added", added}, {"removed", removed}};
}

Result<RunSummary> runExperience(const spec::Experience& experience,
                                 const plugins::PluginRegistry& plugins, const RunOptions& options) {
  const auto workspace = workspaceDir(experience);
  std::error_code ec;
  std::filesystem::create_directories(workspace / "runs", ec);
  if (ec) {
    return makeError("cannot create " + (workspace / "runs").string() + ": " + ec.message());
  }
  const std::filesystem::path db_path = options.state_db ? *options.state_db : statePath(experience);
  auto store = state::StateStore::open(db_path, experience.state);
  if (!store) {
    return store.error();
  }
  std::unique_ptr<cache::CacheStore> cache;
  if (options.use_cache) {
    auto opened = cache::CacheStore::open(workspace / "cache");
    if (!opened) {
      return opened.error();
    }
    cache = std::move(opened).value();
  }
  const std::string run_id = options.run_id.empty() ? events::newRunId() : options.run_id;
  const auto log_path = workspace / "runs" / (run_id + ".jsonl");
  auto log = events::EventLog::open(log_path, run_id);
  if (!log) {
    return log.error();
  }
  if (options.on_event) {
    (*log)->subscribe(options.on_event);
  }
  llm::Settings llm_settings = options.llm;
  if (auto applied = llm::applyRuntime(experience.raw.value("runtime", Json()), llm_settings);
      !applied) {
    return applied.error();
  }
  if (options.budget_override.max_tokens) {
    llm_settings.budget.max_tokens = options.budget_override.max_tokens;
  }
  if (options.budget_override.max_cost_usd) {
    llm_settings.budget.max_cost_usd = options.budget_override.max_cost_usd;
  }
  auto llm_service = llm::LlmService::create(std::move(llm_settings), plugins, options.prior_usage);
  if (!llm_service) {
    return llm_service.error();
  }
  Run run(experience, options, **store, **log, cache.get(), llm_service->get());
  if (auto prepared = run.prepare(plugins); !prepared) {
    return prepared.error();
  }
  {
    // Pinned before run.started: a resume can always say what changed since this run.
    std::ofstream pin(workspace / "runs" / (run_id + ".pin.json"), std::ios::trunc);
    pin << run.pin().dump() << '\n';
  }
  Json extra = {{"experience", experience.file.string()}};
  if (!options.resumed_from.empty()) {
    extra["resumed_from"] = options.resumed_from;
  }
  if (options.prior_usage.calls > 0) {
    extra["usage_before"] = options.prior_usage.toJson();  // oe resume sums the chain from it
  }
  (*log)->runStarted(options.args.is_object() ? options.args : Json::object(), extra);
  RunSummary summary = run.execute();
  run.destroyInstances();
  summary.event_log = log_path;
  return summary;
}

}  // namespace oe::run

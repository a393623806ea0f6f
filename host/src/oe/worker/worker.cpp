// `oe worker` (worker.hpp): the claim loop, the heartbeat, and the plugin call of one attempt
// with the host services a worker can give it.
#include "oe/worker/worker.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <algorithm>
#include <iostream>
#include <optional>
#include <random>
#include <thread>

#include "oe/expr/interpolate.hpp"
#include "oe/llm/settings.hpp"
#include "oe/pg/schema.hpp"
#include "oe/plugins/crash_guard.hpp"
#include "oe/plugins/event_budget.hpp"
#include "oe/run/node_executor.hpp"
#include "oe/secrets/resolve.hpp"
#include "oe/spec/loader.hpp"

namespace oe::worker {

namespace {

std::string defaultId() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) {
    host[0] = '\0';
  }
  std::random_device random;
  char suffix[9];
  std::snprintf(suffix, sizeof(suffix), "%08x", random());
  return std::string(host) + ":" + std::to_string(getpid()) + ":" + suffix;
}

}  // namespace

// The host context of one attempt on a worker: the request's frozen inputs stand in for the
// run's state, events are buffered and committed with the completion, and the LLM service is
// the run's, built on this worker from its experience's runtime block.
class WorkerCall final : public oe_host_ctx {
 public:
  WorkerCall(Worker& worker, const queue::Claimed& attempt, Json request, std::string dir,
             std::string plugin_id, const secrets::SecretSet* secrets)
      : worker_(worker),
        attempt_(attempt),
        request_(std::move(request)),
        dir_(std::move(dir)),
        plugin_id_(std::move(plugin_id)),
        secrets_(secrets) {
    for (const Json& field : request_["node"].value("reads", Json::array())) {
      if (field.is_string()) {
        reads_.push_back(field.get<std::string>());
      }
    }
    for (const char* part : {"state_view", "edge_inputs", "args"}) {
      if (!request_[part].is_object()) {
        request_[part] = Json::object();
      }
    }
  }

  ~WorkerCall() override { closeHandle(); }
  WorkerCall(const WorkerCall&) = delete;
  WorkerCall& operator=(const WorkerCall&) = delete;

  // Runs invoke unless the attempt was given up before it started.
  oe_status invoke(const plugins::LoadedKind& kind, oe_node* instance, oe_writer& response,
                   oe_writer& error) {
    {
      std::lock_guard lock(phase_mutex_);
      if (cancelled_.load()) {
        return OE_CANCELLED;
      }
      kind_ = &kind;
      instance_ = instance;
      invoking_ = true;
    }
    const oe_invocation inv{sizeof(oe_invocation),
                            static_cast<uint32_t>(attempt_.attempt),
                            oe_str{attempt_.request.data(), attempt_.request.size()},
                            handle(),
                            &response,
                            &error};
    const oe_status status = kind.kind->invoke(instance, &inv);
    giveBackTickets();
    std::lock_guard lock(phase_mutex_);
    invoking_ = false;
    return status;
  }

  // The coordinator gave the attempt up, or the lease was lost: the plugin is asked to stop.
  void cancel() {
    if (cancelled_.exchange(true)) {
      return;
    }
    std::lock_guard lock(phase_mutex_);
    if (invoking_ && kind_->kind->cancel != nullptr) {
      kind_->kind->cancel(instance_, handle());
    }
  }

  std::vector<std::string> takeEvents() { return std::move(events_); }

  void log(oe_log_level level, std::string_view message) override {
    worker_.log(level, "node " + attempt_.node_id + " (run " + attempt_.run_id + ")",
                secrets_ != nullptr ? secrets_->redacted(message) : std::string(message));
  }

  oe_status emitEvent(std::string_view type, std::string_view fields_json) override {
    if (!run::engine::pluginEventTypeAllowed(type, plugin_id_)) {
      log(OE_LOG_WARN,
          "emit_event refused type \"" + std::string(type) +
              "\": a plugin emits node.activity, node.tokens, policy.denied or its own \"" +
              (plugin_id_.empty() ? "<plugin-id>" : plugin_id_) + ".<name>\"");
      return OE_INVALID_ARGUMENT;
    }
    Json fields = Json::parse(fields_json, nullptr, false);
    if (!fields.is_object()) {
      return OE_INVALID_ARGUMENT;
    }
    for (const char* reserved : {"type", "run_id", "node_id", "ts"}) {
      if (fields.contains(reserved)) {
        return OE_INVALID_ARGUMENT;
      }
    }
    fields["type"] = type;
    fields["run_id"] = attempt_.run_id;
    fields["node_id"] = attempt_.node_id;
    fields["worker"] = worker_.id();
    std::string line = fields.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (secrets_ != nullptr) {
      secrets_->redact(line);  // the events go to the queue row, then to the run's log
    }
    std::lock_guard lock(events_mutex_);
    events_.push_back(std::move(line));
    return OE_OK;
  }

  oe_status stateGet(std::string_view field, std::string& out_json) override {
    if (std::find(reads_.begin(), reads_.end(), field) == reads_.end()) {
      return OE_PERMISSION_DENIED;
    }
    const Json& view = request_["state_view"];
    auto it = view.find(std::string(field));
    out_json = it == view.end() ? "null" : it->dump();
    return OE_OK;
  }

  [[nodiscard]] bool isCancelled() const override { return cancelled_.load(); }
  // Its events are held in memory until the attempt completes: the same caps as in a run.
  plugins::EventBudget* eventBudget() override { return &budget_; }

  oe_status llmComplete(std::string_view request_json, std::string& out) override {
    llm::LlmService* llm = service(out);
    if (llm == nullptr) {
      return OE_FAILED_PRECONDITION;
    }
    llm::Answer answer = llm->complete(site(), request_json);
    out = std::move(answer.body);
    return answer.status;
  }

  oe_status acquireLimit(std::string_view name, oe_host_buf* /*out_slot*/) override {
    std::string error;
    llm::LlmService* llm = service(error);
    if (llm == nullptr) {
      return OE_OK;  // no LLM service: no runtime.limits to hold
    }
    auto ticket = llm->waitForRoom(llm::Site{this, attempt_.node_id, nullptr}, name, "", 0);
    if (!ticket) {
      return OE_CANCELLED;
    }
    if (!ticket->buckets.empty()) {
      // Held until invoke returns (the plugin's release of the empty slot is a no-op): this
      // worker's share of runtime.limits; across workers the limits are pgflow's counters.
      std::lock_guard lock(events_mutex_);
      tickets_.push_back(std::move(*ticket));
    }
    return OE_OK;
  }

  oe_status cliReplayBegin(std::string_view request_json, std::string& out) override {
    std::string error;
    llm::LlmService* llm = service(error);
    if (llm == nullptr) {
      out.clear();  // run it live
      return OE_OK;
    }
    llm::Answer answer = llm->beginCli(site(), request_json);
    out = std::move(answer.body);
    return answer.status;
  }

  oe_status cliReplayFinish(std::string_view request_json, std::string_view outcome_json,
                            std::string& out_error) override {
    std::string error;
    llm::LlmService* llm = service(error);
    if (llm == nullptr) {
      return OE_OK;
    }
    llm::Answer answer = llm->finishCli(site(), request_json, outcome_json);
    if (answer.status != OE_OK) {
      out_error = std::move(answer.body);
    }
    return answer.status;
  }

  oe_status renderPrompt(std::string_view template_text, std::string& out) override {
    // As the run does (call_host.cpp): a prompt template's `${secret:NAME}` gets its value.
    std::string with_values;
    if (secrets_ != nullptr && template_text.find("${secret:") != std::string_view::npos) {
      with_values = secrets_->substitute(template_text, /*json_string=*/false);
      template_text = with_values;
    }
    auto rendered = expr::interpolate(template_text, promptValues(), /*strict=*/false);
    if (!rendered) {
      return OE_INTERNAL;  // non-strict interpolation has no failure
    }
    out = std::move(rendered).value();
    return OE_OK;
  }

  oe_status promptValues(uint32_t indent, std::string& out) override {
    out = run::engine::promptValuesJson(reads_, request_["state_view"], request_["edge_inputs"],
                                        request_["args"], static_cast<int>(indent));
    return OE_OK;
  }

  oe_status runSubExperience(std::string_view /*request_json*/, std::string& out) override {
    out = "node \"" + attempt_.node_id +
          "\": a nested run (oe.subrun/1-draft) cannot start on `oe worker`; nodes of kind "
          "experience run on the coordinator (docs/scale-out.md)";
    return OE_FAILED_PRECONDITION;
  }

 private:
  Json promptValues() const {
    return run::engine::promptValueMap(request_.at("state_view"), request_.at("edge_inputs"),
                                       request_.at("args"));
  }
  llm::Site site() { return llm::Site{this, attempt_.node_id, &usage_}; }

 public:
  // What the attempt's LLM calls used (read once invoke has returned).
  [[nodiscard]] const llm::Usage& llmUsage() const { return usage_.usage; }

 private:
  llm::LlmService* service(std::string& error) {
    return worker_.llmFor(attempt_.run_id, dir_, error);
  }
  void giveBackTickets() {
    std::vector<llm::RateLimiter::Ticket> tickets;
    {
      std::lock_guard lock(events_mutex_);
      tickets.swap(tickets_);
    }
    std::string error;
    for (const auto& ticket : tickets) {
      if (llm::LlmService* llm = service(error)) {
        llm->giveBack(ticket, 0);
      }
    }
  }

  Worker& worker_;
  const queue::Claimed& attempt_;
  Json request_;
  std::string dir_;
  std::string plugin_id_;
  const secrets::SecretSet* secrets_;  // the folder's; null without any
  std::vector<std::string> reads_;
  std::atomic<bool> cancelled_{false};
  std::mutex phase_mutex_;
  bool invoking_ = false;
  const plugins::LoadedKind* kind_ = nullptr;
  oe_node* instance_ = nullptr;
  std::mutex events_mutex_;
  std::vector<std::string> events_;
  plugins::EventBudget budget_;
  std::vector<llm::RateLimiter::Ticket> tickets_;
  llm::CallUsage usage_;
};

Result<std::unique_ptr<Worker>> Worker::start(WorkerOptions options) {
  if (options.id.empty()) {
    options.id = defaultId();
  }
  options.concurrency = std::max(1, options.concurrency);
  auto patience = std::make_shared<pg::Patience>(
      [log = options.log](const std::string& message) {
        if (log != nullptr) {
          log->write(OE_LOG_WARN, "worker", message);
        } else {
          std::cerr << "oe worker: " << message << '\n';
        }
      },
      options.report_every);
  std::unique_ptr<pg::Connection> conns[3];
  for (auto& conn : conns) {
    auto opened = pg::Connection::open(options.url, connectOptions(options, patience));
    if (!opened) {
      return opened.error();
    }
    conn = std::move(opened).value();
  }
  // The schema, the registration and the LISTENs, each of them safe to do again. A server that
  // restarts meanwhile (a host coming up, a failover) closes the connection under them: the
  // worker connects again and starts over, for as long as it waits for a first connection,
  // rather than exit and leave the coordinators without it (docs/testing.md, "Found so far" 6).
  const auto deadline = std::chrono::steady_clock::now() + conns[0]->options().retry_for;
  while (true) {
    auto set_up = setUp(options, *conns[0], *conns[1]);
    if (set_up) {
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    const bool lost = std::any_of(std::begin(conns), std::end(conns),
                                  [](const auto& conn) { return !conn->healthy(); });
    if (!lost || now >= deadline) {
      return set_up.error();
    }
    for (auto& conn : conns) {
      if (!conn->healthy()) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
        if (auto again = conn->reconnect(left); !again) {
          return makeError(set_up.error().message + "; then: " + again.error().message);
        }
      }
    }
  }
  return std::unique_ptr<Worker>(new Worker(std::move(options), std::move(patience),
                                            std::move(conns[0]), std::move(conns[1]),
                                            std::move(conns[2])));
}

Result<void> Worker::setUp(const WorkerOptions& options, pg::Connection& claim_conn,
                           pg::Connection& beat_conn) {
  if (auto migrated = pg::migrate(claim_conn); !migrated) {
    return migrated.error();
  }
  queue::AttemptQueue queue(claim_conn);
  char host[256] = {};
  (void)gethostname(host, sizeof(host) - 1);
  if (auto registered = queue.registerWorker(options.id, host, static_cast<int>(getpid()),
                                             options.queues, options.concurrency);
      !registered) {
    return registered.error();
  }
  if (options.listen) {
    // Coordinators NOTIFY oe_attempts when they queue attempts (the claim connection wakes)
    // and oe_cancels when they give one up (the heartbeat wakes and stops it at once).
    if (auto listening = claim_conn.listen("oe_attempts"); !listening) {
      return listening.error();
    }
    if (auto listening = beat_conn.listen("oe_cancels"); !listening) {
      return listening.error();
    }
  }
  return {};
}

pg::ConnectOptions Worker::connectOptions(const WorkerOptions& options,
                                          std::shared_ptr<pg::Patience> patience) {
  // The first connection: tried for a while (a wrong URL is said); a lost one later is tried
  // again by the loops themselves, once at a time, so that a stop is never held up.
  pg::ConnectOptions connect = pg::retrying(
      std::max(options.lease, std::chrono::milliseconds(30'000)), "oe worker " + options.id);
  connect.reconnect_for = std::chrono::milliseconds(0);
  connect.patience = std::move(patience);
  connect.reply_timeout = pg::kReplyTimeout;
  return connect;
}

Worker::Worker(WorkerOptions options, std::shared_ptr<pg::Patience> patience,
               std::unique_ptr<pg::Connection> claim_conn,
               std::unique_ptr<pg::Connection> beat_conn, std::unique_ptr<pg::Connection> done_conn)
    : options_(std::move(options)),
      patience_(std::move(patience)),
      beat_wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      claim_wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      claim_conn_(std::move(claim_conn)),
      beat_conn_(std::move(beat_conn)) {
  done_conns_.push_back(std::move(done_conn));
}

Worker::~Worker() {
  {
    std::lock_guard lock(llm_mutex_);
    llm_by_run_.clear();  // before the registries whose plugins they may use
  }
  ::close(beat_wake_);
  ::close(claim_wake_);
}

void Worker::stop() {
  // Under the lock: a waiter between its check and its wait does not miss the wake-up, and
  // run() cannot return (and its caller destroy this) while the signal thread is still in
  // notify_all.
  std::lock_guard lock(mutex_);
  if (!stopping_) {
    stopped_at_ = std::chrono::steady_clock::now();
  }
  stopping_ = true;
  const uint64_t one = 1;
  (void)::write(claim_wake_, &one, sizeof one);  // stays readable: the claim loop is over
  (void)::write(beat_wake_, &one, sizeof one);
  changed_.notify_all();
}

void Worker::wakeHeartbeat() {
  const uint64_t one = 1;
  (void)::write(beat_wake_, &one, sizeof one);
}

bool Worker::reconnect(pg::Connection& conn, std::chrono::steady_clock::time_point& down_since) {
  const auto now = std::chrono::steady_clock::now();
  if (down_since == std::chrono::steady_clock::time_point{}) {
    down_since = now;
  }
  if (auto back = conn.reconnect(std::chrono::milliseconds(0)); !back) {
    patience_->outage(std::chrono::duration_cast<std::chrono::milliseconds>(now - down_since),
                      "oe worker " + options_.id, back.error().message);
    return false;
  }
  down_since = {};
  return true;
}

void Worker::log(oe_log_level level, std::string_view source, std::string_view message) {
  if (options_.log != nullptr) {
    options_.log->write(level, source, message);
    return;
  }
  std::cerr << "oe worker: " << source << ": " << message << '\n';
}

Worker::Folder& Worker::folderFor(const std::string& dir) {
  std::lock_guard lock(folders_mutex_);
  auto& folder = folders_[dir];
  if (!folder) {
    folder = std::make_unique<Folder>();
    folder->registry = std::make_unique<plugins::PluginRegistry>(
        options_.log, plugins::Access::kExecute, options_.trust);
    auto loaded = spec::loadExperience(spec::resolveExperiencePath(dir));
    if (loaded.experience) {  // where its plugins run, as `oe run` reads it (docs/trust.md)
      folder->registry->setExperienceIsolation({loaded.experience->plugin_isolation.all,
                                                loaded.experience->plugin_isolation.by_id});
    }
    folder->registry->loadFrom(plugins::PluginRegistry::searchPath(dir));
    if (!loaded.experience) {
      folder->error = "the experience folder " + dir +
                      " is not readable on this worker (it must exist at the same path on every "
                      "worker's machine)";
    } else {
      folder->runtime = loaded.experience->raw.value("runtime", Json());
      // The secrets are read here, from this worker's environment and files, never from the
      // queue: its rows hold `${secret:NAME}` only (docs/policy.md, "Secrets").
      secrets::Resolved resolved =
          secrets::resolve(loaded.experience->secrets, loaded.experience->dir);
      for (const secrets::Problem& problem : resolved.problems) {
        if (folder->error.empty()) {
          folder->error = "worker " + options_.id + ": " + problem.message +
                          " (in the environment of `oe worker` on its machine)";
        }
      }
      secrets::addProviderKeys(resolved.set);
      if (!resolved.set.empty()) {
        folder->secrets = std::make_shared<const secrets::SecretSet>(std::move(resolved.set));
      }
      // The same kinds and providers as the coordinator's (its plugins.override).
      folder->registry->setOverrides(loaded.experience->plugin_overrides);
    }
    for (const auto& refusal : folder->registry->refusals()) {
      if (refusal.untrusted && folder->error.empty()) {
        folder->error = "worker " + options_.id + " refused plugin " + refusal.reason +
                        " (on this worker's machine, as its user)";
      }
    }
  }
  return *folder;
}

std::string Worker::chainOf(const std::string& run_id) const {
  // The coordinator recorded the run (oe_runs) before it queued any attempt; a run not found
  // there (a store that lost it) counts on its own.
  auto conn = pg::Connection::open(
      options_.url, {.retry_for = std::chrono::seconds(10), .application_name = "oe worker"});
  if (conn) {
    auto rows = (*conn)->exec("SELECT chain_id FROM oe_runs WHERE run_id = $1", {run_id});
    if (rows && !rows->empty()) {
      return std::string(rows->text(0, 0));
    }
  }
  return run_id;
}

llm::LlmService* Worker::llmFor(const std::string& run_id, const std::string& experience_dir,
                                std::string& error) {
  Folder& folder = folderFor(experience_dir);
  std::lock_guard lock(llm_mutex_);
  auto& service = llm_by_run_[run_id];
  if (!service) {
    llm::Settings settings;
    settings.env = llm::Environment::fromProcess();
    if (auto applied = llm::applyRuntime(folder.runtime, settings); !applied) {
      error = applied.error().message;
      llm_by_run_.erase(run_id);
      return nullptr;
    }
    // runtime.limits and runtime.budget are counted in the database, over the run's chain,
    // with every other worker and the coordinator serving it (docs/llm.md).
    settings.shared_store_url = options_.url;
    settings.shared_scope = chainOf(run_id);
    auto created = llm::LlmService::create(std::move(settings), *folder.registry, {});
    if (!created) {
      error = created.error().message;
      llm_by_run_.erase(run_id);
      return nullptr;
    }
    service = std::move(created).value();
    service->setSecrets(folder.secrets);
  }
  return service.get();
}

void Worker::execute(const queue::Claimed& attempt) {
  queue::Completion completion;
  completion.id = attempt.id;
  completion.fence = attempt.fence;
  auto fail = [&](std::string message) {
    completion.ok = false;
    completion.result_status = OE_FAILED_PRECONDITION;
    completion.error = std::move(message);
    finish(attempt, std::move(completion));
  };
  const Json config = Json::parse(attempt.config, nullptr, false);
  Json request = Json::parse(attempt.request, nullptr, false);
  if (!config.is_object() || !request.is_object() ||
      !config.value("experience_dir", Json()).is_string()) {
    fail("attempt " + std::to_string(attempt.id) + " of node \"" + attempt.node_id +
         "\" has no readable config or request in the queue");
    return;
  }
  const std::string dir = config["experience_dir"].get<std::string>();
  Folder& folder = folderFor(dir);
  if (!folder.error.empty()) {
    fail(folder.error);
    return;
  }
  const plugins::LoadedKind* kind = folder.registry->find(attempt.kind);
  if (kind == nullptr) {
    fail("node \"" + attempt.node_id + "\": no plugin provides kind \"" + attempt.kind +
         "\" on worker " + options_.id + " (for " + dir + "); install it there as for `oe run`");
    return;
  }
  const secrets::SecretSet* secrets = folder.secrets.get();
  // The queue row holds `${secret:NAME}`; the plugin gets the values (in the node's definition,
  // and in the args its own `args:` wrote), in memory only.
  queue::Claimed with_values;
  const queue::Claimed* handed = &attempt;
  if (secrets != nullptr && (attempt.request.find("${secret:") != std::string::npos ||
                             attempt.config.find("${secret:") != std::string::npos)) {
    with_values = attempt;
    // The call's prompt services see the same args (a run's call keeps them as
    // args_with_secrets); the state view and the edge inputs stay as they came.
    if (request.contains("node") && request.contains("args")) {
      secrets->substituteWritten(request["node"].value("args", Json()), request["args"]);
    }
    request["node"] = secrets->substitute(request["node"]);
    with_values.request = request.dump(-1, ' ', false, Json::error_handler_t::replace);
    with_values.config = secrets->substitute(attempt.config, /*json_string=*/true);
    handed = &with_values;
  }
  WorkerCall call(*this, *handed, std::move(request), dir,
                  kind->library ? kind->library->id() : std::string(), secrets);
  oe_writer create_error;
  oe_node* instance = nullptr;
  // A crash is reported on the worker's stderr (its run's log is the coordinator's); the lease
  // then runs out and the attempt is rescued (docs/scale-out.md).
  std::optional<plugins::CrashScope> crash_scope;
  crash_scope.emplace("create", plugins::pluginIdOf(*kind), attempt.kind, attempt.node_id,
                      attempt.call_key, attempt.run_id, -1);
  const oe_status created =
      kind->kind->create(kind->library ? kind->library->self() : nullptr,
                         kind->descriptor != nullptr ? kind->descriptor : kind->kind,
                         oe_str{handed->config.data(), handed->config.size()}, call.handle(),
                         &instance, &create_error);
  if (created != OE_OK || instance == nullptr) {
    fail(create_error.data.empty()
             ? "the " + attempt.kind + " plugin could not create the node (status " +
                   std::to_string(created) + ")"
             : (secrets != nullptr ? secrets->redacted(create_error.data) : create_error.data));
    return;
  }
  {
    std::lock_guard lock(mutex_);
    if (held_.count(attempt.id) == 0) {
      call.cancel();  // lost before it started
    }
    running_[attempt.id] = &call;
  }
  oe_writer response;
  oe_writer error;
  crash_scope.reset();
  crash_scope.emplace("invoke", plugins::pluginIdOf(*kind), attempt.kind, attempt.node_id,
                      attempt.call_key, attempt.run_id, -1);
  const oe_status status = call.invoke(*kind, instance, response, error);
  crash_scope.reset();
  {
    std::lock_guard lock(mutex_);
    running_.erase(attempt.id);
  }
  kind->kind->destroy(instance);
  if (secrets != nullptr) {
    // What the plugin answered goes to the queue row, the cache entry and the run's state.
    secrets->redact(response.data);
    secrets->redact(error.data);
  }
  completion.ok = status == OE_OK;
  completion.result_status = status;
  completion.response = std::move(response.data);
  const llm::Usage& used = call.llmUsage();
  if (used.calls > 0) {
    // Reported back: the coordinator counts it in the run's usage and the node's metrics.
    completion.llm_usage = used.toJson().dump();
  }
  if (!completion.ok) {
    completion.error = run::engine::invocationError(status, error.data, attempt.kind);
  } else if (!attempt.cache_key.empty()) {
    // The node's cache entry, in the completion's transaction (the coordinator's store keeps its
    // own too): what the coordinator would store, when the output can be one, LLM metrics
    // included as the coordinator adds them.
    Json output = Json::parse(completion.response, nullptr, false);
    if (output.is_object() && output.contains("state_delta") && output["state_delta"].is_object()) {
      if (used.calls > 0) {
        run::engine::addLlmMetrics(output, used);
      }
      Json stored = {{"state_delta", output["state_delta"]}};
      for (const char* part : {"edge_output", "metrics"}) {
        if (output.contains(part) && !output[part].is_null()) {
          stored[part] = output[part];
        }
      }
      completion.cache = queue::CacheEntry{attempt.cache_key, stored.dump()};
    }
  }
  completion.events = call.takeEvents();
  finish(attempt, std::move(completion));
}

Result<bool> Worker::complete(pg::Connection& conn, const queue::Completion& completion) {
  // Had a first try committed (its answer lost), a second finds the attempt done and is
  // refused as stale, which drops nothing.
  auto backoff = std::chrono::milliseconds(50);
  std::chrono::steady_clock::time_point down_since{};
  for (;;) {
    if (conn.healthy() || reconnect(conn, down_since)) {
      auto accepted = queue::AttemptQueue(conn).complete(options_.id, completion);
      if (accepted || conn.lastFailure() != pg::Failure::kConnection) {
        return accepted;
      }
    }
    std::unique_lock lock(mutex_);
    if (stopping_ && std::chrono::steady_clock::now() > stopped_at_ + options_.lease) {
      return makeError(
          "the database stayed out of reach after the worker was asked to stop; the result of "
          "attempt " +
          std::to_string(completion.id) +
          " is dropped (its lease expires and the attempt runs again elsewhere)");
    }
    changed_.wait_for(lock, backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
  }
}

void Worker::finish(const queue::Claimed& attempt, queue::Completion completion) {
  std::unique_ptr<pg::Connection> conn;
  {
    std::lock_guard lock(done_mutex_);
    if (!done_conns_.empty()) {
      conn = std::move(done_conns_.back());
      done_conns_.pop_back();
    }
  }
  Result<bool> accepted = false;
  if (!conn) {
    auto opened = pg::Connection::open(options_.url, connectOptions(options_, patience_));
    if (opened) {
      conn = std::move(opened).value();
    } else {
      accepted = opened.error();
    }
  }
  if (conn) {
    accepted = complete(*conn, completion);
    std::lock_guard lock(done_mutex_);
    done_conns_.push_back(std::move(conn));
  }
  bool last = false;
  {
    std::lock_guard lock(mutex_);
    held_.erase(attempt.id);
    --in_flight_;
    last = stopping_ && in_flight_ == 0;
  }
  changed_.notify_all();
  if (last) {
    wakeHeartbeat();
  }
  if (!accepted) {
    log(OE_LOG_ERROR, "worker", accepted.error().message);
    return;
  }
  if (*accepted) {
    ++completed_;
  } else {
    ++refused_;
    log(OE_LOG_WARN, "worker",
        "dropped the result of attempt " + std::to_string(attempt.id) + " (node \"" +
            attempt.node_id +
            "\"): the attempt is no longer this worker's (its lease expired "
            "and it was handed on, or the coordinator cancelled it)");
  }
}

void Worker::heartbeatLoop() {
  using Clock = std::chrono::steady_clock;
  queue::AttemptQueue queue(*beat_conn_);
  const auto every = std::max(options_.lease / 3, std::chrono::milliseconds(1));
  auto next_beat = Clock::now() + every;
  Clock::time_point down_since{};
  auto done = [this] {
    std::lock_guard lock(mutex_);
    return stopping_ && in_flight_ == 0;
  };
  while (!done()) {
    // Until the next beat, unless a coordinator cancels an attempt (NOTIFY oe_cancels: the
    // renew below finds which, and the plugin call stops now) or the worker is done.
    bool cancelled = false;
    if (const auto now = Clock::now(); now < next_beat) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(next_beat - now);
      if (options_.listen && beat_conn_->healthy()) {
        cancelled = beat_conn_->waitForNotify(left, beat_wake_);
      } else {
        pollfd fd{beat_wake_, POLLIN, 0};
        (void)::poll(&fd, 1, static_cast<int>(left.count()));
      }
      uint64_t drained = 0;
      while (::read(beat_wake_, &drained, sizeof drained) > 0) {
      }
      if (!cancelled && Clock::now() < next_beat) {
        continue;
      }
    }
    next_beat = Clock::now() + every;
    if (!beat_conn_->healthy() && !reconnect(*beat_conn_, down_since)) {
      continue;  // the next beat tries again; the leases run out meanwhile
    }
    std::vector<queue::Held> held;
    {
      std::lock_guard lock(mutex_);
      for (const auto& [id, fence] : held_) {
        held.push_back({id, fence});
      }
    }
    auto lost = queue.renew(options_.id, held, options_.lease);
    if (!lost) {
      if (beat_conn_->lastFailure() == pg::Failure::kConnection) {
        (void)reconnect(*beat_conn_, down_since);
        next_beat = Clock::now();  // renew at once on the new session
      }
      continue;
    }
    {
      std::lock_guard lock(mutex_);
      for (int64_t id : *lost) {
        held_.erase(id);
        if (auto it = running_.find(id); it != running_.end()) {
          it->second->cancel();
        }
      }
    }
    if (!cancelled) {
      (void)queue.rescueExpired();
      (void)queue.heartbeatWorker(options_.id);
    }
  }
}

Result<void> Worker::run() {
  boost::asio::thread_pool pool(static_cast<size_t>(options_.concurrency));
  std::thread heartbeat([this] { heartbeatLoop(); });
  queue::AttemptQueue queue(*claim_conn_);
  auto wait = options_.poll_min;
  auto backoff = std::chrono::milliseconds(50);
  std::chrono::steady_clock::time_point down_since{};
  Result<void> outcome;
  while (!stopping_) {
    int free = 0;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return stopping_ || in_flight_ < options_.concurrency; });
      free = options_.concurrency - in_flight_;
    }
    if (stopping_) {
      break;
    }
    if (!claim_conn_->healthy()) {
      // The database is away: one try, then a wait that stop() cuts short.
      if (!reconnect(*claim_conn_, down_since)) {
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, backoff, [this] { return stopping_.load(); });
        backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
        continue;
      }
      backoff = std::chrono::milliseconds(50);
    }
    auto claimed = queue.claim(options_.id, options_.queues, free, options_.lease);
    if (!claimed) {
      if (claim_conn_->lastFailure() == pg::Failure::kConnection) {
        if (claim_conn_->healthy()) {
          (void)claim_conn_->reconnect(std::chrono::milliseconds(0));
        }
        continue;
      }
      outcome = claimed.error();
      break;
    }
    if (claimed->empty()) {
      if (options_.listen) {
        (void)claim_conn_->waitForNotify(wait, claim_wake_);
      } else {
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, wait, [this] { return stopping_.load(); });
      }
      wait = std::min(wait * 2, options_.poll_max);
      continue;
    }
    wait = options_.poll_min;
    {
      std::lock_guard lock(mutex_);
      for (const queue::Claimed& attempt : *claimed) {
        held_[attempt.id] = attempt.fence;
        ++in_flight_;
      }
    }
    for (queue::Claimed& attempt : *claimed) {
      boost::asio::post(pool, [this, attempt = std::move(attempt)] { execute(attempt); });
    }
  }
  stop();
  pool.join();  // what it holds finishes and is completed
  changed_.notify_all();
  wakeHeartbeat();
  heartbeat.join();
  if (claim_conn_->healthy()) {
    claim_conn_->setReplyTimeout(std::chrono::seconds(5));
    (void)queue.stopWorker(options_.id);
  }
  return outcome;
}

}  // namespace oe::worker

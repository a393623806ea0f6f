// The run engine's public entry points (run.hpp): runExperience opens what a run needs (state
// store, cache, event log, LLM service), pins the definition and hands over to the coordinator,
// engine::Run (engine.hpp), whose parts live one seam per file in this folder.
#include "oe/run/run.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <atomic>
#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_map>

#include "oe/cache/cache_store.hpp"
#include "oe/events/event_log.hpp"
#include "oe/llm/llm_service.hpp"
#include "oe/pg/connection.hpp"
#include "oe/pgstore/event_sink.hpp"
#include "oe/pgstore/pg_cache.hpp"
#include "oe/pgstore/pg_state_backend.hpp"
#include "oe/pgstore/run_record.hpp"
#include "oe/pgstore/scope.hpp"
#include "oe/run/engine.hpp"
#include "oe/secrets/resolve.hpp"
#include "oe/spec/workspace.hpp"
#include "oe/state/state_store.hpp"
#include "oe/state/store_lock.hpp"

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
    case RunStatus::kWaiting:
      return "waiting";
    default:
      return "failed";
  }
}

spec::KindCatalog kindCatalog(const plugins::PluginRegistry& registry) {
  spec::KindCatalog catalog;
  for (const auto& [name, loaded] : registry.kinds()) {
    spec::KindInfo info{name, std::nullopt};
    // A kind only described (a manifest) has its schema there; a loaded one in its table.
    const char* text = nullptr;
    if (loaded.info != nullptr) {
      text = loaded.info->spec_schema_json ? loaded.info->spec_schema_json->c_str() : nullptr;
    } else if (loaded.kind != nullptr) {
      text = loaded.kind->spec_schema_json;
    }
    if (text != nullptr) {
      Json schema = Json::parse(text, nullptr, false);
      if (!schema.is_discarded()) {
        info.schema = std::move(schema);
      }
    }
    catalog.emplace(name, std::move(info));
  }
  return catalog;
}

void StopHandle::stop(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (reason_) {
    return;
  }
  reason_ = reason;
  if (run_ != nullptr) {
    run_->requestStop(reason);
  }
}

void StopHandle::attach(engine::Run* run) {
  std::lock_guard lock(mutex_);
  run_ = run;
  if (reason_) {
    run_->requestStop(*reason_);
  }
}

void StopHandle::detach() {
  std::lock_guard lock(mutex_);
  run_ = nullptr;
}

std::filesystem::path workspaceDir(const spec::Experience& experience) {
  return spec::workspaceDir(experience.file);
}

std::filesystem::path statePath(const spec::Experience& experience) {
  if (experience.state.store) {
    return experience.dir / *experience.state.store;  // D14
  }
  return workspaceDir(experience) / "state.sqlite";
}

namespace {

// SIGINT and SIGTERM on a run whose state is in PostgreSQL: besides the engine's own handling
// (the run stops), the store's connections stop waiting for a database that went away, so the
// stop is not held up by it (a statement in flight still gets pg::Patience::kStopGrace).
// Asio calls every signal_set registered for a signal, the engine's and this one.
class StoreStopWatch {
 public:
  explicit StoreStopWatch(std::shared_ptr<pg::Patience> patience)
      : signals_(io_, SIGINT, SIGTERM) {
    signals_.async_wait([patience = std::move(patience)](const boost::system::error_code& ec,
                                                         int /*signal*/) {
      if (!ec) {
        patience->interrupt();
      }
    });
    thread_ = std::thread([this] { io_.run(); });
  }
  ~StoreStopWatch() {
    signals_.cancel();
    io_.stop();
    thread_.join();
  }
  StoreStopWatch(const StoreStopWatch&) = delete;
  StoreStopWatch& operator=(const StoreStopWatch&) = delete;

 private:
  boost::asio::io_context io_;
  boost::asio::signal_set signals_;
  std::thread thread_;
};

// The coordinator's view and the store must never disagree: the state this run reports (its
// mirror) is read back from the store at the end. A difference (a write applied twice, or lost)
// fails the run, says which fields differ, and reports what the store holds.
void checkStoredState(pgstore::RunRecord& record, const spec::StateSpec& schema,
                      RunSummary& summary, events::EventLog& log) {
  auto rows = pgstore::loadScopeSnapshot(record.connection(), record.info().scope);
  if (!rows) {
    summary.warnings.push_back("could not read the state back from the store to check it: " +
                               rows.error().message);
    return;
  }
  Json stored = Json::object();
  for (const auto& [field, text] : *rows) {
    if (schema.find(field) != nullptr) {
      stored[field] = Json::parse(text, nullptr, false);
    }
  }
  if (stored == summary.final_state) {
    return;
  }
  std::string fields;
  for (const spec::FieldSpec& field : schema.fields) {
    const bool in_store = stored.contains(field.name);
    const bool in_run = summary.final_state.contains(field.name);
    if (in_store != in_run || (in_store && stored[field.name] != summary.final_state[field.name])) {
      fields += (fields.empty() ? "" : ", ") + field.name;
    }
  }
  const std::string message =
      "the state in the store differs from the state this run computed (fields: " + fields +
      "): a write was applied twice or lost. The store's state is reported; check it with "
      "`oe state --store URL` before resuming";
  (void)log.nodeEvent("run.warning", "", Json{{"message", message}}.dump());
  summary.warnings.push_back(message);
  summary.failures.push_back(NodeFailure{"", message});
  summary.status = RunStatus::kFailed;
  if (summary.stop_reason.empty()) {
    summary.stop_reason = message;
  }
  summary.final_state = std::move(stored);
}

}  // namespace

Result<RunSummary> runExperience(const spec::Experience& experience,
                                 const plugins::PluginRegistry& plugins, const RunOptions& options) {
  const auto workspace = workspaceDir(experience);
  std::error_code ec;
  std::filesystem::create_directories(workspace / "runs", ec);
  if (ec) {
    return makeError("cannot create " + (workspace / "runs").string() + ": " + ec.message());
  }
  // The secrets first (docs/policy.md, "Secrets"): a run that lacks one is refused before
  // anything is recorded, and names the secret, its line and what to set.
  auto secret_set = std::make_shared<secrets::SecretSet>();
  std::string secret_key;
  if (!experience.secrets.empty()) {
    secrets::Resolved resolved = secrets::resolve(experience.secrets, experience.dir);
    if (!resolved.problems.empty()) {
      std::string message;
      for (const secrets::Problem& problem : resolved.problems) {
        message += (message.empty() ? "" : "\n") + experience.file.string() +
                   (problem.line > 0 ? ":" + std::to_string(problem.line) : std::string()) +
                   ": " + problem.message;
      }
      return makeError(message);
    }
    secret_set = std::make_shared<secrets::SecretSet>(std::move(resolved.set));
    auto key = secrets::storeKey(workspace / "cache" / "secrets.key");
    if (!key) {
      return key.error();
    }
    secret_key = std::move(key).value();
  }
  secrets::addProviderKeys(*secret_set);
  if (options.nesting.secrets) {
    secret_set->addMissing(*options.nesting.secrets);
  }
  const std::filesystem::path db_path = options.state_db ? *options.state_db : statePath(experience);
  const std::string run_id = options.run_id.empty() ? events::newRunId() : options.run_id;
  const std::string chain_id = options.chain_id.empty() ? run_id : options.chain_id;
  const bool remote = pg::isUrl(options.store_url);
  const auto retry = pgstore::storeRetry();
  // The store's connections wait for a database that went away for as long as it takes,
  // saying so every 30 s, until the run is stopped (StoreStopWatch below).
  std::shared_ptr<pg::Patience> patience;
  if (remote) {
    patience = std::make_shared<pg::Patience>([&options](const std::string& message) {
      if (options.on_event) {
        options.on_event(events::Event(
            Json{{"type", "node.log"}, {"node_id", ""}, {"level", "warn"}, {"message", message}}));
      } else {
        std::cerr << "oe: " << message << '\n';
      }
    });
  }
  // The PostgreSQL store: its run record holds the scope's lock (one coordinator per scope), as
  // StoreLock holds state.sqlite's, from before anything is written to the end of the run.
  std::unique_ptr<pgstore::RunRecord> record;
  std::optional<state::StoreLock> lock;
  Result<std::unique_ptr<state::StateStore>> store = makeError("not opened");
  if (remote) {
    pgstore::RunInfo info;
    info.run_id = run_id;
    info.scope = pgstore::storeScope(experience.name, experience.file);
    info.experience = experience.file.string();
    info.chain_id = chain_id;
    info.resumed_from = options.resumed_from;
    std::function<void(const std::string&)> on_wait;
    if (options.wait_for_lock) {
      on_wait = options.on_lock_wait ? options.on_lock_wait : [](const std::string&) {};
    }
    auto begun =
        pgstore::RunRecord::begin(options.store_url, std::move(info), retry, on_wait, patience);
    if (!begun) {
      return begun.error();
    }
    record = std::move(begun).value();
    if (options.fresh) {
      if (auto reset = pgstore::resetState(record->connection(), record->info().scope); !reset) {
        return makeError("cannot reset the state (--fresh): " + reset.error().message);
      }
    }
    auto backend = pgstore::PgStateBackend::open(options.store_url, record->info().scope, retry,
                                                 record->fence());
    if (!backend) {
      return backend.error();
    }
    store = state::StateStore::open(std::move(backend).value(), experience.state);
  } else {
    // One writer per store (issue 10): taken before anything is written, so a refused run
    // leaves no log, and held until the summary is built.
    auto acquired = state::StoreLock::acquire(db_path, run_id, /*wait=*/false);
    if (!acquired && options.wait_for_lock) {
      if (options.on_lock_wait) {
        const auto holder = state::StoreLock::holder(db_path);
        options.on_lock_wait(holder ? state::StoreLock::describe(*holder) : "another run");
      }
      acquired = state::StoreLock::acquire(db_path, run_id, /*wait=*/true);
    }
    if (!acquired) {
      return acquired.error();
    }
    lock.emplace(std::move(*acquired));
    if (options.fresh) {
      if (auto removed = state::removeStateFiles(db_path); !removed) {
        return removed.error();
      }
    }
    store = state::StateStore::open(db_path, experience.state);
  }
  if (!store) {
    return store.error();
  }
  if (auto began = (*store)->beginChain(chain_id); !began) {
    return began.error();
  }
  if (!options.changed_nodes.empty() && options.on_changed_nodes) {
    std::vector<ChangedNode> changed;
    std::unordered_map<std::string_view, size_t> index;
    for (const std::string& id : options.changed_nodes) {
      index.emplace(id, changed.size());
      changed.push_back(ChangedNode{id, 0});
    }
    (*store)->forEachLanded([&changed, &index](std::string_view key, std::string_view) {
      if (auto it = index.find(engine::writeKeyNode(key)); it != index.end()) {
        ++changed[it->second].landed;
      }
    });
    options.on_changed_nodes(changed);
  }
  const Nesting& nesting = options.nesting;
  if (nesting.seed_state.is_object() && !nesting.seed_state.empty()) {
    // state_scope shared: the child starts from the parent's values of the fields it declares.
    Json seed = Json::object();
    for (const auto& [field, value] : nesting.seed_state.items()) {
      if (experience.state.find(field) != nullptr) {
        seed[field] = value;
      }
    }
    if (!seed.empty()) {
      if (auto seeded = (*store)->write(seed, state::WriteMeta{run_id, nesting.parent_node_id});
          !seeded) {
        return makeError("the parent's state does not fit the nested experience " +
                         experience.file.string() + ": " + seeded.error().message);
      }
    }
  }
  std::unique_ptr<cache::CacheStore> cache;
  if (options.use_cache && remote) {
    auto pg_cache = pgstore::PgCache::open(options.store_url, retry,
                                           record ? record->fence() : nullptr);
    if (!pg_cache) {
      return pg_cache.error();
    }
    cache = cache::CacheStore::open(std::move(pg_cache).value());
  } else if (options.use_cache) {
    auto opened = cache::CacheStore::open(workspace / "cache");
    if (!opened) {
      return opened.error();
    }
    cache = std::move(opened).value();
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
  if (options.workers && pg::isUrl(options.store_url)) {
    // Its workers call the providers too: runtime.limits and runtime.budget are counted in the
    // database over the chain, by every process serving it (docs/llm.md).
    llm_settings.shared_store_url = options.store_url;
    llm_settings.shared_scope = chain_id;
  }
  std::unique_ptr<llm::LlmService> own_llm;
  llm::LlmService* llm_service = nesting.llm;
  if (llm_service == nullptr) {
    auto created = llm::LlmService::create(std::move(llm_settings), plugins, options.prior_usage);
    if (!created) {
      return created.error();
    }
    own_llm = std::move(created).value();
    llm_service = own_llm.get();
    own_llm->setSecrets(secret_set);
  }
  // The log last: a run refused above (its store locked, its LLM settings unusable) leaves none.
  const auto log_path = workspace / "runs" / (run_id + ".jsonl");
  auto log = events::EventLog::open(log_path, run_id);
  if (!log) {
    return log.error();
  }
  // Every line also goes to oe_events, from a writer thread (no round trip on the engine's).
  std::unique_ptr<pgstore::EventSink> sink;
  if (remote) {
    auto opened = pgstore::EventSink::open(options.store_url, run_id, retry,
                                           record ? record->fence() : nullptr);
    if (!opened) {
      return opened.error();
    }
    sink = std::move(opened).value();
    sink->attach(**log);
  }
  (*log)->setSecrets(secret_set);  // before any listener or line
  if (options.on_event) {
    (*log)->subscribe(options.on_event);
  }
  engine::Run run(experience, options, **store, **log, cache.get(), llm_service);
  run.setSecrets(secret_set, secret_key);
  if (auto prepared = run.prepare(plugins); !prepared) {
    return prepared.error();
  }
  {
    // Pinned before run.started: a resume can always say what changed since this run.
    std::ofstream pin(workspace / "runs" / (run_id + ".pin.json"), std::ios::trunc);
    pin << run.pin().dump() << '\n';
  }
  if (record) {
    // In the database too: a resume on another machine compares against it.
    if (auto pinned = record->setPin(run.pin()); !pinned) {
      return pinned.error();
    }
  }
  Json extra = {{"experience", experience.file.string()}, {"chain_id", chain_id}};
  if (!options.resumed_from.empty()) {
    extra["resumed_from"] = options.resumed_from;
  }
  if (options.prior_usage.calls > 0) {
    extra["usage_before"] = options.prior_usage.toJson();  // oe resume sums the chain from it
  }
  if (nesting.depth > 0) {
    extra["parent_run_id"] = nesting.parent_run_id;
    extra["parent_node_id"] = nesting.parent_node_id;
    extra["depth"] = nesting.depth;
  }
  (*log)->runStarted(options.args.is_object() ? options.args : Json::object(), extra);
  if (nesting.stop) {
    nesting.stop->attach(&run);
  }
  std::atomic<bool> scope_lost{false};
  if (record) {
    // A restarted server ends the session that holds the scope's lock: the guard takes it
    // again, or stops the run when another coordinator got the scope meanwhile (or a write
    // found the scope's epoch moved).
    record->guard(pgstore::kLockCheckInterval, [&run, &scope_lost](std::string why) {
      scope_lost = true;
      run.requestStop(std::move(why));
    });
  }
  std::optional<StoreStopWatch> stop_watch;
  if (patience && nesting.depth == 0) {
    stop_watch.emplace(patience);
  }
  RunSummary summary = run.execute();
  if (run.dataFilesChanged()) {
    // A node wrote files its args name: pinned again as the run left them, so that a resume
    // does not report the node's own writes as a change of its definition.
    std::ofstream pin(workspace / "runs" / (run_id + ".pin.json"), std::ios::trunc);
    const Json repinned = run.repin();
    pin << repinned.dump() << '\n';
    if (record) {
      if (auto pinned = record->setPin(repinned); !pinned) {
        summary.warnings.push_back(pinned.error().message);
      }
    }
  }
  if (record) {
    record->stopGuard();  // before `run` can go
    if (!scope_lost) {
      checkStoredState(*record, experience.state, summary, **log);
    }
  }
  if (nesting.stop) {
    nesting.stop->detach();
  }
  run.destroyInstances();
  summary.event_log = log_path;
  summary.chain_id = chain_id;
  if (sink) {
    if (auto failed = sink->close()) {
      summary.warnings.push_back(*failed);
    }
  }
  if (record) {
    if (auto finished = record->finish(toString(summary.status)); !finished) {
      summary.warnings.push_back(finished.error().message);
    }
    if (record->lostLock()) {
      summary.warnings.push_back(
          "the connection to " + pg::redact(options.store_url) +
          " was replaced during the run (a server restart?), so the lock that keeps a second "
          "coordinator off scope \"" +
          record->info().scope +
          "\" was not held from then on; check `oe runs --store URL` for a run that overlapped");
    }
  }
  return summary;
}

}  // namespace oe::run

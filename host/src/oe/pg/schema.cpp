// The migrations (schema.hpp). A migration that shipped is never edited: a change is a new one.
#include "oe/pg/schema.hpp"

#include <vector>

namespace oe::pg {

namespace {

// Version 1: the tables of docs/scale-out.md. `scope` names one experience's state inside a
// shared database (what the state.sqlite file is on one machine).
constexpr std::string_view kV1 = R"sql(
CREATE TABLE oe_runs (
  run_id text PRIMARY KEY,
  scope text NOT NULL,
  experience text NOT NULL DEFAULT '',
  chain_id text NOT NULL,
  resumed_from text,
  status text NOT NULL DEFAULT 'running',
  coordinator text,
  coordinator_heartbeat timestamptz,
  started_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  pin text
);
CREATE INDEX oe_runs_scope ON oe_runs (scope, started_at);

CREATE TABLE oe_events (
  id bigserial PRIMARY KEY,
  run_id text NOT NULL,
  line text NOT NULL
);
CREATE INDEX oe_events_run ON oe_events (run_id, id);

CREATE TABLE oe_state_snapshot (
  scope text NOT NULL,
  field text NOT NULL,
  value text NOT NULL,
  updated_at text NOT NULL,
  node_id text NOT NULL,
  run_id text NOT NULL,
  PRIMARY KEY (scope, field)
);

CREATE TABLE oe_state_history (
  id bigserial PRIMARY KEY,
  scope text NOT NULL,
  field text NOT NULL,
  value_old text,
  value_new text NOT NULL,
  append_from bigint,
  node_id text NOT NULL,
  run_id text NOT NULL,
  ts text NOT NULL,
  write_id text NOT NULL DEFAULT ''
);
CREATE INDEX oe_state_history_write ON oe_state_history (scope, write_id);
CREATE INDEX oe_state_history_field ON oe_state_history (scope, field, id);
CREATE INDEX oe_state_history_run ON oe_state_history (scope, run_id, id);

CREATE TABLE oe_landed_writes (
  scope text NOT NULL,
  chain_id text NOT NULL,
  write_key text NOT NULL,
  input_key text NOT NULL DEFAULT '',
  run_id text NOT NULL,
  PRIMARY KEY (scope, chain_id, write_key)
);

CREATE TABLE oe_cache (
  key text PRIMARY KEY,
  node_id text NOT NULL,
  run_id text NOT NULL,
  value text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  used_at timestamptz NOT NULL DEFAULT now(),
  last_used_run text
);

CREATE TABLE oe_attempts (
  id bigserial PRIMARY KEY,
  run_id text NOT NULL,
  node_id text NOT NULL,
  call_key text NOT NULL,
  attempt int NOT NULL,
  queue text NOT NULL DEFAULT 'default',
  kind text NOT NULL,
  status text NOT NULL DEFAULT 'ready'
    CHECK (status IN ('ready', 'leased', 'done', 'failed', 'cancelled')),
  fence bigint NOT NULL DEFAULT 0,
  lease_owner text,
  lease_expires_at timestamptz,
  timeout_ms bigint,
  config text NOT NULL,
  request text NOT NULL,
  cache_key text,
  result_status int,
  response text,
  error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  claimed_at timestamptz,
  finished_at timestamptz,
  collected_at timestamptz
);
CREATE INDEX oe_attempts_ready ON oe_attempts (queue, id) WHERE status = 'ready';
CREATE INDEX oe_attempts_finished ON oe_attempts (run_id, id)
  WHERE status IN ('done', 'failed') AND collected_at IS NULL;
CREATE INDEX oe_attempts_leased ON oe_attempts (lease_expires_at) WHERE status = 'leased';
CREATE INDEX oe_attempts_run ON oe_attempts (run_id, status);

CREATE TABLE oe_workers (
  id text PRIMARY KEY,
  host text NOT NULL,
  pid int NOT NULL,
  queues text[] NOT NULL,
  concurrency int NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now(),
  stopped_at timestamptz
);

-- runtime.limits shared by every process of a run (llm/shared_limits.hpp): one row per call per
-- limit it falls under. In flight while `in_flight` and `expires_at` is ahead (the holder renews
-- it; a killed holder's row lapses); kept for a minute after `started_at` for the per-minute
-- windows.
CREATE TABLE oe_limit_slots (
  id bigserial PRIMARY KEY,
  scope text NOT NULL,
  name text NOT NULL,
  holder text NOT NULL,
  tokens bigint NOT NULL DEFAULT 0,
  in_flight boolean NOT NULL DEFAULT true,
  started_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX oe_limit_slots_name ON oe_limit_slots (scope, name);
CREATE INDEX oe_limit_slots_holder ON oe_limit_slots (holder) WHERE in_flight;

-- runtime.budget of a chain of runs: what its calls spent, and (oe_budget_holds) what calls in
-- flight may still spend, each hold renewed by its holder like a slot.
CREATE TABLE oe_budget (
  chain_id text PRIMARY KEY,
  input_tokens bigint NOT NULL DEFAULT 0,
  output_tokens bigint NOT NULL DEFAULT 0,
  cost_usd double precision NOT NULL DEFAULT 0,
  calls bigint NOT NULL DEFAULT 0
);
CREATE TABLE oe_budget_holds (
  id bigserial PRIMARY KEY,
  chain_id text NOT NULL,
  holder text NOT NULL,
  tokens bigint NOT NULL,
  cost_usd double precision NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX oe_budget_holds_chain ON oe_budget_holds (chain_id);
CREATE INDEX oe_budget_holds_holder ON oe_budget_holds (holder);
)sql";

// Version 2: what a worker's attempt hands the coordinator besides its result: what its LLM
// calls used (llm::Usage as JSON), for the run's summary and the node's metrics, and the events
// its plugin emitted (a JSON array), which the coordinator logs as a local attempt's. And the
// coordinator's number for each attempt it adds (submit_seq, unique in its run), so that an
// insert sent again after a lost connection finds the rows it had added instead of doubling them.
constexpr std::string_view kV2 = R"sql(
ALTER TABLE oe_attempts ADD COLUMN llm_usage text;
ALTER TABLE oe_attempts ADD COLUMN events text;
ALTER TABLE oe_attempts ADD COLUMN submit_seq bigint;
CREATE UNIQUE INDEX oe_attempts_submitted ON oe_attempts (run_id, submit_seq);
)sql";

// Version 3: what the database itself enforces so that a statement sent twice (its first try's
// answer lost with the connection, or the first try still running when the retry came) and a
// coordinator that lost its scope cannot write twice or alongside another:
// * oe_state_writes: each state write's identity, claimed by the write's own statement with
//   ON CONFLICT DO NOTHING (a NOT EXISTS test cannot see another session's uncommitted row; a
//   unique key makes the second wait for the first and then do nothing), seeded from the
//   history so that a write of a migrated store is not applied again either;
// * oe_scopes: the scope's epoch, bumped by every coordinator (and oe command) that takes the
//   scope, which each state, mark, cache and event write checks in its own statement; oe_runs
//   keeps the epoch each run took;
// * oe_events.seq: the line's number in its run's log, unique, so a batch sent again adds no
//   line twice;
// * cancelled attempts are collected like finished ones (a cancel whose answer was lost is
//   still handed to the run).
constexpr std::string_view kV3 = R"sql(
CREATE TABLE oe_state_writes (
  scope text NOT NULL,
  write_id text NOT NULL,
  run_id text NOT NULL,
  PRIMARY KEY (scope, write_id)
);
INSERT INTO oe_state_writes (scope, write_id, run_id)
  SELECT DISTINCT ON (scope, write_id) scope, write_id, run_id FROM oe_state_history
  WHERE write_id <> '' ORDER BY scope, write_id, id;
CREATE INDEX oe_state_writes_run ON oe_state_writes (scope, run_id);

CREATE TABLE oe_scopes (
  scope text PRIMARY KEY,
  epoch bigint NOT NULL,
  run_id text,
  taken_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE oe_runs ADD COLUMN epoch bigint;

ALTER TABLE oe_events ADD COLUMN seq bigint;
CREATE UNIQUE INDEX oe_events_seq ON oe_events (run_id, seq);

DROP INDEX oe_attempts_finished;
CREATE INDEX oe_attempts_finished ON oe_attempts (run_id, id)
  WHERE status IN ('done', 'failed', 'cancelled') AND collected_at IS NULL;
)sql";

// Version 4: durable human approvals (docs/policy.md, "Approvals"): the question a parked run
// asks, per chain of runs and node, and the decision, which one conditional UPDATE records.
constexpr std::string_view kV4 = R"sql(
CREATE TABLE oe_approvals (
  chain_id text NOT NULL,
  node_id text NOT NULL,
  run_id text NOT NULL,
  prompt text NOT NULL,
  shown text NOT NULL,
  requested_at text NOT NULL,
  deadline_ms bigint NOT NULL,
  on_timeout text NOT NULL,
  decision text,
  decided_by text,
  decided_at text,
  comment text,
  timed_out boolean,
  PRIMARY KEY (chain_id, node_id)
);
)sql";

// Version 5: triggers (docs/serve.md, "Triggers"): each scheduled time a trigger fired for, whose
// primary key is the claim that keeps two `oe serve` instances from firing it twice, and the
// webhook delivery ids seen (replay protection, pruned after a retention).
constexpr std::string_view kV5 = R"sql(
CREATE TABLE oe_trigger_fires (
  experience text NOT NULL,
  trigger_id text NOT NULL,
  scheduled_ms bigint NOT NULL,
  fired_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (experience, trigger_id, scheduled_ms)
);
CREATE TABLE oe_webhook_deliveries (
  experience text NOT NULL,
  hook text NOT NULL,
  delivery_id text NOT NULL,
  received_ms bigint NOT NULL,
  PRIMARY KEY (experience, hook, delivery_id)
);
CREATE INDEX oe_webhook_deliveries_received ON oe_webhook_deliveries (received_ms);
)sql";

// Version 6: `oe serve`'s run queue (docs/serve.md, "The queue"): the runs asked for through the
// API that have not finished, shared by every `oe serve` of the store. A running row's owner
// renews its lease; another instance takes over the rows whose lease ran out.
constexpr std::string_view kV6 = R"sql(
CREATE TABLE oe_run_queue (
  run_id text PRIMARY KEY,
  experience text NOT NULL,
  folder text NOT NULL,
  kind text NOT NULL,
  resume_of text NOT NULL,
  args text NOT NULL,
  options text NOT NULL,
  priority int NOT NULL,
  enqueued_ms bigint NOT NULL,
  state text NOT NULL,
  started_ms bigint NOT NULL DEFAULT 0,
  pid bigint NOT NULL DEFAULT 0,
  owner text NOT NULL DEFAULT '',
  lease_until_ms bigint NOT NULL DEFAULT 0,
  max_concurrent int NOT NULL DEFAULT 0
);
CREATE INDEX oe_run_queue_order ON oe_run_queue (state, priority DESC, enqueued_ms);
)sql";

// Version 7: a queued run that is cancelled stays in oe_run_queue as state 'cancelled', with when
// (docs/serve.md, "The queue"), so GET /api/runs still shows it; dropped after 7 days.
constexpr std::string_view kV7 = R"sql(
ALTER TABLE oe_run_queue ADD COLUMN cancelled_ms bigint NOT NULL DEFAULT 0;
)sql";

// The advisory lock key of migrations: any 64-bit constant of oe's own.
constexpr int64_t kMigrateLock = 0x6f655f6d69677261;  // "oe_migra"

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> all = {
      {1, "runs, events, state, cache, attempts, workers, limits, budget", kV1},
      {2, "attempts: LLM usage, plugin events, the coordinator's submit number", kV2},
      {3, "write claims, scope epochs, event numbers, cancelled attempts collected", kV3},
      {4, "approvals: the questions of parked runs and their decisions", kV4},
      {5, "triggers: the scheduled times fired and the webhook deliveries seen", kV5},
      {6, "oe serve's run queue", kV6},
      {7, "oe serve's run queue keeps the cancelled runs", kV7},
  };
  return all;
}

int latestVersion() { return migrations().back().version; }

Result<int> currentVersion(Connection& conn) {
  auto exists = conn.exec("SELECT to_regclass('oe_schema_migrations') IS NOT NULL");
  if (!exists) {
    return exists.error();
  }
  if (!exists->boolean(0, 0)) {
    return 0;
  }
  auto version = conn.exec("SELECT coalesce(max(version), 0) FROM oe_schema_migrations");
  if (!version) {
    return version.error();
  }
  return static_cast<int>(version->int64(0, 0));
}

Result<MigrateReport> migrate(Connection& conn, int target) {
  // Session-level: held across the per-migration transactions, released below.
  if (auto locked = conn.exec("SELECT pg_advisory_lock($1)", {kMigrateLock}); !locked) {
    return makeError("cannot lock the oe schema for migration: " + locked.error().message);
  }
  auto unlock = [&conn] { (void)conn.exec("SELECT pg_advisory_unlock($1)", {kMigrateLock}); };
  auto created = conn.exec(
      "CREATE TABLE IF NOT EXISTS oe_schema_migrations (version int PRIMARY KEY, "
      "description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())");
  if (!created) {
    unlock();
    return makeError("cannot create oe_schema_migrations: " + created.error().message);
  }
  auto current = currentVersion(conn);
  if (!current) {
    unlock();
    return current.error();
  }
  MigrateReport report{*current, *current};
  if (*current > latestVersion()) {
    unlock();
    return makeError("the database " + redact(conn.url()) + " is at oe schema version " +
                     std::to_string(*current) + ", newer than this oe knows (" +
                     std::to_string(latestVersion()) + "): upgrade oe on this machine");
  }
  for (const Migration& step : migrations()) {
    if (step.version <= *current || step.version > target) {
      continue;
    }
    auto applied = conn.transaction([&step](Connection& tx) -> Result<void> {
      if (auto done = tx.script(step.sql); !done) {
        return done;
      }
      auto recorded =
          tx.exec("INSERT INTO oe_schema_migrations (version, description) VALUES ($1, $2)",
                  {step.version, step.description});
      if (!recorded) {
        return recorded.error();
      }
      return {};
    });
    if (!applied) {
      unlock();
      return makeError("oe schema migration " + std::to_string(step.version) + " (" +
                       std::string(step.description) + ") failed: " + applied.error().message);
    }
    report.to = step.version;
  }
  unlock();
  return report;
}

}  // namespace oe::pg

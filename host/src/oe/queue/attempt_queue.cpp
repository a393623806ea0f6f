// The queue's statements (attempt_queue.hpp). Arrays travel as text literals so that a burst of
// attempts, or every lease a worker holds, costs one round trip.
#include "oe/queue/attempt_queue.hpp"

#include <algorithm>

namespace oe::queue {

namespace {

// The lease as an interval expression of a float8 parameter holding milliseconds.
constexpr std::string_view kLeaseMs = "$3::float8 * interval '1 millisecond'";

std::string int64Array(const std::vector<std::optional<int64_t>>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    out += items[i] ? std::to_string(*items[i]) : "NULL";
  }
  out += '}';
  return out;
}

std::optional<int64_t> optInt64(const pg::Rows& rows, int row, int column) {
  if (rows.isNull(row, column)) {
    return std::nullopt;
  }
  return rows.int64(row, column);
}

Error failed(std::string_view what, const Error& error) {
  return makeError("the work queue could not " + std::string(what) + ": " + error.message);
}

}  // namespace


Result<std::vector<int64_t>> AttemptQueue::enqueue(const std::vector<NewAttempt>& attempts,
                                                   bool notify) {
  if (attempts.empty()) {
    return std::vector<int64_t>{};
  }
  std::vector<std::string> run_ids, node_ids, call_keys, queues, kinds, configs, requests,
      cache_keys;
  std::vector<std::optional<int64_t>> numbers, timeouts, seqs;
  for (const NewAttempt& a : attempts) {
    run_ids.push_back(a.run_id);
    node_ids.push_back(a.node_id);
    call_keys.push_back(a.call_key);
    numbers.emplace_back(a.attempt);
    queues.push_back(a.queue);
    kinds.push_back(a.kind);
    configs.push_back(a.config);
    requests.push_back(a.request);
    cache_keys.push_back(a.cache_key);
    timeouts.push_back(a.timeout_ms);
    seqs.push_back(a.seq);
  }
  // unnest ... WITH ORDINALITY keeps the input order, so the serial ids follow it. A row whose
  // (run, seq) is there already (this batch sent before, its answer lost with the connection)
  // is not added again: its id is read back (the lookup only runs for those: COALESCE stops at
  // the first value). An attempt without a seq gets a negative one from
  // the id sequence, which no dispatcher ticket (>= 0) meets.
  auto rows = conn_.exec(
      "WITH x AS MATERIALIZED (SELECT r, n, c, a, q, k, cf, rq, ck, t, "
      "coalesce(s, -nextval('oe_attempts_id_seq')) AS s, o FROM unnest($1::text[], $2::text[], "
      "$3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], "
      "$10::bigint[], $11::bigint[]) WITH ORDINALITY AS u(r, n, c, a, q, k, cf, rq, ck, t, s, o)), "
      "ins AS (INSERT INTO oe_attempts (run_id, node_id, call_key, attempt, queue, kind, config, "
      "request, cache_key, timeout_ms, submit_seq) "
      "SELECT r, n, c, a, q, k, cf, rq, NULLIF(ck, ''), t, s FROM x ORDER BY o "
      "ON CONFLICT (run_id, submit_seq) DO NOTHING RETURNING id, run_id, submit_seq) "
      "SELECT coalesce(ins.id, (SELECT old.id FROM oe_attempts old WHERE old.run_id = x.r AND "
      "old.submit_seq = x.s)) FROM x LEFT JOIN ins ON ins.run_id = x.r AND ins.submit_seq = x.s "
      "ORDER BY x.o",
      std::vector<pg::Param>{pg::arrayLiteral(run_ids), pg::arrayLiteral(node_ids), pg::arrayLiteral(call_keys),
                             int64Array(numbers), pg::arrayLiteral(queues), pg::arrayLiteral(kinds),
                             pg::arrayLiteral(configs), pg::arrayLiteral(requests), pg::arrayLiteral(cache_keys),
                             int64Array(timeouts), int64Array(seqs)});
  if (!rows) {
    return failed("add attempts", rows.error());
  }
  std::vector<int64_t> ids;
  ids.reserve(static_cast<size_t>(rows->size()));
  for (int i = 0; i < rows->size(); ++i) {
    ids.push_back(rows->int64(i, 0));  // in the input's order (ORDER BY x.o)
  }
  if (notify) {
    if (auto sent = conn_.exec("SELECT pg_notify('oe_attempts', '')"); !sent) {
      return failed("wake the workers (NOTIFY)", sent.error());
    }
  }
  return ids;
}

Result<std::vector<Claimed>> AttemptQueue::claim(const std::string& worker,
                                                 const std::vector<std::string>& queues, int max,
                                                 std::chrono::milliseconds lease) {
  auto rows = conn_.exec(
      "UPDATE oe_attempts a SET status = 'leased', fence = a.fence + 1, lease_owner = $1, "
      "lease_expires_at = now() + " +
          std::string(kLeaseMs) +
          ", claimed_at = now() "
          "WHERE a.id IN (SELECT id FROM oe_attempts WHERE status = 'ready' AND queue = "
          "ANY($2::text[]) ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED) "
          "RETURNING a.id, a.fence, a.run_id, a.node_id, a.call_key, a.attempt, a.queue, a.kind, "
          "a.config, a.request, COALESCE(a.cache_key, ''), a.timeout_ms",
      {worker, pg::arrayLiteral(queues), static_cast<double>(lease.count()), max});
  if (!rows) {
    return failed("claim attempts", rows.error());
  }
  std::vector<Claimed> claimed(static_cast<size_t>(rows->size()));
  for (int i = 0; i < rows->size(); ++i) {
    Claimed& c = claimed[static_cast<size_t>(i)];
    c.id = rows->int64(i, 0);
    c.fence = rows->int64(i, 1);
    c.run_id = rows->text(i, 2);
    c.node_id = rows->text(i, 3);
    c.call_key = rows->text(i, 4);
    c.attempt = static_cast<int>(rows->int64(i, 5));
    c.queue = rows->text(i, 6);
    c.kind = rows->text(i, 7);
    c.config = rows->text(i, 8);
    c.request = rows->text(i, 9);
    c.cache_key = rows->text(i, 10);
    c.timeout_ms = optInt64(*rows, i, 11);
  }
  std::sort(claimed.begin(), claimed.end(),
            [](const Claimed& x, const Claimed& y) { return x.id < y.id; });
  return claimed;
}

Result<std::vector<int64_t>> AttemptQueue::renew(const std::string& worker,
                                                 const std::vector<Held>& held,
                                                 std::chrono::milliseconds lease) {
  if (held.empty()) {
    return std::vector<int64_t>{};
  }
  std::vector<std::optional<int64_t>> ids, fences;
  for (const Held& h : held) {
    ids.emplace_back(h.id);
    fences.emplace_back(h.fence);
  }
  auto rows = conn_.exec(
      "UPDATE oe_attempts a SET lease_expires_at = now() + " + std::string(kLeaseMs) +
          " FROM unnest($2::bigint[], $4::bigint[]) AS h(id, fence) "
          "WHERE a.id = h.id AND a.fence = h.fence AND a.status = 'leased' AND a.lease_owner = $1 "
          "RETURNING a.id",
      {worker, int64Array(ids), static_cast<double>(lease.count()), int64Array(fences)});
  if (!rows) {
    return failed("renew leases", rows.error());
  }
  std::vector<int64_t> kept;
  for (int i = 0; i < rows->size(); ++i) {
    kept.push_back(rows->int64(i, 0));
  }
  std::sort(kept.begin(), kept.end());
  std::vector<int64_t> lost;
  for (const Held& h : held) {
    if (!std::binary_search(kept.begin(), kept.end(), h.id)) {
      lost.push_back(h.id);
    }
  }
  return lost;
}

Result<bool> AttemptQueue::complete(const std::string& worker, const Completion& completion) {
  // One statement, so one transaction and one round trip: the fenced update (with the events,
  // which the coordinator logs when it collects the result), and only when it matched (the CTE
  // reads its RETURNING), the cache entry.
  const bool cached = completion.cache && !completion.cache->key.empty();
  std::string events;
  if (!completion.events.empty()) {
    events = "[";
    for (const std::string& event : completion.events) {
      events += (events.size() > 1 ? "," : "") + event;
    }
    events += "]";
  }
  auto rows = conn_.exec(
      "WITH done AS (UPDATE oe_attempts SET status = $3, result_status = $4, response = $5, "
      "error = $6, events = $10, llm_usage = $11, finished_at = now(), "
      "lease_expires_at = NULL "
      "WHERE id = $1 AND fence = $2 AND status = 'leased' AND lease_owner = $7 "
      "RETURNING run_id, node_id), "
      "cached AS (INSERT INTO oe_cache (key, node_id, run_id, value) "
      "SELECT $8, node_id, run_id, $9 FROM done WHERE $8::text IS NOT NULL "
      "ON CONFLICT (key) DO NOTHING) "
      "SELECT count(*) FROM done",
      std::vector<pg::Param>{completion.id, completion.fence, completion.ok ? "done" : "failed",
                             completion.result_status, completion.response, completion.error,
                             worker, cached ? pg::Param(completion.cache->key) : pg::Param(nullptr),
                             cached ? pg::Param(completion.cache->value) : pg::Param(nullptr),
                             events.empty() ? pg::Param(nullptr) : pg::Param(events),
                             completion.llm_usage.empty() ? pg::Param(nullptr)
                                                          : pg::Param(completion.llm_usage)});
  if (!rows) {
    return failed("complete attempt " + std::to_string(completion.id), rows.error());
  }
  return rows->int64(0, 0) == 1;
}

Result<std::vector<Finished>> AttemptQueue::collect(const std::string& run_id) {
  auto rows = conn_.exec(
      "SELECT id, status = 'done', COALESCE(result_status, 0), COALESCE(response, ''), "
      "COALESCE(error, ''), COALESCE(llm_usage, ''), COALESCE(events, ''), "
      "status = 'cancelled' FROM oe_attempts "
      "WHERE run_id = $1 AND status IN ('done', 'failed', 'cancelled') "
      "AND collected_at IS NULL ORDER BY id",
      {run_id});
  if (!rows) {
    return failed("collect finished attempts", rows.error());
  }
  std::vector<Finished> finished(static_cast<size_t>(rows->size()));
  for (int i = 0; i < rows->size(); ++i) {
    Finished& f = finished[static_cast<size_t>(i)];
    f.id = rows->int64(i, 0);
    f.ok = rows->boolean(i, 1);
    f.result_status = static_cast<int>(rows->int64(i, 2));
    f.response = rows->text(i, 3);
    f.error = rows->text(i, 4);
    f.llm_usage = rows->text(i, 5);
    f.events = rows->text(i, 6);
    f.cancelled = rows->boolean(i, 7);
  }
  std::sort(finished.begin(), finished.end(),
            [](const Finished& x, const Finished& y) { return x.id < y.id; });
  return finished;
}

Result<void> AttemptQueue::markCollected(const std::vector<int64_t>& ids) {
  if (ids.empty()) {
    return {};
  }
  auto rows = conn_.exec("UPDATE oe_attempts SET collected_at = now() WHERE id = ANY($1::bigint[])",
                         {int64Array(std::vector<std::optional<int64_t>>(ids.begin(), ids.end()))});
  if (!rows) {
    return failed("mark finished attempts collected", rows.error());
  }
  return {};
}

Result<bool> AttemptQueue::cancel(int64_t id) {
  // The workers LISTEN on oe_cancels: the one holding it stops the plugin call at once rather
  // than at its next heartbeat.
  auto rows = conn_.exec(
      "WITH c AS (UPDATE oe_attempts SET status = 'cancelled', finished_at = now() "
      "WHERE id = $1 AND status IN ('ready', 'leased') RETURNING status), "
      "n AS (SELECT pg_notify('oe_cancels', '') FROM (SELECT 1 FROM c LIMIT 1) one) "
      "SELECT (SELECT count(*) FROM c), (SELECT count(*) FROM n)",
      {id});
  if (!rows) {
    return failed("cancel attempt " + std::to_string(id), rows.error());
  }
  return rows->int64(0, 0) == 1;
}

Result<int64_t> AttemptQueue::cancelRun(const std::string& run_id) {
  auto rows = conn_.exec(
      "WITH c AS (UPDATE oe_attempts SET status = 'cancelled', finished_at = now(), "
      "collected_at = now() WHERE run_id = $1 AND status IN ('ready', 'leased') RETURNING id), "
      "n AS (SELECT pg_notify('oe_cancels', '') FROM (SELECT 1 FROM c LIMIT 1) one) "
      "SELECT (SELECT count(*) FROM c), (SELECT count(*) FROM n)",
      {run_id});
  if (!rows) {
    return failed("cancel the attempts of run " + run_id, rows.error());
  }
  return rows->int64(0, 0);
}

Result<int64_t> AttemptQueue::rescueExpired() {
  auto rows = conn_.exec(
      "UPDATE oe_attempts SET status = 'ready', lease_owner = NULL, lease_expires_at = NULL "
      "WHERE status = 'leased' AND lease_expires_at < now()");
  if (!rows) {
    return failed("re-queue expired leases", rows.error());
  }
  return rows->affected();
}

Result<void> AttemptQueue::registerWorker(const std::string& worker, const std::string& host,
                                          int pid, const std::vector<std::string>& queues,
                                          int concurrency) {
  auto rows = conn_.exec(
      "INSERT INTO oe_workers (id, host, pid, queues, concurrency) "
      "VALUES ($1, $2, $3, $4::text[], $5) ON CONFLICT (id) DO UPDATE SET host = $2, pid = $3, "
      "queues = $4::text[], concurrency = $5, heartbeat_at = now(), stopped_at = NULL",
      {worker, host, pid, pg::arrayLiteral(queues), concurrency});
  if (!rows) {
    return failed("register worker " + worker, rows.error());
  }
  return {};
}

Result<void> AttemptQueue::heartbeatWorker(const std::string& worker) {
  auto rows = conn_.exec("UPDATE oe_workers SET heartbeat_at = now() WHERE id = $1", {worker});
  if (!rows) {
    return failed("record worker " + worker + "'s heartbeat", rows.error());
  }
  return {};
}

Result<void> AttemptQueue::stopWorker(const std::string& worker) {
  auto rows = conn_.exec("UPDATE oe_workers SET stopped_at = now() WHERE id = $1", {worker});
  if (!rows) {
    return failed("record worker " + worker + "'s end", rows.error());
  }
  return {};
}

}  // namespace oe::queue

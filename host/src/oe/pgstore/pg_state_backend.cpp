// PgStateBackend: the rows StateStore decided, stored in PostgreSQL under a scope.
#include "oe/pgstore/pg_state_backend.hpp"

#include "oe/pgstore/store_connection.hpp"
#include "oe/state/state_store.hpp"

namespace oe::pgstore {

namespace {

// One node's write as ONE statement (atomic on its own: no BEGIN/COMMIT round trips). The
// write's identity is claimed first, in oe_state_writes, whose primary key the database
// enforces: a second statement with the same write id (a retry after a lost answer, even one
// sent while the first try still runs on the server) waits for the first to end and then
// claims nothing, so it writes nothing. Every row, and the landed mark, is written only under
// the claim, and only while the scope's epoch is the run's ($14, the fence). The answer says
// whether the fence held and whether this statement made the write (false: it had landed).
// The rows come as parallel arrays, in the write's order; an append (D17) extends the stored
// array's text, values being stored compact: its items go in before the closing bracket, an
// empty side leaves the other.
const std::string& writeSql() {
  static const std::string sql = R"sql(
WITH fence AS (
  SELECT )sql" + ScopeFence::condition(1, 14) + R"sql( AS ok
), claim AS (
  INSERT INTO oe_state_writes (scope, write_id, run_id)
  SELECT $1, $2, $4 WHERE (SELECT ok FROM fence)
  ON CONFLICT (scope, write_id) DO NOTHING
  RETURNING 1
), r AS (
  SELECT * FROM unnest($6::text[], $7::text[], $8::text[], $9::bigint[], $10::boolean[])
    WITH ORDINALITY AS r(field, old, new, from_len, app, ord)
  WHERE EXISTS (SELECT 1 FROM claim)
), hist AS (
  INSERT INTO oe_state_history (scope, field, value_old, value_new, append_from, node_id, run_id,
                                ts, write_id)
  SELECT $1, field, old, new, from_len, $3, $4, $5, $2 FROM r ORDER BY ord
), plain AS (
  INSERT INTO oe_state_snapshot (scope, field, value, updated_at, node_id, run_id)
  SELECT $1, field, new, $5, $3, $4 FROM r WHERE NOT app
  ON CONFLICT (scope, field) DO UPDATE SET value = excluded.value,
    updated_at = excluded.updated_at, node_id = excluded.node_id, run_id = excluded.run_id
), appended AS (
  INSERT INTO oe_state_snapshot AS s (scope, field, value, updated_at, node_id, run_id)
  SELECT $1, field, new, $5, $3, $4 FROM r WHERE app
  ON CONFLICT (scope, field) DO UPDATE SET value = CASE
    WHEN excluded.value = '[]' THEN s.value
    WHEN s.value = '[]' OR left(s.value, 1) <> '[' THEN excluded.value
    ELSE left(s.value, -1) || ',' || substr(excluded.value, 2) END,
    updated_at = excluded.updated_at, node_id = excluded.node_id, run_id = excluded.run_id
), mark AS (
  INSERT INTO oe_landed_writes (scope, chain_id, write_key, input_key, run_id)
  SELECT $1, $11, $12, $13, $4 WHERE $11 <> '' AND EXISTS (SELECT 1 FROM claim)
  ON CONFLICT (scope, chain_id, write_key) DO UPDATE SET input_key = excluded.input_key,
    run_id = excluded.run_id
)
SELECT (SELECT ok FROM fence), EXISTS (SELECT 1 FROM claim)
)sql";
  return sql;
}

std::optional<std::string> appendFrom(const std::optional<std::string>& old_text, bool append) {
  if (!append || !old_text) {
    return std::nullopt;
  }
  const Json marker = Json::parse(*old_text, nullptr, false);
  const Json from = marker.is_object() && marker.contains("$oe_append") &&
                            marker["$oe_append"].is_object()
                        ? marker["$oe_append"].value("from_length", Json())
                        : Json();
  if (!from.is_number_unsigned()) {
    return std::nullopt;
  }
  return std::to_string(from.get<uint64_t>());
}

}  // namespace

Result<std::unique_ptr<PgStateBackend>> PgStateBackend::open(const std::string& url,
                                                             std::string scope,
                                                             std::chrono::milliseconds retry_for,
                                                             std::shared_ptr<ScopeFence> fence) {
  auto conn = connect(url, retry_for, "oe state", fence ? fence->patience() : nullptr);
  if (!conn) {
    return conn.error();
  }
  return std::make_unique<PgStateBackend>(std::move(*conn), std::move(scope), std::move(fence));
}

PgStateBackend::PgStateBackend(std::unique_ptr<pg::Connection> conn, std::string scope,
                               std::shared_ptr<ScopeFence> fence)
    : conn_(std::move(conn)), scope_(std::move(scope)), fence_(std::move(fence)) {}

std::string PgStateBackend::describe() const {
  return "PostgreSQL " + pg::redact(conn_->url()) + " (scope \"" + scope_ + "\")";
}

Result<std::vector<std::pair<std::string, std::string>>> PgStateBackend::loadSnapshot() {
  return loadScopeSnapshot(*conn_, scope_);
}

Result<std::unordered_map<std::string, std::string>> PgStateBackend::landedWrites(
    std::string_view chain_id) {
  constexpr std::string_view kSql =
      "SELECT write_key, input_key FROM oe_landed_writes WHERE scope = $1 AND chain_id = $2";
  auto rows = execRetrying(*conn_, kSql, {scope_, chain_id});
  if (!rows) {
    return rows.error();
  }
  std::unordered_map<std::string, std::string> out;
  for (int i = 0; i < rows->size(); ++i) {
    out.emplace(std::string(rows->text(i, 0)), std::string(rows->text(i, 1)));
  }
  return out;
}

Result<void> PgStateBackend::write(const state::BackendWrite& w) {
  std::vector<std::optional<std::string_view>> fields;
  std::vector<std::optional<std::string_view>> olds;
  std::vector<std::optional<std::string_view>> news;
  std::vector<std::optional<std::string>> from_lengths;  // owned: the texts below point in
  std::vector<std::optional<std::string_view>> froms;
  std::vector<std::optional<std::string_view>> appends;
  for (const state::BackendRow& row : w.rows) {
    fields.emplace_back(row.field);
    olds.push_back(row.old_text ? std::optional<std::string_view>(*row.old_text) : std::nullopt);
    news.emplace_back(row.new_text);
    from_lengths.push_back(appendFrom(row.old_text, row.append));
    appends.emplace_back(row.append ? "t" : "f");
  }
  for (const auto& from : from_lengths) {
    froms.push_back(from ? std::optional<std::string_view>(*from) : std::nullopt);
  }
  // Sent again after a lost connection for as long as the run waits for the store: the claim
  // makes a resent write land once, whatever became of the first try.
  auto r = execRetrying(*conn_, writeSql(),
                        {scope_, w.write_id, w.node_id, w.run_id, w.ts, arrayLiteral(fields),
                         arrayLiteral(olds), arrayLiteral(news), arrayLiteral(froms),
                         arrayLiteral(appends), w.chain_id, w.write_key, w.input_key,
                         epochOf(fence_)});
  if (!r) {
    return r.error();
  }
  if (r->size() != 1 || !r->boolean(0, 0)) {
    return makeError(fence_ ? fence_->lost() : ScopeFence::message(scope_));
  }
  return {};
}

Result<std::vector<std::pair<std::string, std::string>>> loadScopeSnapshot(
    pg::Connection& conn, const std::string& scope) {
  auto rows = execRetrying(conn, "SELECT field, value FROM oe_state_snapshot WHERE scope = $1",
                           {scope});
  if (!rows) {
    return makeError("cannot read the state of scope \"" + scope + "\" in " +
                     pg::redact(conn.url()) + ": " + rows.error().message);
  }
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(static_cast<size_t>(rows->size()));
  for (int i = 0; i < rows->size(); ++i) {
    out.emplace_back(std::string(rows->text(i, 0)), std::string(rows->text(i, 1)));
  }
  return out;
}

Result<std::vector<state::HistoryRow>> PgStateBackend::history(std::string_view key, bool by_run) {
  const std::string sql = std::string(
                              "SELECT id, field, value_old, value_new, node_id, run_id, ts FROM "
                              "oe_state_history WHERE scope = $1 AND ") +
                          (by_run ? "run_id" : "field") + " = $2 ORDER BY id";
  auto rows = execRetrying(*conn_, sql, {scope_, key});
  if (!rows) {
    return makeError("cannot read the state history in " + describe() + ": " +
                     rows.error().message);
  }
  std::vector<state::HistoryRow> out;
  out.reserve(static_cast<size_t>(rows->size()));
  for (int i = 0; i < rows->size(); ++i) {
    std::optional<std::string_view> old_text;
    if (!rows->isNull(i, 2)) {
      old_text = rows->text(i, 2);
    }
    out.push_back(state::historyRowOf(rows->int64(i, 0), std::string(rows->text(i, 1)), old_text,
                                      rows->text(i, 3), std::string(rows->text(i, 4)),
                                      std::string(rows->text(i, 5)),
                                      std::string(rows->text(i, 6))));
  }
  return out;
}

Result<void> resetState(pg::Connection& conn, const std::string& scope) {
  return conn.transaction([&scope](pg::Connection& c) -> Result<void> {
    for (const char* table :
         {"oe_state_snapshot", "oe_state_history", "oe_landed_writes", "oe_state_writes"}) {
      auto r = c.exec(std::string("DELETE FROM ") + table + " WHERE scope = $1", {scope});
      if (!r) {
        return r.error();
      }
    }
    return {};
  });
}

}  // namespace oe::pgstore

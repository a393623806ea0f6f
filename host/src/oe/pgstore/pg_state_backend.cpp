// PgStateBackend: the rows StateStore decided, stored in PostgreSQL under a scope.
#include "oe/pgstore/pg_state_backend.hpp"

#include "oe/pgstore/store_connection.hpp"
#include "oe/state/state_store.hpp"

namespace oe::pgstore {

namespace {

constexpr std::string_view kHistorySql =
    "INSERT INTO oe_state_history (scope, field, value_old, value_new, append_from, node_id, "
    "run_id, ts, write_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
// An append (D17) extends the stored array's text: values are stored compact, so the items
// go in before its closing bracket; an empty side leaves the other.
constexpr std::string_view kAppendSql =
    "INSERT INTO oe_state_snapshot AS s (scope, field, value, updated_at, node_id, run_id) "
    "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (scope, field) DO UPDATE SET value = CASE "
    "WHEN excluded.value = '[]' THEN s.value WHEN s.value = '[]' OR left(s.value, 1) <> '[' "
    "THEN excluded.value ELSE left(s.value, -1) || ',' || substr(excluded.value, 2) END, "
    "updated_at = excluded.updated_at, node_id = excluded.node_id, run_id = excluded.run_id";
constexpr std::string_view kUpsertSql =
    "INSERT INTO oe_state_snapshot (scope, field, value, updated_at, node_id, run_id) "
    "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (scope, field) DO UPDATE SET "
    "value = excluded.value, updated_at = excluded.updated_at, node_id = excluded.node_id, "
    "run_id = excluded.run_id";
constexpr std::string_view kMarkSql =
    "INSERT INTO oe_landed_writes (scope, chain_id, write_key, input_key, run_id) "
    "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (scope, chain_id, write_key) DO UPDATE SET "
    "input_key = excluded.input_key, run_id = excluded.run_id";

std::optional<std::string> appendFrom(const std::optional<std::string>& old_text, bool append) {
  if (!append || !old_text) {
    return std::nullopt;
  }
  const Json marker = Json::parse(*old_text, nullptr, false);
  const Json* from = marker.is_object() ? &marker["$oe_append"]["from_length"] : nullptr;
  if (from == nullptr || !from->is_number_unsigned()) {
    return std::nullopt;
  }
  return std::to_string(from->get<uint64_t>());
}

}  // namespace

Result<std::unique_ptr<PgStateBackend>> PgStateBackend::open(const std::string& url,
                                                             std::string scope,
                                                             std::chrono::milliseconds retry_for) {
  auto conn = connect(url, retry_for, "oe state");
  if (!conn) {
    return conn.error();
  }
  return std::make_unique<PgStateBackend>(std::move(*conn), std::move(scope));
}

PgStateBackend::PgStateBackend(std::unique_ptr<pg::Connection> conn, std::string scope)
    : conn_(std::move(conn)), scope_(std::move(scope)) {}

std::string PgStateBackend::describe() const {
  return "PostgreSQL " + pg::redact(conn_->url()) + " (scope \"" + scope_ + "\")";
}

Result<std::vector<std::pair<std::string, std::string>>> PgStateBackend::loadSnapshot() {
  auto rows =
      execRetrying(*conn_, "SELECT field, value FROM oe_state_snapshot WHERE scope = $1", {scope_});
  if (!rows) {
    return rows.error();
  }
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(static_cast<size_t>(rows->size()));
  for (int i = 0; i < rows->size(); ++i) {
    out.emplace_back(std::string(rows->text(i, 0)), std::string(rows->text(i, 1)));
  }
  return out;
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
  return conn_->transaction([this, &w](pg::Connection& c) -> Result<void> {
    if (!w.rows.empty()) {
      // A retry after a COMMIT whose answer was lost: the rows are in, do not apply them twice
      // (an append would double).
      auto seen =
          c.exec("SELECT 1 FROM oe_state_history WHERE scope = $1 AND write_id = $2 LIMIT 1",
                 {scope_, w.write_id});
      if (!seen) {
        return seen.error();
      }
      if (!seen->empty()) {
        return {};
      }
    }
    for (const state::BackendRow& row : w.rows) {
      auto hist = c.exec(kHistorySql, {scope_, row.field, row.old_text, row.new_text,
                                       appendFrom(row.old_text, row.append), w.node_id, w.run_id,
                                       w.ts, w.write_id});
      if (!hist) {
        return makeError("state field \"" + row.field + "\": " + hist.error().message);
      }
      auto snap = c.exec(row.append ? kAppendSql : kUpsertSql,
                         {scope_, row.field, row.new_text, w.ts, w.node_id, w.run_id});
      if (!snap) {
        return makeError("state field \"" + row.field + "\": " + snap.error().message);
      }
    }
    if (!w.chain_id.empty()) {
      auto mark = c.exec(kMarkSql, {scope_, w.chain_id, w.write_key, w.input_key, w.run_id});
      if (!mark) {
        return makeError("landed write \"" + std::string(w.write_key) +
                         "\": " + mark.error().message);
      }
    }
    return {};
  });
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
    for (const char* table : {"oe_state_snapshot", "oe_state_history", "oe_landed_writes"}) {
      auto r = c.exec(std::string("DELETE FROM ") + table + " WHERE scope = $1", {scope});
      if (!r) {
        return r.error();
      }
    }
    return {};
  });
}

}  // namespace oe::pgstore

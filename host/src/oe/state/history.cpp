// The state store's read side: a field's history, or a run's writes, with appends (D17) kept as
// they were stored or expanded into whole values.
#include "oe/state/state_store.hpp"

#include <system_error>

#include "oe/common/sqlite.hpp"
#include "oe/state/store_sql.hpp"
#include "oe/state/value_codec.hpp"

namespace oe::state {

Result<std::vector<HistoryRow>> StateStore::queryHistory(std::string_view key, bool by_run) {
  if (backend_) {
    return backend_->history(key, by_run);
  }
  std::lock_guard lock(mutex_);
  if (auto r = foldLocked(); !r) {
    return makeError("cannot read the state history: " + r.error().message);
  }
  sqlite3_stmt* stmt = by_run ? sql_->by_run.get() : sql_->by_field.get();
  sqlite::StmtScope scope(stmt);
  sqlite::bindText(stmt, 1, key);
  std::vector<HistoryRow> rows;
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    std::optional<std::string_view> old_text;
    if (sqlite3_column_type(stmt, 2) != SQLITE_NULL) {
      old_text = sqlite::columnView(stmt, 2);
    }
    rows.push_back(historyRowOf(sqlite3_column_int64(stmt, 0), sqlite::columnText(stmt, 1),
                                old_text, sqlite::columnView(stmt, 3), sqlite::columnText(stmt, 4),
                                sqlite::columnText(stmt, 5), sqlite::columnText(stmt, 6)));
  }
  if (rc != SQLITE_DONE) {
    return makeError("cannot read the state history in " + path_.string() + ": " +
                     sqlite::errorOf(sql_->db.get()));
  }
  return rows;
}

Result<std::vector<HistoryRow>> StateStore::history(std::string_view field) {
  return queryHistory(field, false);
}

Result<std::vector<HistoryRow>> StateStore::historyForRun(std::string_view run_id) {
  return queryHistory(run_id, true);
}

HistoryRow historyRowOf(int64_t id, std::string field,
                        const std::optional<std::string_view>& old_text, std::string_view new_text,
                        std::string node_id, std::string run_id, std::string ts) {
  HistoryRow row;
  row.id = id;
  row.field = std::move(field);
  if (old_text) {
    row.value_old = parseStored(*old_text);
    row.append_from = appendedOnto(*row.value_old);
  }
  row.value_new = parseStored(new_text);
  row.node_id = std::move(node_id);
  row.run_id = std::move(run_id);
  row.ts = std::move(ts);
  return row;
}

std::vector<HistoryRow> expandAppends(std::vector<HistoryRow> rows) {
  std::optional<Json> current;  // the field's whole value after the previous row
  for (HistoryRow& row : rows) {
    if (!row.append_from) {
      current = row.value_new;
      continue;
    }
    if (!current || !current->is_array() || current->size() != *row.append_from) {
      current.reset();  // nothing (or not the right list) to extend: left in the append form
      continue;
    }
    Json whole = *current;
    for (const Json& item : row.value_new) {
      whole.push_back(item);
    }
    row.value_old = std::move(*current);
    row.value_new = whole;
    row.append_from.reset();
    current = std::move(whole);
  }
  return rows;
}

}  // namespace oe::state

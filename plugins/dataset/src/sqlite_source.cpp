// source.type sqlite: the query's rows as objects (column -> value), from a database opened
// READ-ONLY so a dataset node can never change the file it reads.
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "json_text.hpp"
#include "sources.hpp"

namespace oe::dataset {
namespace {

constexpr int kProgressOps = 10000;  // VM steps between two cancellation polls
constexpr int kBusyTimeoutMs = 5000;

struct CloseDb {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct FinalizeStmt {
  void operator()(sqlite3_stmt* stmt) const noexcept { sqlite3_finalize(stmt); }
};
using Db = std::unique_ptr<sqlite3, CloseDb>;
using Stmt = std::unique_ptr<sqlite3_stmt, FinalizeStmt>;

void appendBase64(std::string& out, const unsigned char* data, size_t size) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  out += '"';
  size_t i = 0;
  for (; i + 3 <= size; i += 3) {
    const uint32_t n = (uint32_t{data[i]} << 16U) | (uint32_t{data[i + 1]} << 8U) | data[i + 2];
    out += kAlphabet[(n >> 18U) & 63U];
    out += kAlphabet[(n >> 12U) & 63U];
    out += kAlphabet[(n >> 6U) & 63U];
    out += kAlphabet[n & 63U];
  }
  if (const size_t rest = size - i; rest > 0) {
    uint32_t n = uint32_t{data[i]} << 16U;
    if (rest == 2) {
      n |= uint32_t{data[i + 1]} << 8U;
    }
    out += kAlphabet[(n >> 18U) & 63U];
    out += kAlphabet[(n >> 12U) & 63U];
    out += rest == 2 ? kAlphabet[(n >> 6U) & 63U] : '=';
    out += '=';
  }
  out += '"';
}

void appendDouble(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";  // JSON has no Infinity (JSON.stringify writes null too)
    return;
  }
  // Shortest text that reads back as the same double, as JavaScript prints numbers.
  std::array<char, 32> buffer{};
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buffer.data(), buffer.size(), "%.*g", precision, value);
    if (std::strtod(buffer.data(), nullptr) == value) {
      break;
    }
  }
  out += buffer.data();  // 2.0 prints as 2, as better-sqlite3 + JSON.stringify do
}

void appendColumn(std::string& out, sqlite3_stmt* stmt, int column) {
  switch (sqlite3_column_type(stmt, column)) {
    case SQLITE_INTEGER:
      out += std::to_string(sqlite3_column_int64(stmt, column));
      break;
    case SQLITE_FLOAT:
      appendDouble(out, sqlite3_column_double(stmt, column));
      break;
    case SQLITE_TEXT: {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
      appendJsonString(out,
                       std::string_view(text == nullptr ? "" : text,
                                        static_cast<size_t>(sqlite3_column_bytes(stmt, column))));
      break;
    }
    case SQLITE_BLOB: {
      const auto* blob = static_cast<const unsigned char*>(sqlite3_column_blob(stmt, column));
      appendBase64(out, blob, static_cast<size_t>(sqlite3_column_bytes(stmt, column)));
      break;
    }
    case SQLITE_NULL:
    default:
      out += "null";
      break;
  }
}

// Binds params[i] to parameter i+1: numbers, strings, booleans (0/1) and null as themselves;
// arrays and objects as their JSON text (for SQLite's JSON functions).
bool bindParam(sqlite3_stmt* stmt, int index, const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return sqlite3_bind_null(stmt, index) == SQLITE_OK;
    case Json::value_t::boolean:
      return sqlite3_bind_int(stmt, index, value.get<bool>() ? 1 : 0) == SQLITE_OK;
    case Json::value_t::number_integer:
      return sqlite3_bind_int64(stmt, index, value.get<int64_t>()) == SQLITE_OK;
    case Json::value_t::number_unsigned:
      if (value.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) {
        return sqlite3_bind_int64(stmt, index, value.get<int64_t>()) == SQLITE_OK;
      }
      return sqlite3_bind_double(stmt, index, value.get<double>()) == SQLITE_OK;
    case Json::value_t::number_float:
      return sqlite3_bind_double(stmt, index, value.get<double>()) == SQLITE_OK;
    case Json::value_t::string: {
      const auto& text = value.get_ref<const std::string&>();
      return sqlite3_bind_text64(stmt, index, text.data(), text.size(), SQLITE_TRANSIENT,
                                 SQLITE_UTF8) == SQLITE_OK;
    }
    default: {
      const std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
      return sqlite3_bind_text64(stmt, index, text.data(), text.size(), SQLITE_TRANSIENT,
                                 SQLITE_UTF8) == SQLITE_OK;
    }
  }
}

// sqlite3_prepare stops after the first statement; what follows is checked so that a second
// statement is reported instead of being silently ignored (comments alone are fine).
bool onlyBlanks(const char* tail) {
  return tail == nullptr ||
         std::string_view(tail).find_first_not_of(" \t\r\n;") == std::string_view::npos;
}

}  // namespace

Expected<std::string> readSqliteSource(const SqliteSource& source, const std::string& who,
                                       const CancelCheck& cancelled) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(source.path, ec)) {
    return fail(OE_NOT_FOUND, "Dataset sqlite file not found: " + source.path + " (declared as \"" +
                                  source.uri + "\")");
  }
  const std::string where = who + ": the query on " + source.uri + " failed: sqlite says \"";
  sqlite3* raw = nullptr;
  const int open_rc = sqlite3_open_v2(source.path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  Db db(raw);
  if (open_rc != SQLITE_OK) {
    return fail(OE_FAILED_PRECONDITION,
                who + ": cannot open " + source.uri + " as a SQLite database: sqlite says \"" +
                    (db ? sqlite3_errmsg(db.get()) : sqlite3_errstr(open_rc)) + "\"");
  }
  // No ATTACH: an attached file would not be the one the node declares.
  sqlite3_limit(db.get(), SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
  sqlite3_progress_handler(
      db.get(), kProgressOps,
      [](void* check) -> int { return (*static_cast<const CancelCheck*>(check))() ? 1 : 0; },
      const_cast<CancelCheck*>(&cancelled));  // NOLINT: sqlite's void* user data

  sqlite3_stmt* raw_stmt = nullptr;
  const char* tail = nullptr;
  if (sqlite3_prepare_v2(db.get(), source.query.c_str(), static_cast<int>(source.query.size()),
                         &raw_stmt, &tail) != SQLITE_OK) {
    return fail(OE_INVALID_ARGUMENT, where + sqlite3_errmsg(db.get()) + "\"");
  }
  Stmt stmt(raw_stmt);
  if (!stmt) {
    return fail(OE_INVALID_ARGUMENT,
                who + ": source.query of " + source.uri + " holds no SQL statement");
  }
  if (!onlyBlanks(tail)) {
    sqlite3_stmt* second = nullptr;
    const char* ignored = nullptr;
    const int rc = sqlite3_prepare_v2(db.get(), tail, -1, &second, &ignored);
    Stmt second_owner(second);
    if (rc != SQLITE_OK || second != nullptr) {
      return fail(OE_INVALID_ARGUMENT, who + ": source.query of " + source.uri +
                                           " holds more than one SQL statement; give one query");
    }
  }

  const int expected_params = sqlite3_bind_parameter_count(stmt.get());
  if (static_cast<size_t>(expected_params) != source.params.size()) {
    return fail(OE_INVALID_ARGUMENT, who + ": source.query of " + source.uri + " has " +
                                         std::to_string(expected_params) +
                                         " parameter(s) but source.params gives " +
                                         std::to_string(source.params.size()) + " value(s)");
  }
  for (size_t i = 0; i < source.params.size(); ++i) {
    if (!bindParam(stmt.get(), static_cast<int>(i + 1), source.params[i])) {
      return fail(OE_INVALID_ARGUMENT, who + ": binding source.params[" + std::to_string(i) +
                                           "] failed: sqlite says \"" + sqlite3_errmsg(db.get()) +
                                           "\"");
    }
  }

  // A repeated column name keeps its first position and its last value (a JavaScript object).
  const int column_count = sqlite3_column_count(stmt.get());
  std::vector<std::pair<std::string, int>> columns;  // JSON-quoted name, column index
  std::vector<std::string> names;
  for (int c = 0; c < column_count; ++c) {
    const char* name = sqlite3_column_name(stmt.get(), c);
    names.emplace_back(name == nullptr ? "" : name);
    auto same = std::find_if(columns.begin(), columns.end(), [&](const auto& col) {
      return names[static_cast<size_t>(col.second)] == names.back();
    });
    if (same != columns.end()) {
      same->second = c;
    } else {
      std::string key;
      appendJsonString(key, names.back());
      columns.emplace_back(std::move(key), c);
    }
  }

  std::string out = "[";
  bool first = true;
  while (true) {
    const int rc = sqlite3_step(stmt.get());
    if (rc == SQLITE_DONE) {
      break;
    }
    if (rc != SQLITE_ROW) {
      if (rc == SQLITE_INTERRUPT && cancelled()) {
        return fail(OE_CANCELLED, "cancelled");
      }
      return fail(OE_INVALID_ARGUMENT, where + sqlite3_errmsg(db.get()) + "\"");
    }
    out += first ? "{" : ",{";
    first = false;
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c > 0) {
        out += ',';
      }
      out += columns[c].first;
      out += ':';
      appendColumn(out, stmt.get(), columns[c].second);
    }
    out += '}';
  }
  out += ']';
  return out;
}

}  // namespace oe::dataset

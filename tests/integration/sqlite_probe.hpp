// Raw read access to the SQLite files a run leaves (state.sqlite, cache/cache.sqlite), so the
// durability tests check what is really stored rather than what `oe` reports.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <vector>

namespace oe::test {

class SqliteProbe {
 public:
  explicit SqliteProbe(const std::filesystem::path& p) {
    EXPECT_EQ(sqlite3_open_v2(p.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK)
        << p << ": " << sqlite3_errmsg(db_);
    sqlite3_busy_timeout(db_, 5000);
  }
  ~SqliteProbe() { sqlite3_close(db_); }
  SqliteProbe(const SqliteProbe&) = delete;
  SqliteProbe& operator=(const SqliteProbe&) = delete;

  // Every row, each column as text (NULL as "<null>").
  std::vector<std::vector<std::string>> rows(const std::string& sql) {
    std::vector<std::vector<std::string>> out;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db_);
      return out;
    }
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
        row.emplace_back(text == nullptr ? "<null>" : text);
      }
      out.push_back(std::move(row));
    }
    EXPECT_EQ(rc, SQLITE_DONE) << sql << ": " << sqlite3_errmsg(db_);
    sqlite3_finalize(stmt);
    return out;
  }
  std::string scalar(const std::string& sql) {
    auto r = rows(sql);
    return r.empty() || r[0].empty() ? std::string("<none>") : r[0][0];
  }
  long count(const std::string& table) {
    return std::stol(scalar("SELECT COUNT(*) FROM " + table));
  }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace oe::test

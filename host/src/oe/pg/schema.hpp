// oe's PostgreSQL schema (docs/scale-out.md): versioned migrations that oe applies itself, at
// the first use of a store and with `oe store migrate`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "oe/common/result.hpp"
#include "oe/pg/connection.hpp"

namespace oe::pg {

struct Migration {
  int version;
  std::string_view description;
  std::string_view sql;
};

// Every migration, oldest first; versions are 1, 2, 3, ... without gaps.
[[nodiscard]] const std::vector<Migration>& migrations();
[[nodiscard]] int latestVersion();

struct MigrateReport {
  int from = 0;  // the version the database had (0: none of oe's tables)
  int to = 0;
};

// Applies the migrations the database lacks, each in its own transaction, under an advisory lock
// so that two oe processes starting at once do not both migrate. A database newer than this oe
// (a later version migrated it) is an error that says to upgrade oe. `target` stops at an older
// version (the tests build a store as an earlier oe left it).
Result<MigrateReport> migrate(Connection& conn, int target = latestVersion());

// The version the database is at (0 when oe never migrated it).
Result<int> currentVersion(Connection& conn);

}  // namespace oe::pg

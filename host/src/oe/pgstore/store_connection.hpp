// What every pgstore component does with its own connection: open it (retrying while the server
// is not there) and migrate the schema; run a statement again once after reconnecting when the
// server went away between two statements.
#pragma once

#include <chrono>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/pg/connection.hpp"

namespace oe::pgstore {

using pg::arrayLiteral;

// Connects and migrates (cheap when up to date); the error names the redacted URL.
Result<std::unique_ptr<pg::Connection>> connect(const std::string& url,
                                                std::chrono::milliseconds retry_for,
                                                std::string application_name);

// One statement outside a transaction; a lost connection is reopened (with the connection's
// backoff) and the statement sent once more. Only for statements that may run twice.
Result<pg::Rows> execRetrying(pg::Connection& conn, std::string_view sql,
                              std::initializer_list<pg::Param> params = {});
Result<pg::Rows> execRetrying(pg::Connection& conn, std::string_view sql,
                              const std::vector<pg::Param>& params);


}  // namespace oe::pgstore

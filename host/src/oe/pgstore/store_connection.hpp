// What every pgstore component does with its own connection: open it (retrying while the server
// is not there) and migrate the schema; run a statement again after reconnecting when the
// server went away between two statements or before its answer came.
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

// Connects (trying for `retry_for`) and migrates (cheap when up to date); the error names the
// redacted URL. With a Patience (a run's components), a connection lost later is waited for as
// long as it takes, saying so every 30 s, until the Patience is interrupted (the run stops),
// and a reply that never comes is given up after pg::kReplyTimeout. Without one (a one-shot
// command), a lost connection is retried for `retry_for`.
Result<std::unique_ptr<pg::Connection>> connect(const std::string& url,
                                                std::chrono::milliseconds retry_for,
                                                std::string application_name,
                                                std::shared_ptr<pg::Patience> patience = nullptr);

// One statement outside a transaction; a lost connection is reopened (with the connection's
// backoff) and the statement sent again: once, or, on a connection that waits forever, until
// it lands or the wait is interrupted. Only for statements that may run twice (each
// write carries its identity: a unique key the database enforces).
Result<pg::Rows> execRetrying(pg::Connection& conn, std::string_view sql,
                              std::initializer_list<pg::Param> params = {});
Result<pg::Rows> execRetrying(pg::Connection& conn, std::string_view sql,
                              const std::vector<pg::Param>& params);

}  // namespace oe::pgstore

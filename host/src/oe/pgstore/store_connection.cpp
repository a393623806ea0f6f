// connect, execRetrying: the connection habits of the pgstore components.
#include "oe/pgstore/store_connection.hpp"

#include "oe/pg/schema.hpp"

namespace oe::pgstore {

Result<std::unique_ptr<pg::Connection>> connect(const std::string& url,
                                                std::chrono::milliseconds retry_for,
                                                std::string application_name,
                                                std::shared_ptr<pg::Patience> patience) {
  pg::ConnectOptions options = pg::retrying(retry_for, std::move(application_name));
  if (patience) {
    options.reconnect_for = pg::kForever;
    options.patience = std::move(patience);
    options.reply_timeout = pg::kReplyTimeout;
  }
  auto conn = pg::Connection::open(url, std::move(options));
  if (!conn) {
    return makeError("cannot connect to the store " + pg::redact(url) + ": " +
                     conn.error().message);
  }
  if (auto migrated = pg::migrate(**conn); !migrated) {
    return makeError("cannot migrate the store " + pg::redact(url) + ": " +
                     migrated.error().message);
  }
  return std::move(*conn);
}

Result<pg::Rows> execRetrying(pg::Connection& conn, std::string_view sql,
                              std::initializer_list<pg::Param> params) {
  return execRetrying(conn, sql, std::vector<pg::Param>(params));
}

Result<pg::Rows> execRetrying(pg::Connection& conn, std::string_view sql,
                              const std::vector<pg::Param>& params) {
  const bool forever = conn.options().reconnect_for == pg::kForever;
  auto rows = conn.exec(sql, params);
  for (int resent = 0; !rows && conn.lastFailure() == pg::Failure::kConnection &&
                       (forever || resent < 1);
       ++resent) {
    if (auto back = conn.reconnect(); !back) {
      return makeError(rows.error().message + "; " + back.error().message);
    }
    rows = conn.exec(sql, params);
  }
  return rows;
}

}  // namespace oe::pgstore

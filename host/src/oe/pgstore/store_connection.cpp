// connect, execRetrying: the connection habits of the pgstore components.
#include "oe/pgstore/store_connection.hpp"

#include "oe/pg/schema.hpp"

namespace oe::pgstore {

Result<std::unique_ptr<pg::Connection>> connect(const std::string& url,
                                                std::chrono::milliseconds retry_for,
                                                std::string application_name) {
  auto conn = pg::Connection::open(
      url, {.retry_for = retry_for, .application_name = std::move(application_name)});
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
  auto rows = conn.exec(sql, params);
  if (!rows && conn.lastFailure() == pg::Failure::kConnection && conn.reconnect()) {
    rows = conn.exec(sql, params);
  }
  return rows;
}


}  // namespace oe::pgstore

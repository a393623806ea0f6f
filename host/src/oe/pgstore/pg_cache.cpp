// PgCache: get/put/touch over oe_cache.
#include "oe/pgstore/pg_cache.hpp"

#include "oe/pgstore/store_connection.hpp"

namespace oe::pgstore {

Result<std::unique_ptr<PgCache>> PgCache::open(const std::string& url,
                                               std::chrono::milliseconds retry_for) {
  auto conn = connect(url, retry_for, "oe cache");
  if (!conn) {
    return conn.error();
  }
  return std::make_unique<PgCache>(std::move(*conn));
}

PgCache::PgCache(std::unique_ptr<pg::Connection> conn) : conn_(std::move(conn)) {}

std::string PgCache::describe() const { return "PostgreSQL " + pg::redact(conn_->url()); }

std::optional<std::string> PgCache::get(std::string_view key) {
  // A failed lookup is a miss: the node runs again, as with an unreadable SQLite entry.
  auto rows = execRetrying(*conn_, "SELECT value FROM oe_cache WHERE key = $1", {key});
  if (!rows || rows->empty()) {
    return std::nullopt;
  }
  return std::string(rows->text(0, 0));
}

Result<void> PgCache::put(std::string_view key, std::string_view node_id, std::string_view run_id,
                          std::string_view output) {
  auto r = execRetrying(
      *conn_,
      "INSERT INTO oe_cache (key, node_id, run_id, value) VALUES ($1, $2, $3, $4) ON CONFLICT "
      "(key) DO UPDATE SET node_id = excluded.node_id, run_id = excluded.run_id, "
      "value = excluded.value, created_at = now(), used_at = now()",
      {key, node_id, run_id, output});
  if (!r) {
    return r.error();
  }
  return {};
}

Result<void> PgCache::touch(const std::vector<std::string>& keys, std::string_view run_id) {
  const std::string array =
      arrayLiteral(std::vector<std::optional<std::string_view>>(keys.begin(), keys.end()));
  auto r = execRetrying(
      *conn_, "UPDATE oe_cache SET used_at = now(), last_used_run = $2 WHERE key = ANY($1)",
      {array, run_id});
  if (!r) {
    return makeError("cannot record the cache entries run " + std::string(run_id) +
                     " replayed in " + describe() + ": " + r.error().message);
  }
  return {};
}

}  // namespace oe::pgstore

// PgCache: get/put/touch over oe_cache.
#include "oe/pgstore/pg_cache.hpp"

#include "oe/pgstore/store_connection.hpp"

namespace oe::pgstore {

Result<std::unique_ptr<PgCache>> PgCache::open(const std::string& url,
                                               std::chrono::milliseconds retry_for,
                                               std::shared_ptr<ScopeFence> fence) {
  auto conn = connect(url, retry_for, "oe cache", fence ? fence->patience() : nullptr);
  if (!conn) {
    return conn.error();
  }
  return std::make_unique<PgCache>(std::move(*conn), std::move(fence));
}

PgCache::PgCache(std::unique_ptr<pg::Connection> conn, std::shared_ptr<ScopeFence> fence)
    : conn_(std::move(conn)),
      fence_(std::move(fence)),
      scope_(fence_ ? fence_->scope() : std::string()) {}

std::string PgCache::describe() const { return "PostgreSQL " + pg::redact(conn_->url()); }

std::optional<std::string> PgCache::get(std::string_view key) {
  // A failed lookup is a miss: the node runs again, as with an unreadable SQLite entry.
  auto rows = execRetrying(*conn_, "SELECT value FROM oe_cache WHERE key = $1", {key});
  if (!rows || rows->empty()) {
    return std::nullopt;
  }
  return std::string(rows->text(0, 0));
}

Result<void> PgCache::fenced(const Result<pg::Rows>& rows) {
  if (!rows) {
    return rows.error();
  }
  if (rows->size() != 1 || !rows->boolean(0, 0)) {
    return makeError(fence_ ? fence_->lost() : ScopeFence::message(scope_));
  }
  return {};
}

Result<void> PgCache::put(std::string_view key, std::string_view node_id, std::string_view run_id,
                          std::string_view output) {
  // The key is the entry's identity (a put sent twice writes the same row); the fence keeps a
  // coordinator that lost its scope from writing.
  static const std::string sql =
      "WITH fence AS (SELECT " + ScopeFence::condition(5, 6) +
      " AS ok), put AS (INSERT INTO oe_cache (key, node_id, run_id, value) SELECT $1, $2, $3, $4 "
      "WHERE (SELECT ok FROM fence) ON CONFLICT (key) DO UPDATE SET node_id = excluded.node_id, "
      "run_id = excluded.run_id, value = excluded.value, created_at = now(), used_at = now()) "
      "SELECT ok FROM fence";
  auto put = fenced(execRetrying(*conn_, sql,
                                 {key, node_id, run_id, output, scope_, epochOf(fence_)}));
  if (!put) {
    return makeError("cannot store the cache entry of node " + std::string(node_id) + " in " +
                     describe() + ": " + put.error().message);
  }
  return {};
}

Result<void> PgCache::touch(const std::vector<std::string>& keys, std::string_view run_id) {
  static const std::string sql =
      "WITH fence AS (SELECT " + ScopeFence::condition(3, 4) +
      " AS ok), used AS (UPDATE oe_cache SET used_at = now(), last_used_run = $2 WHERE key = "
      "ANY($1) AND (SELECT ok FROM fence)) SELECT ok FROM fence";
  const std::string array =
      arrayLiteral(std::vector<std::optional<std::string_view>>(keys.begin(), keys.end()));
  auto touched = fenced(execRetrying(*conn_, sql, {array, run_id, scope_, epochOf(fence_)}));
  if (!touched) {
    return makeError("cannot record the cache entries run " + std::string(run_id) +
                     " replayed in " + describe() + ": " + touched.error().message);
  }
  return {};
}

namespace {

// The scope's entries: those whose writing run is one of the scope's (oe_cache has no scope:
// its key covers the node's inputs, so two scopes could share an entry; it counts for the
// scope that wrote it).
constexpr std::string_view kOfScope =
    "FROM oe_cache c WHERE c.run_id IN (SELECT run_id FROM oe_runs WHERE scope = $1)";

constexpr std::string_view kTs = "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'";

}  // namespace

Result<std::vector<cache::CacheEntry>> scopeCacheEntries(pg::Connection& conn,
                                                         const std::string& scope) {
  auto rows = conn.exec(
      "SELECT c.key, c.node_id, c.run_id, to_char(c.created_at AT TIME ZONE 'UTC', " +
          std::string(kTs) + "), octet_length(c.value), coalesce(c.last_used_run, ''), " +
          "CASE WHEN c.last_used_run IS NULL THEN '' ELSE to_char(c.used_at AT TIME ZONE 'UTC', " +
          std::string(kTs) + ") END " + std::string(kOfScope) + " ORDER BY c.created_at, c.key",
      {scope});
  if (!rows) {
    return makeError("cannot list the cache of scope \"" + scope + "\" in " +
                     pg::redact(conn.url()) + ": " + rows.error().message);
  }
  std::vector<cache::CacheEntry> out;
  for (int i = 0; i < rows->size(); ++i) {
    cache::CacheEntry e;
    e.key = rows->text(i, 0);
    e.node_id = rows->text(i, 1);
    e.run_id = rows->text(i, 2);
    e.created_at = rows->text(i, 3);
    e.size_bytes = static_cast<size_t>(rows->int64(i, 4));
    e.last_used_run = rows->text(i, 5);
    e.last_used_at = rows->text(i, 6);
    out.push_back(std::move(e));
  }
  return out;
}

Result<int64_t> clearScopeCache(pg::Connection& conn, const std::string& scope) {
  auto rows = conn.exec("WITH gone AS (DELETE " + std::string(kOfScope) +
                            " RETURNING 1) SELECT count(*) FROM gone",
                        {scope});
  if (!rows) {
    return makeError("cannot clear the cache of scope \"" + scope + "\" in " +
                     pg::redact(conn.url()) + ": " + rows.error().message);
  }
  return rows->int64(0, 0);
}

}  // namespace oe::pgstore

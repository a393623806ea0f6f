// The node cache in oe_cache (docs/storage.md): one table shared by every coordinator and worker
// of a database, keyed by cache::cacheKey (the key covers the node's inputs, so no scope).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "oe/cache/cache_store.hpp"
#include "oe/cache/remote_cache.hpp"
#include "oe/pg/connection.hpp"
#include "oe/pgstore/fence.hpp"

namespace oe::pgstore {

// With a fence (a run's cache), put and touch write only while the run holds its scope's
// epoch, and a lost connection is waited for until the run stops.
class PgCache : public cache::RemoteCache {
 public:
  static Result<std::unique_ptr<PgCache>> open(const std::string& url,
                                               std::chrono::milliseconds retry_for,
                                               std::shared_ptr<ScopeFence> fence = nullptr);
  explicit PgCache(std::unique_ptr<pg::Connection> conn,
                   std::shared_ptr<ScopeFence> fence = nullptr);

  std::optional<std::string> get(std::string_view key) override;
  Result<void> put(std::string_view key, std::string_view node_id, std::string_view run_id,
                   std::string_view output) override;
  Result<void> touch(const std::vector<std::string>& keys, std::string_view run_id) override;
  [[nodiscard]] std::string describe() const override;

 private:
  // The fence's answer: an error (and the run told) when it no longer holds.
  Result<void> fenced(const Result<pg::Rows>& rows);

  std::unique_ptr<pg::Connection> conn_;
  std::shared_ptr<ScopeFence> fence_;
  std::string scope_;  // the fence's, or "" (no fence)
};

// The entries that runs of `scope` wrote (`oe cache ls --store URL`), oldest first.
Result<std::vector<cache::CacheEntry>> scopeCacheEntries(pg::Connection& conn,
                                                         const std::string& scope);
// Deletes them (`oe cache clear --yes --store URL`; the caller holds the scope); how many went.
Result<int64_t> clearScopeCache(pg::Connection& conn, const std::string& scope);

}  // namespace oe::pgstore

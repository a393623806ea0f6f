// Where a CacheStore keeps its entries when they are shared by several machines: the interface
// the PostgreSQL cache (pgstore/pg_cache.hpp) implements. The keys are cacheKey()'s either way.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/result.hpp"

namespace oe::cache {

// Called under the CacheStore's lock: one thread at a time.
class RemoteCache {
 public:
  virtual ~RemoteCache() = default;
  // The output (JSON text) stored under `key`; nullopt on a miss or when unreadable (a miss).
  virtual std::optional<std::string> get(std::string_view key) = 0;
  // Inserts or replaces the entry; durable when it returns.
  virtual Result<void> put(std::string_view key, std::string_view node_id, std::string_view run_id,
                           std::string_view output) = 0;
  // Records that `run_id` replayed `keys` (CacheStore::touch).
  virtual Result<void> touch(const std::vector<std::string>& keys, std::string_view run_id) = 0;
  [[nodiscard]] virtual std::string describe() const = 0;
};

}  // namespace oe::cache

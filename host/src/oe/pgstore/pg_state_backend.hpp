// The PostgreSQL StateBackend: one experience's state (its `scope`) in the tables
// oe_state_snapshot, oe_state_history and oe_landed_writes (docs/storage.md).
#pragma once

#include <memory>
#include <string>

#include "oe/pg/connection.hpp"
#include "oe/state/state_backend.hpp"

namespace oe::pgstore {

// One connection of its own (a StateStore is used from the scheduler's thread only). Each
// write() is one transaction; a lost connection reconnects with backoff and retries it, and a
// retry that finds the write's rows already there (its COMMIT had landed) does nothing.
class PgStateBackend : public state::StateBackend {
 public:
  // Connects (retrying for `retry_for`) and migrates the schema.
  static Result<std::unique_ptr<PgStateBackend>> open(const std::string& url, std::string scope,
                                                      std::chrono::milliseconds retry_for);

  PgStateBackend(std::unique_ptr<pg::Connection> conn, std::string scope);

  Result<std::vector<std::pair<std::string, std::string>>> loadSnapshot() override;
  Result<std::unordered_map<std::string, std::string>> landedWrites(
      std::string_view chain_id) override;
  Result<void> write(const state::BackendWrite& write) override;
  Result<std::vector<state::HistoryRow>> history(std::string_view key, bool by_run) override;
  [[nodiscard]] std::string describe() const override;

 private:
  std::unique_ptr<pg::Connection> conn_;
  std::string scope_;
};

// Deletes every row of `scope`'s state (snapshot, history, landed marks): `--fresh` and
// `oe reset-state` on a PostgreSQL store.
Result<void> resetState(pg::Connection& conn, const std::string& scope);

}  // namespace oe::pgstore

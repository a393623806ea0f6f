// The PostgreSQL StateBackend: one experience's state (its `scope`) in the tables
// oe_state_snapshot, oe_state_history and oe_landed_writes (docs/storage.md).
#pragma once

#include <memory>
#include <string>

#include "oe/pg/connection.hpp"
#include "oe/pgstore/fence.hpp"
#include "oe/state/state_backend.hpp"

namespace oe::pgstore {

// One connection of its own (a StateStore is used from the scheduler's thread only). Each
// write() is one statement, claiming the write's id (oe_state_writes) and checking the run's
// scope epoch (its fence) in the same statement; a lost connection reconnects with backoff and
// sends it again (for as long as the run waits for the store, with a fence), and a retry whose
// first try had landed, or is still running, writes nothing. A write the fence refuses fails
// with "another coordinator took scope ..." and tells the fence (the run stops).
class PgStateBackend : public state::StateBackend {
 public:
  // Connects (retrying for `retry_for`) and migrates the schema. Without a fence (reading
  // commands, tests), writes are not fenced and a lost connection is retried for `retry_for`.
  static Result<std::unique_ptr<PgStateBackend>> open(const std::string& url, std::string scope,
                                                      std::chrono::milliseconds retry_for,
                                                      std::shared_ptr<ScopeFence> fence = nullptr);

  PgStateBackend(std::unique_ptr<pg::Connection> conn, std::string scope,
                 std::shared_ptr<ScopeFence> fence = nullptr);

  Result<std::vector<std::pair<std::string, std::string>>> loadSnapshot() override;
  Result<std::unordered_map<std::string, std::string>> landedWrites(
      std::string_view chain_id) override;
  Result<void> write(const state::BackendWrite& write) override;
  Result<std::vector<state::HistoryRow>> history(std::string_view key, bool by_run) override;
  [[nodiscard]] std::string describe() const override;

 private:
  std::unique_ptr<pg::Connection> conn_;
  std::string scope_;
  std::shared_ptr<ScopeFence> fence_;
};

// Every field's stored value of `scope` (field, JSON text): what the store holds, for a check
// against what a run computed.
Result<std::vector<std::pair<std::string, std::string>>> loadScopeSnapshot(
    pg::Connection& conn, const std::string& scope);

// Deletes every row of `scope`'s state (snapshot, history, landed marks, write claims):
// `--fresh` and `oe reset-state` on a PostgreSQL store.
Result<void> resetState(pg::Connection& conn, const std::string& scope);

}  // namespace oe::pgstore

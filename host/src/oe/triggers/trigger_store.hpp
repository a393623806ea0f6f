// What the triggers remember (docs/serve.md, "Triggers"): each (experience, trigger, scheduled
// time) that fired, claimed in one transaction so that no time fires twice across restarts and
// across the `oe serve` instances sharing a store; the webhook deliveries seen, for replay
// protection; and, on PostgreSQL, which instance schedules. SQLite (triggers.sqlite in the
// root's .openexpertise/) or PostgreSQL (oe_trigger_fires, oe_webhook_deliveries).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "oe/common/result.hpp"

namespace oe::triggers {

// The SQLite file in a `.openexpertise/` folder.
[[nodiscard]] std::filesystem::path storePath(const std::filesystem::path& workspace_dir);

// How long a webhook delivery id is remembered: a replay after that is a new delivery. GitHub
// redelivers on request for up to 3 days; a week covers it.
inline constexpr int64_t kDeliveryRetentionMs = int64_t{7} * 24 * 3600 * 1000;

// Thread-safe: the scheduler's thread and the HTTP handlers share one store.
class TriggerStore {
 public:
  // `where`: a PostgreSQL URL (pg::isUrl; migrated to oe's latest schema), or a SQLite path.
  static Result<std::unique_ptr<TriggerStore>> open(const std::string& where);
  virtual ~TriggerStore() = default;
  TriggerStore() = default;
  TriggerStore(const TriggerStore&) = delete;
  TriggerStore& operator=(const TriggerStore&) = delete;

  // Records that the trigger fired for `scheduled_ms` (milliseconds since the epoch): true when
  // this call recorded it, false when it was recorded before, by this instance or another.
  virtual Result<bool> claimFire(std::string_view experience, std::string_view trigger_id,
                                 int64_t scheduled_ms) = 0;
  // The latest scheduled time recorded for the trigger.
  virtual Result<std::optional<int64_t>> lastFire(std::string_view experience,
                                                  std::string_view trigger_id) = 0;
  // Records a delivery id of a webhook: true when it is new, false for a replay. Forgets the
  // deliveries received before now_ms - retention_ms first.
  virtual Result<bool> claimDelivery(std::string_view experience, std::string_view hook,
                                     std::string_view delivery_id, int64_t now_ms,
                                     int64_t retention_ms = kDeliveryRetentionMs) = 0;
  // True when this instance is (or has just become) the one that schedules. PostgreSQL: a
  // session advisory lock, which the server releases when the holder's connection ends (the
  // process died, the network went), so another instance takes over at its next try. SQLite:
  // always true (the claims alone keep two processes on one file from firing a time twice).
  virtual Result<bool> tryLead() = 0;
  // Gives leadership up (a clean stop), so another instance need not wait for the crash path.
  virtual void releaseLead() {}
};

Result<std::unique_ptr<TriggerStore>> openSqliteTriggerStore(const std::filesystem::path& path);
Result<std::unique_ptr<TriggerStore>> openPgTriggerStore(const std::string& url);

}  // namespace oe::triggers

// Durable human approvals (docs/policy.md, "Approvals"): the questions a parked run asks and
// the decisions people give, in one SQLite file beside the run logs (approvals.sqlite). A run
// records its question before it parks; `oe approve` / `oe reject` (or a passed deadline)
// decide it in one conditional UPDATE, so of two deciders at once exactly one wins and the
// other reads back who did. Keyed by the chain of runs and the node: a decision holds for the
// whole chain (a resume reads it back), a fresh run asks again.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"

namespace oe::approvals {

// The file in an experience's `.openexpertise/` folder (spec::workspaceDir).
[[nodiscard]] std::filesystem::path storePath(const std::filesystem::path& workspace_dir);

// Milliseconds since the epoch as approvals see them: OE_APPROVALS_NOW (ISO-8601 UTC, as oe
// writes it, or milliseconds) when set, the tests' simulated clock; else the real clock.
[[nodiscard]] int64_t nowMs();
[[nodiscard]] std::string isoOfMs(int64_t ms);

// What decided: "approved", "rejected", or "expired" (a deadline under on_timeout: fail).
struct Decision {
  std::string decision;
  std::string by;  // --as NAME, else the user; "timeout" for a passed deadline
  std::string at;  // ISO-8601 UTC
  std::string comment;
  bool timed_out = false;

  [[nodiscard]] bool approved() const { return decision == "approved"; }
  // {"decision", "approved", "by", "at", "comment", "timed_out"}: the node's output.
  [[nodiscard]] Json toJson() const;
};

struct Request {
  std::string chain_id;
  std::string node_id;
  std::string run_id;  // the run that asked (and parked)
  std::string prompt;
  Json shown = Json::object();  // each `show:` entry and what it was when asked
  std::string requested_at;
  int64_t deadline_ms = -1;  // -1: none
  std::string on_timeout;    // approve | reject | fail
  std::optional<Decision> decision;

  [[nodiscard]] Json toJson() const;
};

struct DecideResult {
  bool won = false;  // false: it was decided before (request.decision says by whom)
  Request request;
};

// The approvals of one place: SQLite (approvals.sqlite beside the run logs) or a PostgreSQL
// store (its oe_approvals table, so a decision can come from any machine).
class Store {
 public:
  // `where`: a PostgreSQL URL (pg::isUrl), or the path of the SQLite file.
  static Result<std::unique_ptr<Store>> open(const std::string& where);
  virtual ~Store() = default;
  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Records `request` unless (chain, node) asked already; returns the stored request (its first
  // deadline stands: a run that parks again does not extend it).
  virtual Result<Request> ask(const Request& request) = 0;
  virtual Result<std::optional<Request>> find(std::string_view chain_id,
                                              std::string_view node_id) = 0;
  // The requests of a chain (or every one, chain empty), oldest first.
  virtual Result<std::vector<Request>> list(std::string_view chain_id = {}) = 0;
  // Decides (chain, node) when nobody has: exactly one of concurrent deciders wins. An error
  // when the chain never asked about that node.
  virtual Result<DecideResult> decide(std::string_view chain_id, std::string_view node_id,
                                      const Decision& decision) = 0;
  // A request whose deadline has passed at `now_ms` and is undecided: decided by its
  // on_timeout (by "timeout"). Returns the request as it now stands.
  Result<Request> settleTimeout(const Request& request, int64_t now_ms);
};

// The two backends (approval_store.cpp, pg_approval_store.cpp); Store::open picks one.
Result<std::unique_ptr<Store>> openSqliteStore(const std::filesystem::path& path);
Result<std::unique_ptr<Store>> openPgStore(const std::string& url);

}  // namespace oe::approvals

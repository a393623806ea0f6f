// pruneScope: `oe gc` against the store's tables.
#include "oe/pgstore/gc.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace oe::pgstore {

namespace {

struct Target {
  const char* name;   // for the error message
  const char* table;  // with the alias the condition uses
  // $1 scope, $2 removed runs, $3 kept runs, $4 kept chains, $5 the chains whose marks may go
  // (null: any; GcPolicy::runs: the removed runs' chains)
  const char* where;
  const char* bytes;  // what a row weighs
  int64_t GcReport::*count;
};

// Order matters only for the runs, which go last (the other conditions read them).
constexpr Target kTargets[] = {
    {"events", "oe_events e", "e.run_id = ANY($2::text[])", "octet_length(e.line)",
     &GcReport::events},
    {"attempts", "oe_attempts a", "a.run_id = ANY($2::text[])",
     "octet_length(a.request) + coalesce(octet_length(a.response), 0)", &GcReport::attempts},
    {"cache entries", "oe_cache c",
     "c.run_id = ANY($2::text[]) AND (c.last_used_run IS NULL OR "
     "NOT (c.last_used_run = ANY($3::text[])))",
     "octet_length(c.value)", &GcReport::cache_entries},
    {"state history rows", "oe_state_history h",
     "h.scope = $1 AND h.run_id = ANY($2::text[]) AND h.id < (SELECT max(b.id) FROM "
     "oe_state_history b WHERE b.scope = $1 AND b.field = h.field AND b.append_from IS NULL)",
     "coalesce(octet_length(h.value_old), 0) + octet_length(h.value_new)",
     &GcReport::history_rows},
    {"write claims", "oe_state_writes w", "w.scope = $1 AND w.run_id = ANY($2::text[])",
     "octet_length(w.write_id)", &GcReport::write_claims},
    {"landed-write marks", "oe_landed_writes l",
     "l.scope = $1 AND ($5::text[] IS NULL OR l.chain_id = ANY($5::text[])) AND "
     "NOT (l.chain_id = ANY($3::text[])) AND NOT (l.chain_id = ANY($4::text[])) "
     "AND l.chain_id NOT IN (SELECT k.chain_id FROM oe_landed_writes k WHERE k.scope = $1 AND "
     "k.run_id = ANY($3::text[]))",
     "octet_length(l.write_key)", &GcReport::landed_marks},
};

}  // namespace

Result<GcReport> pruneScope(pg::Connection& conn, const std::string& scope,
                            const GcPolicy& policy) {
  GcReport report;
  const std::string where = "scope \"" + scope + "\" in " + pg::redact(conn.url());
  auto work = [&](pg::Connection& c) -> Result<void> {
    report = GcReport{};
    const bool chosen = !policy.runs.empty();
    // Removing chosen runs without the scope's lock (see gc.hpp): the scope's row in share mode
    // until the commit, so a run taking the scope (takeScope's UPDATE) waits, and who took it
    // last. A run takes the scope, then writes its oe_runs row: when the taker's row is not
    // there yet, that run is starting and its chain is not known, so no mark goes this time.
    std::optional<std::string> taker;
    if (chosen) {
      auto held = c.exec("SELECT run_id FROM oe_scopes WHERE scope = $1 FOR SHARE", {scope});
      if (!held) {
        return held.error();
      }
      if (held->size() == 1 && !held->isNull(0, 0)) {
        taker = std::string(held->text(0, 0));
      }
    }
    auto runs = c.exec(
        "SELECT run_id, chain_id, (extract(epoch FROM now() - started_at) * 1000)::bigint "
        "FROM oe_runs WHERE scope = $1 ORDER BY started_at DESC, run_id DESC",
        {scope});
    if (!runs) {
      return runs.error();
    }
    std::vector<std::string> kept_chains;
    std::vector<std::string> removed_chains;
    bool taker_listed = false;
    for (int i = 0; i < runs->size(); ++i) {
      const std::string id(runs->text(i, 0));
      taker_listed = taker_listed || (taker && *taker == id);
      const bool prune =
          chosen ? std::find(policy.runs.begin(), policy.runs.end(), id) != policy.runs.end()
                 : (policy.keep && i >= *policy.keep) ||
                       (policy.max_age_ms && runs->int64(i, 2) > *policy.max_age_ms);
      if (prune) {
        report.removed.push_back(id);
        removed_chains.emplace_back(runs->text(i, 1));
      } else {
        report.kept.push_back(id);
        kept_chains.emplace_back(runs->text(i, 1));
      }
    }
    if (report.removed.empty()) {
      return {};
    }
    // An oe command takes the scope as "oe host:pid" (holdScope), never a run id.
    if (chosen && taker && !taker_listed && !taker->starts_with("oe ")) {
      removed_chains.clear();
    }
    const std::vector<pg::Param> params{
        scope, pg::arrayLiteral(report.removed), pg::arrayLiteral(report.kept),
        pg::arrayLiteral(kept_chains),
        chosen ? pg::Param(pg::arrayLiteral(removed_chains)) : pg::Param(nullptr)};
    for (const Target& t : kTargets) {
      const std::string rows = std::string("SELECT ") + t.bytes + " AS bytes FROM " + t.table +
                               " WHERE " + t.where;
      // Every statement types the four parameters, whichever of them its condition uses.
      const std::string typed =
          "WITH p AS (SELECT $1::text AS scope, $2::text[] AS removed, $3::text[] AS kept, "
          "$4::text[] AS chains, $5::text[] AS marked) ";
      const std::string sql =
          policy.dry_run
              ? typed + "SELECT count(*), coalesce(sum(bytes), 0)::bigint FROM (" + rows + ") r"
              : typed.substr(0, typed.size() - 1) + ", gone AS (DELETE FROM " + t.table + " WHERE " + t.where + " RETURNING " +
                    t.bytes + " AS bytes) SELECT count(*), coalesce(sum(bytes), 0)::bigint FROM gone";
      auto counted = c.exec(sql, params);
      if (!counted) {
        return makeError("cannot prune the " + std::string(t.name) + ": " +
                         counted.error().message);
      }
      report.*(t.count) = counted->int64(0, 0);
      report.bytes += counted->int64(0, 1);
    }
    if (!policy.dry_run) {
      auto gone = c.exec("DELETE FROM oe_runs WHERE scope = $1 AND run_id = ANY($2::text[])",
                         {scope, pg::arrayLiteral(report.removed)});
      if (!gone) {
        return makeError("cannot prune the run records: " + gone.error().message);
      }
    }
    return {};
  };
  if (auto done = conn.transaction(work); !done) {
    return makeError("oe gc on " + where + ": " + done.error().message);
  }
  return report;
}

}  // namespace oe::pgstore

// What a run report shows, as data: a run's log, the logs of its nested runs, the experience as
// it is now, the state rows the run wrote and the edge outputs its cache entries hold, read from
// the file store or from PostgreSQL. report/run_report renders it as HTML.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"
#include "oe/pg/connection.hpp"
#include "oe/runs/run_history.hpp"
#include "oe/spec/experience.hpp"
#include "oe/state/state_store.hpp"

namespace oe::runs {

struct RunReportInput {
  std::string run_id;
  std::vector<Json> events;  // the run's log, in file order
  // The logs of nested runs, by the `sub_event_log` path their node.activity names (those of
  // nested runs' nested runs too); a path missing here is reported as not read.
  std::map<std::string, std::vector<Json>> nested;
  // The experience as it is now, for the graph, the kinds and the node args; nullopt: no graph.
  std::optional<spec::Experience> experience;
  std::vector<state::HistoryRow> state_rows;  // this run's state writes, with their values
  std::map<std::string, Json> edge_outputs;   // node id -> the edge_output it handed on
  std::vector<std::string> notes;             // what could not be read, shown on the page
};

// Everything the report shows about `run` of the experience `experience_path` names (a folder
// holding experience.yaml, or the yaml file, as --experience takes it): its log, the
// logs of its nested runs, the experience (if it still loads), this run's state history rows and
// the edge outputs its cache entries hold. Fails only when the run's log cannot be read; any
// other missing piece becomes a note.
Result<RunReportInput> loadRunReport(const std::filesystem::path& experience_path,
                                     const runs::RunRecord& run);

// The same for run `run_id` of a PostgreSQL store (`oe inspect --store URL --html`): its log from
// oe_events, its state rows from its scope (the experience's name), its edge outputs from
// oe_cache; the experience from `experience_path` on this machine, as it is now.
Result<RunReportInput> loadStoreRunReport(pg::Connection& conn,
                                          const std::filesystem::path& experience_path,
                                          const std::string& run_id);

}  // namespace oe::runs

// What a run report shows, as data: a run's log, the logs of its nested runs, the experience as
// it is now, the state rows the run wrote and the edge outputs its cache entries hold, read from
// the file store or from PostgreSQL. report/run_report renders it as HTML.
#pragma once

#include <cstddef>
#include <cstdint>
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

// How much of the diffs of `workspace: worktree` nodes a report carries (docs/workspaces.md):
// each diff's first 64 KiB, and 1 MiB of them in all, so that a for_each of many items that each
// rewrote a lock file still makes a page a browser opens. Past either, the report names the file.
inline constexpr size_t kReportDiffBytes = size_t{64} * 1024;
inline constexpr size_t kReportDiffBudget = size_t{1024} * 1024;

// A diff artifact (.openexpertise/artifacts/<sha256>.diff) as a report shows it.
struct DiffText {
  std::string text;   // its beginning, cut after a whole line; all of it when size fits
  uint64_t size = 0;  // its whole size, in bytes
  std::string error;  // why there is no text: the file is not here, or the budget is spent
};

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
  std::map<std::string, DiffText> diffs;      // artifact id -> the diff its node.diff names
  std::vector<std::string> notes;             // what could not be read, shown on the page
};

// Everything the report shows about `run` of the experience `experience_path` names (a folder
// holding experience.yaml, or the yaml file, as --experience takes it): its log, the
// logs of its nested runs, the experience (if it still loads), this run's state history rows,
// the edge outputs its cache entries hold and the diffs its node.diff events name. Fails only
// when the run's log cannot be read; any other missing piece becomes a note.
Result<RunReportInput> loadRunReport(const std::filesystem::path& experience_path,
                                     const runs::RunRecord& run);

// The same for run `run_id` of a PostgreSQL store (`oe inspect --store URL --html`): its log from
// oe_events, its state rows from its scope (the experience's name), its edge outputs from
// oe_cache; the experience, and the diffs in its folder, from `experience_path` on this machine,
// as they are now.
Result<RunReportInput> loadStoreRunReport(pg::Connection& conn,
                                          const std::filesystem::path& experience_path,
                                          const std::string& run_id);

}  // namespace oe::runs

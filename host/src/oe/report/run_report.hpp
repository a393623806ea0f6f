// `oe inspect <run> --html`: a run's report as one self-contained HTML page (no script, nothing
// fetched): totals, the graph coloured by node status, a Gantt of the node calls and per-node
// detail (with the diffs of worktree attempts). runReportHtml is a pure function of what
// runs::loadRunReport reads from the files.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "oe/common/result.hpp"
#include "oe/runs/report_input.hpp"

namespace oe::report {

using runs::RunReportInput;

// The page. Every value from the input is HTML-escaped; long values are shortened.
[[nodiscard]] std::string runReportHtml(const RunReportInput& input);

// The whole of `oe inspect <run-id> --html` without the CLI (for an MCP tool): the run is found
// as `oe inspect` finds it (a unique id prefix, or the newest with `last`).
Result<std::string> inspectHtml(const std::filesystem::path& experience_path,
                                std::string_view run_id, bool last);

}  // namespace oe::report

// The run a command names (`oe inspect`, `oe resume`): runs/run_history's lookup, with the
// message on stderr that a bad invocation gets. The run records themselves live in runs/.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

#include "oe/runs/run_history.hpp"

namespace oe::cli {

using runs::findRun;
using runs::humanBytes;
using runs::listRuns;
using runs::nowMs;
using runs::parseDurationMs;
using runs::parseIsoMs;
using runs::RunRecord;

// findRun in the runs of the experience `experience_arg` names (--experience). nullopt, after
// saying why on stderr, when there is no experience there or no such run (exit 2); a run id
// is needed unless `last`.
std::optional<RunRecord> resolveRun(const std::filesystem::path& experience_arg,
                                    std::string_view id, bool last);

}  // namespace oe::cli

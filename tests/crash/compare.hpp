// The oracle's comparison: the faulted chain of runs' final state against one uninterrupted
// run's, exactly under runtime.deterministic, and with array_append fields as multisets
// otherwise (the documented equivalence: items land in completion order); and what was
// executed, from the tools' exec.log lines and the fake model's requests.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "crash/case_gen.hpp"

namespace oe::crash {

using Json = nlohmann::json;

// Every difference, one line each, with what it looks like: a duplicated or lost
// array_append item (by its writer's identity), an item written from other inputs, a
// last_wins value that is an earlier writer's (rolled back), a missing or extra field.
std::vector<std::string> compareStates(const Case& c, const Json& oracle, const Json& faulted);

// Identity -> successful executions: each exec.log under `dir` (the experience and its
// nested experiences; .openexpertise excluded), plus the agent calls given.
std::map<std::string, int> readExecutions(const std::filesystem::path& dir,
                                          const std::map<std::string, int>& agent_calls);
// Identity -> the pid of the oe process each execution ran under (exec.log only; an execution
// that outlived its killed oe reports 1, or its subreaper).
std::map<std::string, std::vector<long>> executionsByProcess(const std::filesystem::path& dir);

struct ExecutionCheck {
  std::vector<std::string> problems;
  int re_executions = 0;  // executions beyond the oracle's, in all
};
// Every call the oracle executed ran at least once and at most `extra` more times (one per
// fault, more for a fault that makes a node retry); nothing ran that the oracle never ran.
ExecutionCheck checkExecutions(const std::map<std::string, int>& oracle,
                               const std::map<std::string, int>& faulted, int extra);

}  // namespace oe::crash

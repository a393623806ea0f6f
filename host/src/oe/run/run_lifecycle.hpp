// The run's lifecycle: set-up (prepare), the coordinator loop (execute), stopping early
// (cancelAll, stopForBudget) and the end (finishRun), whose status and counts are decided here.
#pragma once

#include "oe/common/json.hpp"
#include "oe/run/run.hpp"

namespace oe::run::engine {

// D6: success when no node failed, partial when some failed and some succeeded, else failed;
// D7: a run stopped early (fail_run, a signal, the budget) is failed whatever ran before.
[[nodiscard]] RunStatus decideStatus(bool stopped, bool any_success, bool any_failure);

// The fields run.finished carries besides the status: the node counts ("reused" only when
// --from/--only reused any) and the reason the run stopped early, if it did.
[[nodiscard]] Json finishedFields(const RunSummary& summary);

}  // namespace oe::run::engine

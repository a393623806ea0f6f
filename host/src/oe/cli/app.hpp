// The `oe` command line: parses argv and runs one command (one file per command in this folder).
#pragma once

#include <string_view>

namespace oe::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // the run failed or was partial, or a runtime error
inline constexpr int kExitUsage = 2;   // bad invocation
// The run parked on an approval (status waiting; docs/policy.md, "Approvals"): not a failure,
// nothing is held; `oe approve` / `oe reject` continue it. EX_TEMPFAIL of sysexits.h: "later".
inline constexpr int kExitWaiting = 75;

// `build_commit` is what `oe --version` prints after the version: `git describe --always
// --dirty` of the checkout it was built from, or "unknown" (cmake/OeBuildCommit.cmake).
int main(int argc, char** argv, std::string_view build_commit);

}  // namespace oe::cli

// The `oe` command line: parses argv and runs one command (one file per command in this folder).
#pragma once

namespace oe::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // the run failed or was partial, or a runtime error
inline constexpr int kExitUsage = 2;   // bad invocation

int main(int argc, char** argv);

}  // namespace oe::cli

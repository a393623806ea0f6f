// The `oe` executable: everything lives in oe_runtime; this only hands over argv and the git
// commit the binary was built from. The commit's generated header is included here and nowhere
// else, so a new commit recompiles this file and relinks `oe`, nothing more.
#include "oe/build_commit.hpp"
#include "oe/cli/app.hpp"

int main(int argc, char** argv) { return oe::cli::main(argc, argv, oe::kBuildCommit); }

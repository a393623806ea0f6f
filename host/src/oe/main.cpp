// The `oe` executable: everything lives in oe_runtime; this only hands over argv.
#include "oe/cli/app.hpp"

int main(int argc, char** argv) { return oe::cli::main(argc, argv); }

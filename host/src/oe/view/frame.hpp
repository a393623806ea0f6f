// The live view's frame: the dashboard as lines for a terminal of a given size. Pure, so what a
// user sees is unit tested without a terminal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oe/view/dashboard.hpp"

namespace oe::view {

struct FrameSize {
  size_t columns = 80;
  size_t rows = 24;
};

// At most rows-1 lines (the frame and the cursor's line fit on the screen, so moving up over it
// never scrolls), each at most columns-1 display columns (no line wraps, even on terminals that
// wrap at the last column). A header (run, status, elapsed time, nodes settled, tokens, cost);
// per phase group, its counts and a row per node (status, id, kind, for_each progress `k/n`,
// tokens, the latest activity or the error); and the most recent events. When the nodes do not
// fit, groups collapse to their counts plus their running and failed nodes, so the cost of a
// frame depends on the screen, not on the number of nodes.
[[nodiscard]] std::vector<std::string> renderFrame(const Dashboard& dashboard, FrameSize size,
                                                   int64_t elapsed_ms);

// "0.4s", "12.3s", "2m05s", "1h02m".
[[nodiscard]] std::string elapsedText(int64_t ms);

}  // namespace oe::view

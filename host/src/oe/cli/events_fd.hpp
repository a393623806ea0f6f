// The hidden --events-fd N of `oe run` and `oe resume`: what `oe mcp` reads of the child oe it
// started, as JSON lines on that fd, for its progress notifications (docs/mcp.md).
// The fd is not passed on to the programs the command starts.
#pragma once

#include <functional>

#include "oe/events/event.hpp"

namespace oe::cli {

// The run's start and end and each node's end, after `next`.
events::Listener eventsToFd(int fd, events::Listener next);

}  // namespace oe::cli

// The hidden --events-fd N of `oe run`, `oe resume` and `oe ultra`: what `oe mcp` reads of the
// child oe it started, as JSON lines on that fd, for its progress notifications (docs/mcp.md).
// The fd is not passed on to the programs the command starts.
#pragma once

#include <functional>

#include "oe/events/event.hpp"
#include "oe/ultra/ultra.hpp"

namespace oe::cli {

// The run's start and end and each node's end, after `next`.
events::Listener eventsToFd(int fd, events::Listener next);

// Each phase event as {"type": "ultra.phase", phase, status, round, duration_ms, detail}, after
// `next`.
std::function<void(const ultra::PhaseEvent&)> phasesToFd(
    int fd, std::function<void(const ultra::PhaseEvent&)> next);

}  // namespace oe::cli

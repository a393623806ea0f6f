// What `oe mcp` reads of a child oe (see events_fd.hpp).
#include "oe/cli/events_fd.hpp"

#include <fcntl.h>

#include <memory>

#include "oe/mcp/framing.hpp"

namespace oe::cli {

events::Listener eventsToFd(int fd, events::Listener next) {
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  return [next = std::move(next),
          out = std::make_shared<mcp::LineWriter>(fd)](const events::Event& event) {
    if (next) {
      next(event);
    }
    // Only what oe mcp reads crosses (the run's start and end, each node's end): the other
    // events of a node would cost a write each for nothing (docs/mcp.md). The log's own line
    // crosses, never parsed.
    const std::string_view name = event.type();
    if (name.starts_with("run.") || name == "node.finished" || name == "node.failed" ||
        name == "node.skipped") {
      out->writeLine(event.line());  // a reader gone away turns it off; the run goes on
    }
  };
}

std::function<void(const ultra::PhaseEvent&)> phasesToFd(
    int fd, std::function<void(const ultra::PhaseEvent&)> next) {
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  return [next = std::move(next),
          out = std::make_shared<mcp::LineWriter>(fd)](const ultra::PhaseEvent& e) {
    if (next) {
      next(e);
    }
    out->write(Json{{"type", "ultra.phase"},
                    {"phase", e.phase},
                    {"status", e.status},
                    {"round", e.round},
                    {"duration_ms", e.duration_ms},
                    {"detail", e.detail}});
  };
}

}  // namespace oe::cli

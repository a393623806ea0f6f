// The executable flavour: one process per call, the input object as JSON on stdin, the result
// as JSON on stdout, stderr kept for the error message (decision D13).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "cancel_token.hpp"
#include "expected.hpp"
#include "subprocess.hpp"
#include "tool_io.hpp"

namespace oe::tool {

struct ExecOutcome {
  std::string response;     // the normalised response JSON
  std::string stderr_tail;  // what the tool said on stderr (may be empty)
};

// Runs the executable `who.path` in `cwd` with `input` on stdin. On cancellation sends SIGTERM
// to the tool's process group, then SIGKILL after 2 s, and fails with OE_CANCELLED "cancelled".
// `sandbox`: it runs under oe-sandbox (a policy is in force for the node).
Expected<ExecOutcome> runExecutable(const ToolIdentity& who, const std::string& cwd,
                                    std::string_view input, CancelToken& token,
                                    const std::optional<SandboxSpec>& sandbox = std::nullopt);

}  // namespace oe::tool

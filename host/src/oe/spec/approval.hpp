// A human approval (docs/policy.md, "Approvals"): `approval:` on any node (asked before the node
// runs) and the built-in `approval` kind (a gate node whose keys are the same). The model and
// the one parser of its `timeout`; the run engine parks the run on it (src/oe/approvals).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"

namespace oe::spec {

// The kind name of the gate node.
inline constexpr std::string_view kApprovalKind = "approval";

// What a deadline that passes without a decision decides.
enum class OnTimeout : uint8_t { kFail, kApprove, kReject };

struct ApprovalSpec {
  std::string prompt;                 // what the person is asked; empty: "approve node <id>?"
  std::vector<std::string> show;      // `$.path` of the state, or `diff:<node>` (a worktree diff)
  std::optional<int64_t> timeout_ms;  // absent: the run waits for as long as it takes
  OnTimeout on_timeout = OnTimeout::kFail;
  bool gate = false;  // kind: approval (the node is the question) rather than `approval:` on it
};

// "90s", "30m", "2h", "7d": a positive integer and one unit. The error says what is accepted.
Result<int64_t> parseApprovalTimeout(std::string_view text);

// The approval of a node from its JSON: `approval:` (an object, or `true` for the defaults), or
// the node itself for kind approval. nullopt when the node asks none. Malformed values are the
// schema check's and the validator's to report; here they fall back to the defaults.
std::optional<ApprovalSpec> approvalOf(const Json& node);

[[nodiscard]] std::string_view toString(OnTimeout on_timeout);

}  // namespace oe::spec

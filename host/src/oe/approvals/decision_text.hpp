// What people read about approvals (`oe approve`, `oe runs --waiting`, the MCP tools): who
// decides, a question and a decision as one line each.
#pragma once

#include <string>
#include <string_view>

#include "oe/approvals/approval_store.hpp"

namespace oe::approvals {

// The person deciding: `as` (--as NAME) when given, else $USER, else the login name, else
// "unknown".
[[nodiscard]] std::string deciderName(std::string_view as);

// `node "review": Ship it? (asked 2026-..., deadline 2026-... then reject)`.
[[nodiscard]] std::string describeRequest(const Request& request);

// `approved by ana at 2026-...: looks good` (a passed deadline says so).
[[nodiscard]] std::string describeDecision(const Decision& decision);

}  // namespace oe::approvals

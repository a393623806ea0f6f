// The folder an invocation runs in when the host gave it one: `context.workdir` of the request,
// set for an attempt of a `workspace: worktree` node (the worktree's copy of the experience
// folder, docs/workspaces.md). Header-only; its users link nlohmann_json.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace oe::prockit {

// The host writes the context last, as `,"context":{"run_id":...}` with `"workdir"` among its
// members, so the last `,"context":{` of the request is the context (an unescaped `"` cannot
// occur inside a JSON string, and whatever comes before it ends before it). Only the context is
// parsed, not the whole request. nullopt without a workdir.
inline std::optional<std::string> callWorkdir(std::string_view request) {
  const size_t at = request.rfind(",\"context\":{");
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view context = request.substr(at + 11);
  if (context.find("\"workdir\":") == std::string_view::npos) {
    return std::nullopt;
  }
  // The context object ends where the request's closing brace begins.
  const size_t end = context.rfind('}');
  if (end == std::string_view::npos || end == 0) {
    return std::nullopt;
  }
  const auto parsed = nlohmann::json::parse(context.substr(0, end), nullptr, false);
  if (!parsed.is_object()) {
    return std::nullopt;
  }
  const auto workdir = parsed.find("workdir");
  if (workdir == parsed.end() || !workdir->is_string() || workdir->get<std::string>().empty()) {
    return std::nullopt;
  }
  return workdir->get<std::string>();
}

}  // namespace oe::prockit

// The `experience` kind's node fields, read once at create: the child file, the state scope, and
// the inputs/outputs mappings with their `$.path` values (docs/kinds-experience.md).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oe::experience {

using Json = nlohmann::json;

// One `$.a.b.0` path: its segments ("a", "b", "0"); `$` alone has none.
struct Path {
  std::string text;  // as written
  std::vector<std::string> segments;
};

// "$" or "$.a.b" (segments non-empty); anything else is not a path.
[[nodiscard]] std::optional<Path> parsePath(std::string_view text);

// The value at `path` in `root` (an object member, or an array index given as digits), or
// nullopt when a segment is missing.
[[nodiscard]] std::optional<Json> lookUp(const Json& root, const Path& path);

struct NodeSpec {
  std::string id;
  std::string impl;  // as written
  std::string scope = "isolated";
  // inputs: child run arg -> a $.path into the parent's state (read through `reads`), or a
  // literal value; outputs: a parent field (one of `writes`) -> a $.path into the child's
  // final state. Both in declaration order as the JSON has them (sorted keys).
  std::vector<std::pair<std::string, Json>> inputs;
  std::vector<std::pair<std::string, Path>> outputs;
};

// Reads and checks the node's fields from create's config ({"node": {...}}); the error says
// which field is wrong and what to write instead.
struct SpecOrError {
  std::optional<NodeSpec> spec;
  std::string error;
};
[[nodiscard]] SpecOrError readNodeSpec(const Json& node);

// The child run's args: the node's bundle args, then `inputs` resolved against the bundle's
// state_view (a later one wins per key). An input whose path names nothing is left out.
[[nodiscard]] Json childArgs(const NodeSpec& spec, const Json& bundle_args, const Json& state_view);

// The parent's state_delta from `outputs` over the child's final state; `missing` gets the
// mappings whose path named nothing (those fields are not written).
[[nodiscard]] Json outputDelta(const NodeSpec& spec, const Json& final_state,
                               std::vector<std::string>& missing);

}  // namespace oe::experience

// What crosses between the host and a tool: the one input object a tool receives, and the
// response built from what the tool returned (the same rules and messages for every flavour).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "expected.hpp"

namespace oe::tool {

// Insertion-ordered, so a tool sees its args in the order the host sent them, as upstream does.
using Json = nlohmann::ordered_json;

enum class Flavour { kNodeModule, kExecutable, kNative };

// Names a tool node in messages.
struct ToolIdentity {
  std::string id;    // node id
  std::string impl;  // `impl:` as written in experience.yaml
  std::string path;  // absolute, normalised
};

// The upstream call signature: {...args, "_edge_inputs": edge_inputs, "_state": state_view},
// built from the invocation request, as compact JSON text (no raw newlines).
Expected<std::string> buildToolInput(std::string_view request_json, const ToolIdentity& who);

// Parses what an executable printed or a native tool wrote.
Expected<Json> parseToolOutput(std::string_view text, const ToolIdentity& who, Flavour flavour);

// {"state_delta": {...}, "edge_output"? (if present), "metrics"? (if truthy)} from a tool result.
Expected<std::string> toResponse(Json result, const ToolIdentity& who, Flavour flavour);

// The first `limit` bytes of text, cut on a UTF-8 boundary, with "..." when cut.
std::string preview(std::string_view text, size_t limit);

}  // namespace oe::tool

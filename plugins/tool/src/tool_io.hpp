// What crosses between the host and a tool: the one input object a tool receives, and the
// response built from what the tool returned (the same rules and messages for every flavour).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
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
// built from the invocation request, as compact JSON text (no raw newlines). A request in the
// host's canonical compact form is spliced as text; anything else goes through
// buildToolInputParsed, which gives the same text (tests/tool_io_test.cpp holds them equal).
Expected<std::string> buildToolInput(std::string_view request_json, const ToolIdentity& who);
// The general path: parse the request, build the input object, dump it.
Expected<std::string> buildToolInputParsed(std::string_view request_json, const ToolIdentity& who);

// What a node's creation needs from the host's configuration
// {"experience_dir": "...", "node": {... "id": "...", "impl": "..." ...}}.
struct NodeConfig {
  std::string experience_dir;  // empty when absent
  std::string id;              // empty when absent
  std::string impl;            // never empty
};
// Reads it by scanning the text (the host creates one node per graph node, and parsing the
// whole spec into a DOM cost more than a native tool's call). nullopt whenever the text is not
// in the host's canonical form or a needed string has an escape: the caller then parses it,
// which also words the errors.
std::optional<NodeConfig> scanNodeConfig(std::string_view config_json);

// Parses what an executable printed or a native tool wrote.
Expected<Json> parseToolOutput(std::string_view text, const ToolIdentity& who, Flavour flavour);

// {"state_delta": {...}, "edge_output"? (if present), "metrics"? (if truthy)} from a tool result.
Expected<std::string> toResponse(Json result, const ToolIdentity& who, Flavour flavour);

// The first `limit` bytes of text, cut on a UTF-8 boundary, with "..." when cut.
std::string preview(std::string_view text, size_t limit);

}  // namespace oe::tool

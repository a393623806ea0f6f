// The LLM service's stand-in mode (Settings::stand_in, `oe ultra`'s smoke run): every oe.llm/1
// call is answered with the smallest instance of the request's tool schema, and every coding
// CLI run (oe.cli-replay/1-draft) with an outcome that exits 0, so a draft experience runs end to
// end with no provider, key, network or CLI. What it proves is the wiring (schemas, writes,
// edges, for_each sources, `when`), not what a model would say.
#pragma once

#include <string>
#include <string_view>

#include "oe/common/json.hpp"

namespace oe::llm {

// The smallest value `schema` (JSON Schema, the subset structured outputs use) accepts: const,
// the first enum value, the first branch of anyOf/oneOf, allOf merged, local $refs followed; an
// object with its required properties (all its properties when none is required, so a writes
// mapping gets every field); an array of minItems items; a string of minLength 'x's; a number at
// its minimum. A schema with no type gives null.
[[nodiscard]] Json standInInstance(const Json& schema);

// The oe.llm/1 response to `request`: a structured_output-style call of the first tool with a
// stand-in of its input_schema, or, without tools, a short text. Usage is zero.
[[nodiscard]] Json standInResponse(const Json& request);

// The outcome of a coding CLI run that was never started: exit code 0 and `stdout_text`.
[[nodiscard]] Json standInCliOutcome(std::string_view stdout_text);

// What the stand-in CLI prints for a cli-agent node (its spec as JSON): text mode, a short
// text; `output_format: json`, the stand-in of its `schema`, else an object with each `writes`
// field null.
[[nodiscard]] std::string standInCliStdout(const Json& node_spec);

}  // namespace oe::llm

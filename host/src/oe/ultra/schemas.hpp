// The structured outputs of `oe ultra`'s four LLM phases (reference §8.2): the JSON Schemas the
// structured_output tool carries, and that each answer is checked against before it is used.
#pragma once

#include "oe/common/json.hpp"

namespace oe::ultra {

// {name, description, domain?, phases[{id, title?}], state_fields[{name, type, merge?,
// description?}], node_sketches[{id, kind, phase?, purpose, fan_out_over?}], open_questions?}
[[nodiscard]] const Json& analysisSchema();
// {experience_yaml, files[{path, content}], next_steps?[]}: synthesize and revise.
[[nodiscard]] const Json& synthesisSchema();
// {score, findings[{dimension, severity, anchor{node_id?, state_field?, file_path?}, evidence,
// fix}]}
[[nodiscard]] const Json& critiqueSchema();

}  // namespace oe::ultra

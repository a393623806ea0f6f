// The JSON Schema (draft-07) of an experience.yaml's structure, as `oe schema` prints it.
// Node kind fields (impl, prompt, ...) are not part of it: each kind's plugin supplies them.
#pragma once

#include "oe/common/json.hpp"

namespace oe::spec {

// The structure as reconstructed in reference §1.3-1.7, plus oe's additions: `timeout_ms` on
// every node, `runtime.deterministic` (D16), `state.store` honoured (D14), any node kind string.
[[nodiscard]] Json experienceJsonSchema();

// The same schema as the loader checks it: `on_error` is left to a dedicated check that gives
// one clear message instead of the three failed `oneOf` branches.
[[nodiscard]] Json experienceValidationSchema();

}  // namespace oe::spec

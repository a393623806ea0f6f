// The JSON Schema of experience.yaml for editors (`oe schema`): the structure oe checks plus the
// fields of every loaded node kind, selected by a node's `kind`.
#pragma once

#include "oe/common/json.hpp"
#include "oe/spec/validate.hpp"

namespace oe::spec {

// experienceJsonSchema() with, per kind of `kinds` that has a valid schema, an `allOf` entry of
// the node definition: `if` its kind is that kind, `then` the kind's schema, as `oe validate`
// checks it (a closed kind schema still allows the common fields; its local `$ref`s are
// rewritten to where it now sits; the x-oe-* annotations are kept, JSON Schema validators ignore
// them). `kind` is one of the loaded kinds (an `enum`, so an editor flags `kind: tooool`), or with
// `open_kinds` any non-empty string with the loaded kinds as its `examples`. No kinds loaded at
// all leaves it open either way.
// What `oe validate` only warns about is accepted, so an editor flags what validate refuses by
// default: `on_error` is open to unknown keys here, as nodes are.
[[nodiscard]] Json editorJsonSchema(const KindCatalog& kinds, bool open_kinds = false);

}  // namespace oe::spec

// `{{placeholder}}` prompt interpolation (reference §2.1) with oe's superset (D3): dotted paths
// `{{a.b.c}}` and the injected `$item`, `$index`, `$iter`, `$loop`, `$pipeline` keys.
#pragma once

#include <string>
#include <string_view>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"

namespace oe::expr {

// Replaces every `{{ key }}` in `tmpl` (key: `[$]ident(.segment)*`, whitespace allowed inside
// the braces) with the value found in `values` (an object: `values["$item"]["id"]` for
// `{{$item.id}}`). Strings are inserted verbatim, anything else as compact JSON. A key with no
// value: strict -> error `Prompt placeholder "{{<key>}}" has no value in the input bundle`;
// non-strict -> the placeholder stays as written. Every dispatcher uses non-strict.
[[nodiscard]] Result<std::string> interpolate(std::string_view tmpl, const Json& values,
                                              bool strict);

}  // namespace oe::expr

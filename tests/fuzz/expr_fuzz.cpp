// libFuzzer target: the expression languages (when/until conditions, `$.path`, args templates,
// `{{...}}` prompts, JS value semantics). Input: the expression on the first line, then an
// optional JSON state object (a fixed one when it is absent or not an object).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "oe/expr/args_template.hpp"
#include "oe/expr/condition.hpp"
#include "oe/expr/interpolate.hpp"
#include "oe/expr/js_value.hpp"
#include "oe/expr/state_path.hpp"

namespace {

using oe::Json;

// Every JSON type, nested, plus the keys prompt interpolation injects.
Json makeDefaultState() {
  return Json::parse(R"({
    "count": 3, "ratio": 0.5, "neg": -1e300, "big": 18446744073709551615, "name": "alice",
    "empty": "", "utf": "h\u00e9llo \ud83d\ude00", "items": [1, "2", [3], {"k": null}],
    "flag": true, "nul": null, "obj": {"a": {"b": {"c": [true, false]}}, "length": 7},
    "$item": {"id": 1}, "$index": 0, "$iter": 2, "$loop": {"i": 1}, "$pipeline": "p"})");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Json kDefaultState = makeDefaultState();
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string_view expr = input.substr(0, newline);
  Json parsed_state;
  if (newline != std::string_view::npos) {
    parsed_state = Json::parse(input.substr(newline + 1), nullptr, /*allow_exceptions=*/false);
  }
  const Json& state = parsed_state.is_object() ? parsed_state : kDefaultState;
  const oe::expr::JsonStateReader reader(state);

  if (auto condition = oe::expr::Condition::compile(expr); condition.ok()) {
    const Json value = condition->evaluate(reader);
    if (!value.is_discarded()) {
      (void)oe::expr::stringify(value);
      (void)oe::expr::toJsString(value);
      (void)oe::expr::truthy(value);
    }
    (void)condition->test(reader);
  }

  (void)oe::expr::StatePath::looksLikePath(expr);
  if (auto path = oe::expr::StatePath::parse(expr)) {
    (void)path->resolve(reader);
    (void)path->lookup(reader);
  }

  for (const bool strict : {false, true}) {
    (void)oe::expr::interpolate(expr, state, strict);
  }

  // The expression as an args leaf, and every string of the state as one (`$.x` leaves resolve
  // against the same state).
  const Json args = {{"leaf", expr}, {"list", Json::array({std::string(expr), "$.count"})}};
  (void)oe::expr::ArgsTemplate::compile(args).resolve(reader);
  (void)oe::expr::ArgsTemplate::compile(state).resolve(reader);

  (void)oe::expr::utf16Length(expr);
  (void)oe::expr::numberToString(oe::expr::stringToNumber(expr));
  (void)oe::expr::numberToString(oe::expr::toNumber(state));
  return 0;
}

// The JSON type used across the host. nlohmann's default object is a sorted std::map, which
// makes dump() canonical (cache keys rely on this).
#pragma once

#include <nlohmann/json.hpp>

namespace oe {
using Json = nlohmann::json;
}  // namespace oe

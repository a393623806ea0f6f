// The SDK's Expected<T> (oe/cpp/expected.hpp), under this plugin's namespace.
#pragma once

#include <oe/cpp/expected.hpp>

namespace oe::tool {
using sdk::Expected;
using sdk::fail;
using sdk::Failure;
}  // namespace oe::tool

// The shared CancelToken (oe_proc_kit: proc_kit/cancel_token.hpp) under this plugin's namespace.
#pragma once

#include "proc_kit/cancel_token.hpp"

namespace oe::tool {
using prockit::CancelToken;
}  // namespace oe::tool

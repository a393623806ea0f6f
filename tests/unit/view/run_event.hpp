// A run event as the live view receives it, for the view's tests.
#pragma once

#include <string>

#include "oe/common/json.hpp"

namespace oe::view::test {

// {type, run_id, node_id (when given), ...extra}.
inline Json runEvent(std::string type, std::string node = {}, Json extra = Json::object(),
                     std::string run_id = "0123456789abcdef") {
  Json e = {{"type", std::move(type)}, {"run_id", std::move(run_id)}};
  if (!node.empty()) {
    e["node_id"] = std::move(node);
  }
  e.update(extra);
  return e;
}

}  // namespace oe::view::test
